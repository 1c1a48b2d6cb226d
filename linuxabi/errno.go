package linuxabi

// Errno values ptilab's kernels return, negated, as Linux's system calls
// do: include/uapi/asm-generic/errno-base.h (1-34) and
// include/uapi/asm-generic/errno.h (the rest), which x86-64 and i386
// share.
const (
	EPERM           = 1
	ENOENT          = 2
	EINTR           = 4
	EIO             = 5
	EBADF           = 9
	EAGAIN          = 11
	ENOMEM          = 12
	EFAULT          = 14
	EEXIST          = 17
	ENODEV          = 19
	ENOTDIR         = 20
	EISDIR          = 21
	EINVAL          = 22
	ENFILE          = 23
	EMFILE          = 24
	ENOSPC          = 28
	ESPIPE          = 29
	EROFS           = 30
	EPIPE           = 32
	ERANGE          = 34
	ENOSYS          = 38
	EPROTONOSUPPORT = 93
	ESOCKTNOSUPPORT = 94
	EAFNOSUPPORT    = 97
	ETIMEDOUT       = 110
)
