//go:build linux && amd64

package linuxabi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ptilab/ptilab/linuxabi"
)

// TestSyscallNumbers64 compares every x86-64 number with x/sys/unix's
// for linux/amd64, which it generates from the kernel's headers.
func TestSyscallNumbers64(t *testing.T) {
	ours := linuxNames(constants(t, sys64Name))
	for name := range ours {
		if sysIA32Name.MatchString(name) {
			delete(ours, name)
		}
	}
	compare(t, ours, map[string]uint64{
		"SYS_read": unix.SYS_READ, "SYS_write": unix.SYS_WRITE, "SYS_close": unix.SYS_CLOSE,
		"SYS_fstat": unix.SYS_FSTAT, "SYS_lseek": unix.SYS_LSEEK, "SYS_mmap": unix.SYS_MMAP,
		"SYS_mprotect": unix.SYS_MPROTECT, "SYS_munmap": unix.SYS_MUNMAP,
		"SYS_rt_sigaction": unix.SYS_RT_SIGACTION, "SYS_rt_sigprocmask": unix.SYS_RT_SIGPROCMASK,
		"SYS_pread64": unix.SYS_PREAD64, "SYS_pwrite64": unix.SYS_PWRITE64,
		"SYS_sched_yield": unix.SYS_SCHED_YIELD, "SYS_madvise": unix.SYS_MADVISE,
		"SYS_nanosleep": unix.SYS_NANOSLEEP, "SYS_getpid": unix.SYS_GETPID, "SYS_socketpair": unix.SYS_SOCKETPAIR, "SYS_clone": unix.SYS_CLONE,
		"SYS_exit": unix.SYS_EXIT, "SYS_kill": unix.SYS_KILL, "SYS_uname": unix.SYS_UNAME,
		"SYS_fcntl": unix.SYS_FCNTL, "SYS_fsync": unix.SYS_FSYNC, "SYS_mkdirat": unix.SYS_MKDIRAT, "SYS_getppid": unix.SYS_GETPPID, "SYS_sigaltstack": unix.SYS_SIGALTSTACK,
		"SYS_prctl": unix.SYS_PRCTL, "SYS_arch_prctl": unix.SYS_ARCH_PRCTL, "SYS_gettid": unix.SYS_GETTID,
		"SYS_tkill": unix.SYS_TKILL, "SYS_futex": unix.SYS_FUTEX,
		"SYS_sched_getaffinity": unix.SYS_SCHED_GETAFFINITY, "SYS_clock_gettime": unix.SYS_CLOCK_GETTIME,
		"SYS_clock_getres": unix.SYS_CLOCK_GETRES, "SYS_exit_group": unix.SYS_EXIT_GROUP,
		"SYS_epoll_ctl": unix.SYS_EPOLL_CTL, "SYS_tgkill": unix.SYS_TGKILL, "SYS_openat": unix.SYS_OPENAT,
		"SYS_newfstatat": unix.SYS_NEWFSTATAT, "SYS_epoll_pwait": unix.SYS_EPOLL_PWAIT,
		"SYS_eventfd2": unix.SYS_EVENTFD2, "SYS_epoll_create1": unix.SYS_EPOLL_CREATE1,
		"SYS_prlimit64": unix.SYS_PRLIMIT64, "SYS_getrandom": unix.SYS_GETRANDOM,
	})
	// ptilab's numbers: the Linux call each shadows, or none.
	assert.Equal(t, uint64(unix.SYS_RT_SIGPENDING), uint64(linuxabi.SYS_ptilab_work))
	assert.Equal(t, uint64(unix.SYS_CAPGET), uint64(linuxabi.SYS_ptilab_touch))
	assert.Equal(t, uint64(unix.SYS_GETSID), uint64(linuxabi.SYS_ptilab_secret))
	assert.Greater(t, uint64(linuxabi.SYS_ptilab_fault), uint64(unix.SYS_MAP_SHADOW_STACK+1000), "outside Linux's table")
}

// TestErrno64 compares every errno value with x/sys/unix's for
// linux/amd64.
func TestErrno64(t *testing.T) { compareErrno(t) }

// TestPtRegs64 compares PtRegs with ptrace's struct user_regs_struct
// (x/sys/unix.PtraceRegs for linux/amd64): the same 21 words in the same
// order, which that struct follows with six more (fs_base, gs_base, ds,
// es, fs, gs) that pt_regs does not hold.
func TestPtRegs64(t *testing.T) {
	ours := reflect.TypeOf(linuxabi.PtRegs{})
	theirs := reflect.TypeOf(unix.PtraceRegs{})
	assert.Equal(t, fields(theirs, ours.NumField()), fields(ours, ours.NumField()))
	assert.Equal(t, []field{{"fsbase", 168}, {"gsbase", 176}, {"ds", 184}, {"es", 192}, {"fs", 200}, {"gs", 208}},
		fields(theirs, theirs.NumField())[ours.NumField():], "what user_regs_struct adds")
	assert.Equal(t, unsafe.Offsetof(unix.PtraceRegs{}.Fs_base), unsafe.Sizeof(linuxabi.PtRegs{}))
	assert.Equal(t, "orig_ax", fields(ours, ours.NumField())[15].Name)
}

// TestSysnamesGenerated checks that sysnames64.go is what mksysnames.go
// writes from the golang.org/x/sys in go.mod.
func TestSysnamesGenerated(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sysnames.go")
	cmd := exec.Command("go", "run", "mksysnames.go", "-o", out)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	got, err := os.ReadFile("sysnames64.go")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "run `go generate ./linuxabi`")
}
