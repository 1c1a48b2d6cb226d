// Package linuxabi is the part of the Linux ABI that ptilab speaks: the
// x86-64 and i386 system-call numbers it answers or issues, the errno
// values it returns, and both struct pt_regs layouts its trampolines
// build. Its values are Linux's; a test compares them with
// golang.org/x/sys/unix built for linux/amd64 and, under GOARCH=386, for
// linux/386.
//
// It imports nothing but unsafe, so that every side can use it: the Go
// runtime's personality (goos), the ring-3 tasks' kernel (tasks), the PTI
// trampolines (pti, through go_asm.h) and the 32-bit kernel built for
// GOARCH=386 (i386pae/kernel32 and its contract with the 64-bit side,
// i386pae/layout).
//
// Names follow the kernel's: SYS_read is __NR_read of
// arch/x86/include/generated/uapi/asm/unistd_64.h, SYS_ia32_read is
// __NR_ia32_read of unistd_32_ia32.h (both generated from the tables
// below). Numbers ptilab adds are marked ptilab's, with the Linux call
// they shadow, if any.
package linuxabi

// x86-64 system-call numbers (arch/x86/entry/syscalls/syscall_64.tbl): the
// calls a Go 1.26 program makes, which goos answers, those the ring-3
// tasks make (package tasks, package pti's programs), and the null call.
const (
	SYS_read              = 0
	SYS_write             = 1
	SYS_close             = 3
	SYS_fstat             = 5
	SYS_lseek             = 8
	SYS_mmap              = 9
	SYS_mprotect          = 10
	SYS_munmap            = 11
	SYS_rt_sigaction      = 13
	SYS_rt_sigprocmask    = 14
	SYS_pread64           = 17
	SYS_pwrite64          = 18
	SYS_sched_yield       = 24
	SYS_madvise           = 28
	SYS_nanosleep         = 35
	SYS_getpid            = 39
	SYS_socketpair        = 53
	SYS_clone             = 56
	SYS_exit              = 60
	SYS_kill              = 62
	SYS_uname             = 63
	SYS_fcntl             = 72
	SYS_fsync             = 74
	SYS_getppid           = 110
	SYS_sigaltstack       = 131
	SYS_prctl             = 157
	SYS_arch_prctl        = 158
	SYS_gettid            = 186
	SYS_tkill             = 200
	SYS_futex             = 202
	SYS_sched_getaffinity = 204
	SYS_clock_gettime     = 228
	SYS_clock_getres      = 229
	SYS_exit_group        = 231
	SYS_epoll_ctl         = 233
	SYS_tgkill            = 234
	SYS_openat            = 257
	SYS_mkdirat           = 258
	SYS_newfstatat        = 262
	SYS_epoll_pwait       = 281
	SYS_eventfd2          = 290
	SYS_epoll_create1     = 291
	SYS_prlimit64         = 302
	SYS_getrandom         = 318
)

// ptilab's x86-64 system calls, beside Linux's.
const (
	// SYS_ptilab_work spends RDI TSC cycles in the kernel and returns 0
	// (package pti's work benchmark). It shadows Linux's 127,
	// rt_sigpending, which no ring-3 task of ptilab makes.
	SYS_ptilab_work = 127
	// SYS_ptilab_sample records the core-clock and disturbance counters
	// in the kernel (package pti's sample call, made between the timed
	// repeats of the timing loops) and returns 0. It shadows Linux's 126,
	// capset, which no ring-3 task of ptilab makes.
	SYS_ptilab_sample = 126
	// SYS_ptilab_fault makes goos take a CPU exception in kernel mode
	// (RDI: the kind), for the tests of that path; the number is outside
	// Linux's table ("ptl" and a zero byte).
	SYS_ptilab_fault = 0x7074_6c00
	// SYS_ptilab_secret reads the leak oracle's kernel secret in the
	// kernel (package pti's secret call, which brings the secret's line
	// into the cache before each transient read) and returns 0. It
	// shadows Linux's 124, getsid, which no ring-3 task of ptilab makes.
	SYS_ptilab_secret = 124
	// SYS_ptilab_touch reads a byte in each of RDI kernel pages from RSI,
	// RDX bytes apart, and returns 0 (package pti's TLB sweep, kernel
	// side). It shadows Linux's 125, capget, which no ring-3 task of
	// ptilab makes.
	SYS_ptilab_touch = 125
)

