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
	compare(t, constants(t, errnoName), map[string]uint64{
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
