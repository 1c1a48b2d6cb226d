//go:build linux && 386

package linuxabi_test

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"

	"github.com/ptilab/ptilab/linuxabi"
)

// TestSyscallNumbers32 compares every i386 number with x/sys/unix's for
// linux/386: SYS_ia32_x is unix.SYS_X.
func TestSyscallNumbers32(t *testing.T) {
	compare(t, linuxNames(constants(t, sysIA32Name)), map[string]uint64{
		"SYS_ia32_exit": unix.SYS_EXIT, "SYS_ia32_read": unix.SYS_READ, "SYS_ia32_write": unix.SYS_WRITE,
		"SYS_ia32_close": unix.SYS_CLOSE, "SYS_ia32_lseek": unix.SYS_LSEEK, "SYS_ia32_getppid": unix.SYS_GETPPID,
		"SYS_ia32_sched_yield": unix.SYS_SCHED_YIELD, "SYS_ia32_socketpair": unix.SYS_SOCKETPAIR,
	})
	assert.Equal(t, uint64(102), uint64(unix.SYS_SOCKETCALL), "the multiplexer socketpair replaces")
	// ptilab's numbers: the Linux call each shadows.
	assert.Equal(t, uint64(unix.SYS_CREATE_MODULE), uint64(linuxabi.SYS_ia32_ptilab_work))
	assert.Equal(t, uint64(unix.SYS_SIGPROCMASK), uint64(linuxabi.SYS_ia32_ptilab_kernel_fault))
	assert.Equal(t, uint64(unix.SYS_MPROTECT), uint64(linuxabi.SYS_ia32_ptilab_kernel_double_fault))
	assert.Equal(t, uint64(unix.SYS_ADJTIMEX), uint64(linuxabi.SYS_ia32_ptilab_sample))
}

// TestErrno32 compares every errno value with x/sys/unix's for
// linux/386.
func TestErrno32(t *testing.T) { compareErrno(t) }

// TestPtRegs32 compares PtRegs32 with ptrace's struct user_regs_struct
// (x/sys/unix.PtraceRegs for linux/386), which on i386 is pt_regs word for
// word.
func TestPtRegs32(t *testing.T) {
	ours := reflect.TypeOf(linuxabi.PtRegs32{})
	theirs := reflect.TypeOf(unix.PtraceRegs{})
	assert.Equal(t, theirs.NumField(), ours.NumField())
	assert.Equal(t, fields(theirs, theirs.NumField()), fields(ours, ours.NumField()))
	assert.Equal(t, unsafe.Sizeof(unix.PtraceRegs{}), unsafe.Sizeof(linuxabi.PtRegs32{}))
	assert.Equal(t, "orig_ax", fields(ours, ours.NumField())[11].Name)
}
