package timed

import (
	"os"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// getppid is the system call's number in the build's ABI (64 on i386,
// 110 on x86-64).
var getppid = uintptr(syscall.SYS_GETPPID)

func TestNativeGetppid(t *testing.T) {
	cycles, ret, err := Syscalls(Native, 0, getppid, 0, 0, 0, 1000)
	require.NoError(t, err)
	assert.Equal(t, uintptr(os.Getppid()), ret, "the last call's return value is the parent's pid")
	empty, nr, err := Syscalls(Empty, 0, getppid, 0, 0, 0, 1000)
	require.NoError(t, err)
	assert.Equal(t, getppid, nr, "the empty loop makes no call: RAX/EAX keeps the number")
	assert.Greater(t, cycles, empty, "a thousand system calls take longer than the empty loop")
}

func TestErrno(t *testing.T) {
	// lseek on a closed descriptor: -EBADF, as the kernel returns it.
	_, ret, err := Syscalls(Native, 0, uintptr(syscall.SYS_LSEEK), ^uintptr(0), 0, 0, 3)
	require.NoError(t, err)
	assert.Equal(t, -int(syscall.EBADF), int(ret))
}

func TestEntries(t *testing.T) {
	_, _, err := Syscalls(Native, 0, getppid, 0, 0, 0, 0)
	assert.ErrorIs(t, err, ErrNoEntry, "n = 0")
	_, _, err = Syscalls(Vsyscall, 0, getppid, 0, 0, 0, 1)
	assert.ErrorIs(t, err, ErrNoEntry, "no __kernel_vsyscall address")
	fn, err := KernelVsyscall()
	if runtime.GOARCH == "amd64" {
		assert.Error(t, err, "a 64-bit process has no AT_SYSINFO")
		_, _, err = Syscalls(Vsyscall, 1, getppid, 0, 0, 0, 1)
		assert.ErrorIs(t, err, ErrNoEntry, "the amd64 build has no SYSENTER entry")
		return
	}
	require.NoError(t, err)
	_, ret, err := Syscalls(Vsyscall, fn, getppid, 0, 0, 0, 100)
	require.NoError(t, err)
	assert.Equal(t, uintptr(os.Getppid()), ret, "getppid through __kernel_vsyscall")
}
