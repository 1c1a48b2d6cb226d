//go:build linux

package linuxabi_test

import (
	"regexp"
	"testing"

	"golang.org/x/sys/unix"
)

// compareErrno compares every errno value with x/sys/unix's for the GOARCH
// under test.
func compareErrno(t *testing.T) {
	errnos := constants(t, errnoName)
	delete(errnos, "EPOLLIN") // epoll's event bit (TestFlags), not an errno
	compare(t, errnos, map[string]uint64{
		"EPERM": uint64(unix.EPERM), "ENOENT": uint64(unix.ENOENT), "EINTR": uint64(unix.EINTR),
		"EIO": uint64(unix.EIO), "EBADF": uint64(unix.EBADF), "EAGAIN": uint64(unix.EAGAIN),
		"ENOMEM": uint64(unix.ENOMEM), "EFAULT": uint64(unix.EFAULT), "EEXIST": uint64(unix.EEXIST),
		"ENODEV": uint64(unix.ENODEV), "ENOTDIR": uint64(unix.ENOTDIR), "EISDIR": uint64(unix.EISDIR),
		"EINVAL": uint64(unix.EINVAL), "EMFILE": uint64(unix.EMFILE), "ENOSPC": uint64(unix.ENOSPC),
		"ESPIPE": uint64(unix.ESPIPE), "EROFS": uint64(unix.EROFS), "EPIPE": uint64(unix.EPIPE),
		"ERANGE": uint64(unix.ERANGE), "ENOSYS": uint64(unix.ENOSYS), "ETIMEDOUT": uint64(unix.ETIMEDOUT),
		"ENFILE": uint64(unix.ENFILE), "EPROTONOSUPPORT": uint64(unix.EPROTONOSUPPORT),
		"ESOCKTNOSUPPORT": uint64(unix.ESOCKTNOSUPPORT), "EAFNOSUPPORT": uint64(unix.EAFNOSUPPORT),
	})
}

// TestSocketConstants compares socketpair's constants with x/sys/unix's.
func TestSocketConstants(t *testing.T) {
	compare(t, constants(t, regexp.MustCompile(`^(AF|SOCK)_`)), map[string]uint64{
		"AF_UNIX": unix.AF_UNIX, "SOCK_STREAM": unix.SOCK_STREAM, "SOCK_NONBLOCK": unix.SOCK_NONBLOCK,
		"SOCK_CLOEXEC": unix.SOCK_CLOEXEC, "SOCK_TYPE_MASK": 0xf,
	})
}

// TestFlags compares the system calls' flags, commands and values with
// x/sys/unix's, for the GOARCH under test. The auxiliary-vector keys
// (AT_), arch_prctl codes (ARCH_) and futex operations (FUTEX_) have no
// x/sys counterpart: their values are the headers' named beside them.
func TestFlags(t *testing.T) {
	compare(t, constants(t, regexp.MustCompile(`^(O|SEEK|F|FD|EFD|EPOLL|MADV|CLONE|SIG|PR|RLIMIT|CLOCK|PROT|MAP)_|^S_IF|^EPOLLIN$`)), map[string]uint64{
		"O_ACCMODE": unix.O_ACCMODE, "O_RDONLY": unix.O_RDONLY, "O_WRONLY": unix.O_WRONLY, "O_RDWR": unix.O_RDWR,
		"O_CREAT": unix.O_CREAT, "O_EXCL": unix.O_EXCL, "O_TRUNC": unix.O_TRUNC, "O_APPEND": unix.O_APPEND,
		"O_NONBLOCK": unix.O_NONBLOCK, "O_DIRECTORY": unix.O_DIRECTORY, "O_CLOEXEC": unix.O_CLOEXEC,
		"SEEK_SET": unix.SEEK_SET, "SEEK_CUR": unix.SEEK_CUR, "SEEK_END": unix.SEEK_END,
		"F_DUPFD": unix.F_DUPFD, "F_GETFD": unix.F_GETFD, "F_SETFD": unix.F_SETFD, "F_GETFL": unix.F_GETFL,
		"F_SETFL": unix.F_SETFL, "F_DUPFD_CLOEXEC": unix.F_DUPFD_CLOEXEC, "FD_CLOEXEC": unix.FD_CLOEXEC,
		"S_IFCHR": unix.S_IFCHR, "S_IFDIR": unix.S_IFDIR, "S_IFREG": unix.S_IFREG,
		"EFD_NONBLOCK": unix.EFD_NONBLOCK, "EPOLL_CTL_ADD": unix.EPOLL_CTL_ADD, "EPOLL_CTL_DEL": unix.EPOLL_CTL_DEL,
		"EPOLL_CTL_MOD": unix.EPOLL_CTL_MOD, "EPOLLIN": unix.EPOLLIN,
		"MADV_DONTNEED": unix.MADV_DONTNEED, "MADV_FREE": unix.MADV_FREE,
		"CLONE_VM": unix.CLONE_VM, "CLONE_THREAD": unix.CLONE_THREAD, "CLONE_SETTLS": unix.CLONE_SETTLS,
		"SIG_BLOCK": unix.SIG_BLOCK, "SIG_UNBLOCK": unix.SIG_UNBLOCK, "SIG_SETMASK": unix.SIG_SETMASK,
		"PR_SET_NAME": unix.PR_SET_NAME, "PR_SET_VMA": unix.PR_SET_VMA,
		"RLIMIT_STACK": unix.RLIMIT_STACK, "RLIMIT_NOFILE": unix.RLIMIT_NOFILE,
		"CLOCK_REALTIME": unix.CLOCK_REALTIME, "CLOCK_MONOTONIC": unix.CLOCK_MONOTONIC,
		"CLOCK_PROCESS_CPUTIME_ID": unix.CLOCK_PROCESS_CPUTIME_ID, "CLOCK_THREAD_CPUTIME_ID": unix.CLOCK_THREAD_CPUTIME_ID,
		"CLOCK_MONOTONIC_RAW": unix.CLOCK_MONOTONIC_RAW, "CLOCK_REALTIME_COARSE": unix.CLOCK_REALTIME_COARSE,
		"CLOCK_MONOTONIC_COARSE": unix.CLOCK_MONOTONIC_COARSE, "CLOCK_BOOTTIME": unix.CLOCK_BOOTTIME, "CLOCK_TAI": unix.CLOCK_TAI,
		"PROT_NONE": unix.PROT_NONE, "PROT_READ": unix.PROT_READ, "PROT_WRITE": unix.PROT_WRITE, "PROT_EXEC": unix.PROT_EXEC,
		"MAP_SHARED": unix.MAP_SHARED, "MAP_PRIVATE": unix.MAP_PRIVATE, "MAP_FIXED": unix.MAP_FIXED,
		"MAP_ANONYMOUS": unix.MAP_ANONYMOUS, "MAP_NORESERVE": unix.MAP_NORESERVE, "MAP_FIXED_NOREPLACE": unix.MAP_FIXED_NOREPLACE,
	})
}