// i386 system-call numbers (arch/x86/entry/syscalls/syscall_32.tbl): the
// calls of the 32-bit world's tasks (i386pae/kernel32).
const (
	SYS_ia32_exit        = 1
	SYS_ia32_read        = 3
	SYS_ia32_write       = 4
	SYS_ia32_close       = 6
	SYS_ia32_lseek       = 19
	SYS_ia32_getppid     = 64
	SYS_ia32_sched_yield = 158
	// SYS_ia32_socketpair is the direct call (Linux 4.3 and later), which
	// glibc uses for socketpair(3) where the kernel has it, rather than
	// socketcall (102) with SYS_SOCKETPAIR (8).
	SYS_ia32_socketpair = 360
)

// Socket constants of socketpair(2) (include/linux/socket.h,
// include/linux/net.h), which x86-64 and i386 share.
const (
	AF_UNIX        = 1
	SOCK_STREAM    = 1
	SOCK_TYPE_MASK = 0xf
	SOCK_NONBLOCK  = 0o4000
	SOCK_CLOEXEC   = 0o2000000
)

// Linux's figures behind af_unix's sk_sndbuf accounting (x86-64, Linux
// 6.x; net/unix/af_unix.c, include/linux/skbuff.h), which both tasks
// kernels model (the 32-bit one with the same, x86-64, struct sizes).
const (
	// UnixSndbuf is a new socket's sk_sndbuf: net.core.wmem_default,
	// whose default SK_WMEM_MAX is 256 skbs of SKB_TRUESIZE(256) bytes.
	UnixSndbuf = 212992
	// SKBStruct and SKBShinfo are SKB_DATA_ALIGN(sizeof(struct sk_buff))
	// and SKB_DATA_ALIGN(sizeof(struct skb_shared_info)).
	SKBStruct = 256
	SKBShinfo = 320
	// SKBMaxHead is SKB_MAX_HEAD(0): the most bytes a skb's linear part
	// holds in a page; SKBMaxData adds unix's UNIX_SKB_FRAGS_SZ of page
	// fragments: the most bytes of one skb.
	SKBMaxHead = 4096 - SKBShinfo
	SKBMaxData = SKBMaxHead + 32768
	// UnixMaxSkbs bounds a channel's queue of skbs: at least 768 bytes of
	// truesize each (a 1-byte skb's) while the charge is below
	// UnixSndbuf, the last one past it.
	UnixMaxSkbs = (UnixSndbuf+767)/768 + 1
)

// ptilab's i386 system calls, beside Linux's.
const (
	// SYS_ia32_ptilab_work spends EBX TSC cycles in the kernel and
	// returns 0. It takes i386's 127, create_module, removed from Linux
	// (2.6) and answered ENOSYS since.
	SYS_ia32_ptilab_work = 127
	// SYS_ia32_ptilab_kernel_fault faults in the 32-bit kernel on purpose
	// (a read of address 0): its record must come back to the 64-bit side
	// and the run go on. It shadows i386's 126, sigprocmask.
	SYS_ia32_ptilab_kernel_fault = 126
	// SYS_ia32_ptilab_kernel_double_fault double-faults in the 32-bit
	// kernel on purpose (a #PF with the stack pointer on an unmapped
	// page): the #DF task must bring the record back. It shadows i386's
	// 125, mprotect.
	SYS_ia32_ptilab_kernel_double_fault = 125
	// SYS_ia32_ptilab_sample records the core-clock and disturbance
	// counters in the 32-bit kernel (layout.KState.Samples), between the
	// timed repeats of the timing programs, and returns 0. It shadows
	// i386's 124, adjtimex.
	SYS_ia32_ptilab_sample = 124
)

//go:generate go run mksysnames.go

// SyscallName returns the Linux name of x86-64 system call nr (its
// syscall_64.tbl entry), or "?".
func SyscallName(nr uint64) string {
	if nr < uint64(len(syscallNames)) && syscallNames[nr] != "" {
		return syscallNames[nr]
	}
	return "?"
}
