// Flags, commands and values of the Linux system calls goos answers
// for the Go runtime (x86-64; the same on i386 but where said), beside
// the system-call numbers. TestFlags compares them with
// golang.org/x/sys/unix.

package linuxabi

// Auxiliary-vector keys (include/uapi/linux/auxvec.h).
const (
	AT_NULL   = 0
	AT_PAGESZ = 6
	AT_UID    = 11
	AT_EUID   = 12
	AT_GID    = 13
	AT_EGID   = 14
	AT_HWCAP  = 16
	AT_CLKTCK = 17
	AT_SECURE = 23
	AT_RANDOM = 25
)

// open flags (include/uapi/asm-generic/fcntl.h).
const (
	O_ACCMODE   = 0x3
	O_RDONLY    = 0x0
	O_WRONLY    = 0x1
	O_RDWR      = 0x2
	O_CREAT     = 0x40
	O_EXCL      = 0x80
	O_TRUNC     = 0x200
	O_APPEND    = 0x400
	O_NONBLOCK  = 0x800
	O_DIRECTORY = 0x10000
	O_CLOEXEC   = 0x80000
)

// lseek whence values (include/uapi/linux/fs.h).
const (
	SEEK_SET = 0
	SEEK_CUR = 1
	SEEK_END = 2
)

// fcntl commands and descriptor flags (include/uapi/asm-generic/fcntl.h).
const (
	F_DUPFD         = 0
	F_GETFD         = 1
	F_SETFD         = 2
	F_GETFL         = 3
	F_SETFL         = 4
	F_DUPFD_CLOEXEC = 1030
	FD_CLOEXEC      = 1
)

// File types of struct stat's st_mode (include/uapi/linux/stat.h).
const (
	S_IFCHR = 0o020000
	S_IFDIR = 0o040000
	S_IFREG = 0o100000
)

// eventfd and epoll (include/uapi/linux/eventpoll.h).
const (
	EFD_NONBLOCK  = O_NONBLOCK
	EPOLL_CTL_ADD = 1
	EPOLL_CTL_DEL = 2
	EPOLL_CTL_MOD = 3
	EPOLLIN       = 0x1
)

// madvise advice values (include/uapi/asm-generic/mman-common.h).
const (
	MADV_DONTNEED = 4
	MADV_FREE     = 8
)

// clone flags (include/uapi/linux/sched.h).
const (
	CLONE_VM     = 0x100
	CLONE_THREAD = 0x10000
	CLONE_SETTLS = 0x80000
)

// rt_sigprocmask how values (include/uapi/asm-generic/signal-defs.h).
const (
	SIG_BLOCK   = 0
	SIG_UNBLOCK = 1
	SIG_SETMASK = 2
)

// prctl options the Go runtime uses (include/uapi/linux/prctl.h).
const (
	PR_SET_NAME = 15
	PR_SET_VMA  = 0x53564d41
)

// arch_prctl codes (arch/x86/include/uapi/asm/prctl.h).
const (
	ARCH_SET_FS = 0x1002
	ARCH_GET_FS = 0x1003
)

// futex operations (include/uapi/linux/futex.h).
const (
	FUTEX_WAIT           = 0
	FUTEX_WAKE           = 1
	FUTEX_PRIVATE_FLAG   = 128
	FUTEX_CLOCK_REALTIME = 256
)

// Resource limits (include/uapi/asm-generic/resource.h).
const (
	RLIMIT_STACK  = 3
	RLIMIT_NOFILE = 7
)

// Clock ids (include/uapi/linux/time.h).
const (
	CLOCK_REALTIME           = 0
	CLOCK_MONOTONIC          = 1
	CLOCK_PROCESS_CPUTIME_ID = 2
	CLOCK_THREAD_CPUTIME_ID  = 3
	CLOCK_MONOTONIC_RAW      = 4
	CLOCK_REALTIME_COARSE    = 5
	CLOCK_MONOTONIC_COARSE   = 6
	CLOCK_BOOTTIME           = 7
	CLOCK_TAI                = 11
)

// Memory protections and mmap flags (include/uapi/asm-generic/mman*.h).
const (
	PROT_NONE  = 0x0
	PROT_READ  = 0x1
	PROT_WRITE = 0x2
	PROT_EXEC  = 0x4

	MAP_SHARED          = 0x01
	MAP_PRIVATE         = 0x02
	MAP_FIXED           = 0x10
	MAP_ANONYMOUS       = 0x20
	MAP_NORESERVE       = 0x4000
	MAP_FIXED_NOREPLACE = 0x100000
)
