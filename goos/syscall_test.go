package goos

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/linuxabi"
)

// The system calls a Go 1.26 program makes (docs/how-it-works.md, "System
// calls") and those the os package needs for files: each must have a
// handler.
var runtimeSyscalls = []uint64{
	unix.SYS_ARCH_PRCTL, unix.SYS_MMAP, unix.SYS_MUNMAP, unix.SYS_MADVISE, unix.SYS_CLONE,
	unix.SYS_FUTEX, unix.SYS_NANOSLEEP, unix.SYS_SCHED_YIELD, unix.SYS_SCHED_GETAFFINITY,
	unix.SYS_RT_SIGACTION, unix.SYS_RT_SIGPROCMASK, unix.SYS_SIGALTSTACK, unix.SYS_GETTID,
	unix.SYS_GETPID, unix.SYS_TGKILL, unix.SYS_OPENAT, unix.SYS_READ, unix.SYS_PREAD64,
	unix.SYS_CLOSE, unix.SYS_FCNTL, unix.SYS_PRLIMIT64, unix.SYS_PRCTL, unix.SYS_EPOLL_CREATE1,
	unix.SYS_EPOLL_CTL, unix.SYS_EPOLL_PWAIT, unix.SYS_EVENTFD2, unix.SYS_WRITE, unix.SYS_EXIT_GROUP,
	unix.SYS_CLOCK_GETTIME, unix.SYS_EXIT, unix.SYS_FSTAT, unix.SYS_NEWFSTATAT, unix.SYS_LSEEK,
	unix.SYS_MPROTECT, unix.SYS_GETRANDOM, unix.SYS_PWRITE64,
}

func TestSyscallTableCoversTheRuntime(t *testing.T) {
	for _, nr := range runtimeSyscalls {
		assert.NotNil(t, syscallTable[nr], "%s (%d) has no handler", linuxabi.SyscallName(nr), nr)
	}
}

// TestSyscallNumbers checks that every handler answers a number Linux
// names (linuxabi's tests compare the numbers with golang.org/x/sys).
func TestSyscallNumbers(t *testing.T) {
	for nr, fn := range syscallTable {
		if fn == nil {
			continue
		}
		assert.NotEqual(t, "?", linuxabi.SyscallName(uint64(nr)), "handler for an unnamed number %d", nr)
	}
}

// hostKernel sets up the kernel's state for system calls made from the
// test: n threads with thread 0 current, console captured, every host
// address accepted as user memory, a 1 GHz clock.
func hostKernel(t *testing.T, n int) {
	t.Helper()
	threads = [maxThreads]thread{}
	sched.init()
	for i := 0; i < n; i++ {
		sched.spawn(0)
	}
	sched.pick(0)
	curThread = addr(&threads[0])
	fds = [maxFDs]fileDesc{}
	initFDs()
	captureConsole, ncaptured = true, 0
	identTop, hostTest = 1<<62, true
	stats.syscalls = [maxSyscall]uint64{}
	clock.tsc = amd64.NewTSCClock(1e9)
	clock.bootTSC = amd64.RDTSC()
	sliceStart, sliceCycles = amd64.RDTSC(), 1<<62 // no preemption unless a test asks
	clock.realtimeBase = 1_700_000_000 * 1e9
	sigactions = [65][4]uint64{}
	t.Cleanup(func() { captureConsole = false })
}

// call makes system call nr from the current thread and returns RAX.
func call(nr uint64, args ...uint64) int64 {
	t := (*thread)(efi.Pointer(curThread))
	r := &t.Regs
	*r = PtRegs{OrigAX: nr, IP: 0x1000}
	for i, p := range []*uint64{&r.DI, &r.SI, &r.DX, &r.R10, &r.R8, &r.R9} {
		if i < len(args) {
			*p = args[i]
		}
	}
	syscall()
	return int64(r.AX)
}

func ptr[T any](p *T) uint64 { return uint64(uintptr(unsafe.Pointer(p))) }

func TestUnknownSyscallReportedOnce(t *testing.T) {
	hostKernel(t, 1)
	assert.Equal(t, int64(-linuxabi.ENOSYS), call(135)) // personality
	assert.Equal(t, int64(-linuxabi.ENOSYS), call(135))
	assert.Equal(t, int64(-linuxabi.ENOSYS), call(999))
	out := string(captured[:ncaptured])
	assert.Equal(t, 1, strings.Count(out, "unknown system call personality (135) from RIP 0x1000: answered ENOSYS"), out)
	assert.Contains(t, out, "unknown system call ? (999)")
	assert.Equal(t, uint64(3), stats.unknown)
}

func TestWriteToConsole(t *testing.T) {
	hostKernel(t, 1)
	msg := []byte("hello, serial\n")
	assert.Equal(t, int64(len(msg)), call(linuxabi.SYS_write, 1, ptr(&msg[0]), uint64(len(msg))))
	assert.Equal(t, "hello, serial\n", string(captured[:ncaptured]))
	assert.Equal(t, int64(-linuxabi.EBADF), call(linuxabi.SYS_write, 42, ptr(&msg[0]), 1))
	assert.Equal(t, int64(-linuxabi.EFAULT), call(linuxabi.SYS_write, 1, 0, 1))
}

func TestClockGettime(t *testing.T) {
	hostKernel(t, 1)
	var ts [2]uint64
	require.Equal(t, int64(0), call(linuxabi.SYS_clock_gettime, linuxabi.CLOCK_MONOTONIC, ptr(&ts)))
	mono := ts[0]*1e9 + ts[1]
	assert.Less(t, ts[1], uint64(1e9))
	time.Sleep(time.Millisecond)
	require.Equal(t, int64(0), call(linuxabi.SYS_clock_gettime, linuxabi.CLOCK_REALTIME, ptr(&ts)))
	real := ts[0]*1e9 + ts[1]
	assert.Greater(t, real, uint64(1_700_000_000*1e9)+mono, "realtime = RTC at boot + monotonic")
	assert.Equal(t, int64(-linuxabi.EINVAL), call(linuxabi.SYS_clock_gettime, 99, ptr(&ts)))
	assert.Equal(t, int64(-linuxabi.EFAULT), call(linuxabi.SYS_clock_gettime, linuxabi.CLOCK_MONOTONIC, 8))
}

func TestFutexWaitWake(t *testing.T) {
	hostKernel(t, 2)
	var word uint32 = 7
	assert.Equal(t, int64(-linuxabi.EAGAIN), call(linuxabi.SYS_futex, ptr(&word), linuxabi.FUTEX_WAIT|linuxabi.FUTEX_PRIVATE_FLAG, 8, 0))
	assert.Equal(t, int64(-linuxabi.EINVAL), call(linuxabi.SYS_futex, ptr(&word)+1, linuxabi.FUTEX_WAIT, 7, 0))
	// Thread 0 waits: thread 1 becomes current.
	call(linuxabi.SYS_futex, ptr(&word), linuxabi.FUTEX_WAIT|linuxabi.FUTEX_PRIVATE_FLAG, 7, 0)
	require.Equal(t, addr(&threads[1]), curThread)
	assert.Equal(t, uint8(threadBlocked), sched.t[0].state)
	assert.Equal(t, int64(1), call(linuxabi.SYS_futex, ptr(&word), linuxabi.FUTEX_WAKE|linuxabi.FUTEX_PRIVATE_FLAG, 10, 0))
	assert.Equal(t, uint8(threadRunnable), sched.t[0].state)
	// Thread 1 yields: thread 0 resumes with result 0.
	call(linuxabi.SYS_sched_yield)
	require.Equal(t, addr(&threads[0]), curThread)
	assert.Equal(t, uint64(0), threads[0].Regs.AX)

	// A timed wait: 1 ms at 1 GHz.
	ts := [2]uint64{0, 1_000_000}
	call(linuxabi.SYS_futex, ptr(&word), linuxabi.FUTEX_WAIT, 7, ptr(&ts))
	require.Equal(t, addr(&threads[1]), curThread)
	assert.InDelta(t, float64(amd64.RDTSC()+1_000_000), float64(sched.t[0].deadline), 5e8)
	bad := [2]uint64{0, 2e9}
	assert.Equal(t, int64(-linuxabi.EINVAL), call(linuxabi.SYS_futex, ptr(&word), linuxabi.FUTEX_WAIT, 7, ptr(&bad)))
}

func TestEventfdEpoll(t *testing.T) {
	hostKernel(t, 2)
	efd := call(linuxabi.SYS_eventfd2, 0, linuxabi.O_NONBLOCK|linuxabi.O_CLOEXEC)
	epfd := call(linuxabi.SYS_epoll_create1, linuxabi.O_CLOEXEC)
	require.GreaterOrEqual(t, efd, int64(3))
	require.GreaterOrEqual(t, epfd, int64(3))
	assert.Equal(t, int64(linuxabi.FD_CLOEXEC), call(linuxabi.SYS_fcntl, uint64(efd), linuxabi.F_GETFD))
	assert.Equal(t, int64(linuxabi.O_RDWR|linuxabi.O_NONBLOCK), call(linuxabi.SYS_fcntl, uint64(efd), linuxabi.F_GETFL))

	var ev [12]byte
	binary.LittleEndian.PutUint32(ev[0:], linuxabi.EPOLLIN)
	binary.LittleEndian.PutUint64(ev[4:], 0xfeedface)
	require.Equal(t, int64(0), call(linuxabi.SYS_epoll_ctl, uint64(epfd), linuxabi.EPOLL_CTL_ADD, uint64(efd), ptr(&ev)))
	assert.Equal(t, int64(-linuxabi.EEXIST), call(linuxabi.SYS_epoll_ctl, uint64(epfd), linuxabi.EPOLL_CTL_ADD, uint64(efd), ptr(&ev)))
	assert.Equal(t, int64(-linuxabi.EPERM), call(linuxabi.SYS_epoll_ctl, uint64(epfd), linuxabi.EPOLL_CTL_ADD, 1, ptr(&ev)), "the console is not pollable")

	var out [4 * 12]byte
	assert.Equal(t, int64(0), call(linuxabi.SYS_epoll_pwait, uint64(epfd), ptr(&out), 4, 0), "nothing ready, timeout 0")
	var buf [8]byte
	assert.Equal(t, int64(-linuxabi.EAGAIN), call(linuxabi.SYS_read, uint64(efd), ptr(&buf), 8))

	// Thread 0 waits with no timeout; thread 1 writes the eventfd.
	call(linuxabi.SYS_epoll_pwait, uint64(epfd), ptr(&out), 4, ^uint64(0))
	require.Equal(t, addr(&threads[1]), curThread)
	binary.LittleEndian.PutUint64(buf[:], 1)
	assert.Equal(t, int64(8), call(linuxabi.SYS_write, uint64(efd), ptr(&buf), 8))
	call(linuxabi.SYS_sched_yield)
	require.Equal(t, addr(&threads[0]), curThread)
	r := &threads[0].Regs
	assert.Equal(t, uint64(0x1000-2), r.IP, "the woken poller re-executes SYSCALL")
	assert.Equal(t, uint64(linuxabi.SYS_epoll_pwait), r.AX)
	// Re-executed, the call finds the event.
	assert.Equal(t, int64(1), call(linuxabi.SYS_epoll_pwait, uint64(epfd), ptr(&out), 4, ^uint64(0)))
	assert.Equal(t, uint32(linuxabi.EPOLLIN), binary.LittleEndian.Uint32(out[0:]))
	assert.Equal(t, uint64(0xfeedface), binary.LittleEndian.Uint64(out[4:]))
	assert.Equal(t, int64(8), call(linuxabi.SYS_read, uint64(efd), ptr(&buf), 8))
	assert.Equal(t, uint64(1), binary.LittleEndian.Uint64(buf[:]))

	// A timed wait woken early re-executes with what is left of its
	// timeout (1 s at 1 GHz, some of it gone).
	call(linuxabi.SYS_epoll_pwait, uint64(epfd), ptr(&out), 4, 1000)
	require.Equal(t, addr(&threads[1]), curThread)
	assert.Equal(t, int64(8), call(linuxabi.SYS_write, uint64(efd), ptr(&buf), 8))
	call(linuxabi.SYS_sched_yield)
	require.Equal(t, addr(&threads[0]), curThread)
	assert.LessOrEqual(t, threads[0].Regs.R10, uint64(1000))
	assert.Greater(t, threads[0].Regs.R10, uint64(0))

	// Closing a descriptor takes it out of the epoll sets.
	assert.Equal(t, int64(0), call(linuxabi.SYS_close, uint64(efd)))
	assert.Equal(t, int64(-linuxabi.EBADF), call(linuxabi.SYS_close, uint64(efd)))
	assert.Equal(t, 0, fds[epfd].nitems)
	efd2 := call(linuxabi.SYS_eventfd2, 0, linuxabi.O_NONBLOCK)
	assert.Equal(t, efd, efd2, "the descriptor number is reused")
	assert.Equal(t, int64(0), call(linuxabi.SYS_epoll_pwait, uint64(epfd), ptr(&out), 4, 0), "the new eventfd is not watched")
}

// TestTimeSlice checks that a thread that has used its time slice is
// preempted at a system call that would not block, when another thread can
// run, and resumes with that call's result.
func TestTimeSlice(t *testing.T) {
	hostKernel(t, 2)
	var ts [2]uint64
	require.Equal(t, int64(0), call(linuxabi.SYS_clock_gettime, linuxabi.CLOCK_MONOTONIC, ptr(&ts)))
	require.Equal(t, addr(&threads[0]), curThread, "within its slice the thread keeps the CPU")

	sliceCycles = 0 // the slice is used up
	call(linuxabi.SYS_getpid)
	require.Equal(t, addr(&threads[1]), curThread, "preempted for the runnable thread")
	assert.Equal(t, int64(1), sched.t[0].ret, "it resumes with getpid's result")
	call(linuxabi.SYS_gettid) // thread 1's slice is used up too: back to thread 0
	require.Equal(t, addr(&threads[0]), curThread)
	assert.Equal(t, uint64(1), threads[0].Regs.AX)
	assert.Equal(t, int64(2), sched.t[1].ret, "thread 1 resumes with its gettid result")

	// Alone, a thread is not preempted.
	call(linuxabi.SYS_exit)
	require.Equal(t, addr(&threads[1]), curThread)
	call(linuxabi.SYS_getpid)
	assert.Equal(t, addr(&threads[1]), curThread)
}

func TestThreadCalls(t *testing.T) {
	hostKernel(t, 1)
	assert.Equal(t, int64(1), call(linuxabi.SYS_getpid))
	assert.Equal(t, int64(1), call(linuxabi.SYS_gettid))
	require.Equal(t, int64(0), call(linuxabi.SYS_arch_prctl, linuxabi.ARCH_SET_FS, 0x5000))
	var fs uint64
	require.Equal(t, int64(0), call(linuxabi.SYS_arch_prctl, linuxabi.ARCH_GET_FS, ptr(&fs)))
	assert.Equal(t, uint64(0x5000), fs)
	assert.Equal(t, int64(-linuxabi.EINVAL), call(linuxabi.SYS_arch_prctl, 0x1001, 0)) // ARCH_SET_GS

	var mask [2]uint64
	assert.Equal(t, int64(8), call(linuxabi.SYS_sched_getaffinity, 0, 16, ptr(&mask)))
	assert.Equal(t, uint64(1), mask[0], "one CPU")

	// clone: the runtime's flags; the child gets the new stack and TLS.
	flags := uint64(linuxabi.CLONE_VM | 0x200 | 0x400 | 0x800 | linuxabi.CLONE_THREAD | 0x40000 | linuxabi.CLONE_SETTLS)
	tid := call(linuxabi.SYS_clone, flags, 0x7000, 0, 0, 0x9000)
	assert.Equal(t, int64(2), tid)
	child := &threads[1]
	assert.Equal(t, uint64(0x7000), child.Regs.SP)
	assert.Equal(t, uint64(0x9000), child.FSBase)
	assert.Equal(t, uint64(0x1000), child.Regs.IP, "the child resumes after the same SYSCALL")
	call(linuxabi.SYS_sched_yield)
	require.Equal(t, addr(child), curThread)
	assert.Equal(t, uint64(0), child.Regs.AX, "clone returns 0 in the child")
	assert.Equal(t, int64(2), call(linuxabi.SYS_gettid))
	assert.Equal(t, int64(-linuxabi.EINVAL), call(linuxabi.SYS_clone, 0x11, 0), "fork is not supported")
}

func TestSignalCallsReadBack(t *testing.T) {
	hostKernel(t, 1)
	act := [4]uint64{0x1234, 0x4000000, 0x5678, 0xff}
	var old [4]uint64
	require.Equal(t, int64(0), call(linuxabi.SYS_rt_sigaction, 11, ptr(&act), 0, 8))
	require.Equal(t, int64(0), call(linuxabi.SYS_rt_sigaction, 11, 0, ptr(&old), 8))
	assert.Equal(t, act, old)
	assert.Equal(t, int64(-linuxabi.EINVAL), call(linuxabi.SYS_rt_sigaction, 65, 0, ptr(&old), 8))

	set, oldset := uint64(0b1010), uint64(0)
	require.Equal(t, int64(0), call(linuxabi.SYS_rt_sigprocmask, linuxabi.SIG_SETMASK, ptr(&set), 0, 8))
	require.Equal(t, int64(0), call(linuxabi.SYS_rt_sigprocmask, linuxabi.SIG_UNBLOCK, ptr(&[]uint64{2}[0]), ptr(&oldset), 8))
	assert.Equal(t, uint64(0b1010), oldset)
	assert.Equal(t, uint64(0b1000), threads[0].sigmask)

	ss := [3]uint64{0xa000, 0, 0x8000}
	var oss [3]uint64
	require.Equal(t, int64(0), call(linuxabi.SYS_sigaltstack, ptr(&ss), 0))
	require.Equal(t, int64(0), call(linuxabi.SYS_sigaltstack, 0, ptr(&oss)))
	assert.Equal(t, ss, oss)
	assert.Equal(t, int64(0), call(linuxabi.SYS_tgkill, 1, 1, 23), "signals are accepted")
}

func TestResourceCalls(t *testing.T) {
	hostKernel(t, 1)
	var lim [2]uint64
	require.Equal(t, int64(0), call(linuxabi.SYS_prlimit64, 0, linuxabi.RLIMIT_NOFILE, 0, ptr(&lim)))
	assert.Equal(t, [2]uint64{maxFDs, maxFDs}, lim)
	assert.Equal(t, int64(0), call(linuxabi.SYS_prctl, linuxabi.PR_SET_VMA, 0, 0, 0))
	assert.Equal(t, int64(-linuxabi.EINVAL), call(linuxabi.SYS_prctl, 4242))

	var uts [6 * 65]byte
	require.Equal(t, int64(0), call(linuxabi.SYS_uname, ptr(&uts)))
	assert.Equal(t, "Linux", string(bytes.TrimRight(uts[:65], "\x00")))
	assert.Equal(t, "x86_64", string(bytes.TrimRight(uts[4*65:5*65], "\x00")))

	var rnd [20]byte
	require.Equal(t, int64(20), call(linuxabi.SYS_getrandom, ptr(&rnd), 20, 0))
	assert.NotEqual(t, [20]byte{}, rnd)
}

func TestOpenatProbedPathsDoNotExist(t *testing.T) {
	hostKernel(t, 1)
	dirfd := int64(AT_FDCWD)
	atFDCWD := uint64(dirfd)
	for _, p := range []string{"/proc/self/auxv", "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "/dev/null", "/etc/localtime", "proc"} {
		b := append([]byte(p), 0)
		assert.Equal(t, int64(-linuxabi.ENOENT), call(linuxabi.SYS_openat, atFDCWD, ptr(&b[0]), linuxabi.O_RDONLY, 0), p)
	}
	for _, p := range []string{"a/b", "/procfs", "/ptilab.plan"} {
		q, ok := volumePath([]byte(p))
		assert.True(t, ok, p)
		assert.NotEmpty(t, q)
	}
	assert.Equal(t, int64(linuxabi.O_RDWR), call(linuxabi.SYS_fcntl, 1, linuxabi.F_GETFL))
	assert.Equal(t, int64(-linuxabi.EBADF), call(linuxabi.SYS_fcntl, 63, linuxabi.F_GETFL))
}

func TestMmapBookkeeping(t *testing.T) {
	hostKernel(t, 1)
	vm = addressSpace{lo: 1 << 32, hi: vmHi}
	const rw = linuxabi.PROT_READ | linuxabi.PROT_WRITE
	// A reservation with a hint, as the runtime's arena reservation.
	at := call(linuxabi.SYS_mmap, 0xc000000000, 64<<20, linuxabi.PROT_NONE, linuxabi.MAP_PRIVATE|linuxabi.MAP_ANONYMOUS, uint64(uint32(0xffffffff)), 0)
	assert.Equal(t, int64(0xc000000000), at)
	// Without a hint: from the top down. fd -1 arrives as a 32-bit value.
	at2 := call(linuxabi.SYS_mmap, 0, 1<<20, rw, linuxabi.MAP_PRIVATE|linuxabi.MAP_ANONYMOUS, 0xffffffff, 0)
	assert.Equal(t, int64(vmHi-1<<20), at2)
	assert.Equal(t, int64(-linuxabi.EEXIST), call(linuxabi.SYS_mmap, 0xc000000000, 4096, rw, linuxabi.MAP_PRIVATE|linuxabi.MAP_ANONYMOUS|linuxabi.MAP_FIXED_NOREPLACE, 0xffffffff, 0))
	assert.Equal(t, int64(-linuxabi.ENODEV), call(linuxabi.SYS_mmap, 0, 4096, rw, linuxabi.MAP_PRIVATE, 3, 0), "no file mappings")
	assert.Equal(t, int64(-linuxabi.EINVAL), call(linuxabi.SYS_mmap, 0x100001234, 4096, rw, linuxabi.MAP_PRIVATE|linuxabi.MAP_ANONYMOUS|linuxabi.MAP_FIXED, 0xffffffff, 0))
	assert.Equal(t, int64(-linuxabi.EINVAL), call(linuxabi.SYS_mmap, 0, 0, rw, linuxabi.MAP_PRIVATE|linuxabi.MAP_ANONYMOUS, 0xffffffff, 0))
	// An unaligned hint is only a hint: rounded down, as Linux does.
	assert.Equal(t, int64(0x100001000), call(linuxabi.SYS_mmap, 0x100001234, 4096, rw, linuxabi.MAP_PRIVATE|linuxabi.MAP_ANONYMOUS, 0xffffffff, 0))
	all, acc := vm.reserved()
	assert.Equal(t, uint64(65<<20+4096), all)
	assert.Equal(t, uint64(1<<20+4096), acc)

	// mprotect of nothing succeeds and leaves the table alone; a length
	// that wraps is refused.
	n := vm.n
	for i := 0; i < 20; i++ {
		require.Equal(t, int64(0), call(linuxabi.SYS_mprotect, uint64(at2), 0, linuxabi.PROT_READ))
	}
	assert.Equal(t, n, vm.n)
	assert.Equal(t, int64(-linuxabi.ENOMEM), call(linuxabi.SYS_mprotect, uint64(at2)+8192, ^uint64(0)-8191, linuxabi.PROT_READ))
	assert.Equal(t, n, vm.n)
}

func TestTimespec(t *testing.T) {
	hostKernel(t, 1)
	for _, c := range []struct {
		ts   [2]int64
		ns   int64
		okay bool
	}{
		{[2]int64{0, 0}, 0, true},
		{[2]int64{1, 500}, 1e9 + 500, true},
		{[2]int64{0, 1e9}, 0, false},
		{[2]int64{-1, 0}, 0, false},
		{[2]int64{1 << 62, 0}, ((1<<63-1)/1_000_000_000 - 1) * 1_000_000_000, true}, // clamped
	} {
		ns, ok := timespec(ptr(&c.ts))
		assert.Equal(t, c.okay, ok, "%v", c.ts)
		if ok {
			assert.Equal(t, c.ns, ns, "%v", c.ts)
		}
	}
}

func TestUnixNano(t *testing.T) {
	for _, c := range []struct {
		t    efi.Time
		want time.Time
	}{
		{efi.Time{Year: 1970, Month: 1, Day: 1, TimeZone: 2047}, time.Unix(0, 0)},
		{efi.Time{Year: 2026, Month: 11, Day: 29, Hour: 18, Minute: 39, Second: 39, Nanosecond: 5, TimeZone: 2047},
			time.Date(2026, 11, 29, 18, 39, 39, 5, time.UTC)},
		{efi.Time{Year: 2000, Month: 2, Day: 29, Hour: 23, TimeZone: 2047}, time.Date(2000, 2, 29, 23, 0, 0, 0, time.UTC)},
		// Local time 10:00 with TimeZone = -60 (UTC = local + TimeZone... per
		// UEFI 2.10 8.3.1: local = UTC - TimeZone): UTC 09:00.
		{efi.Time{Year: 2024, Month: 7, Day: 1, Hour: 10, TimeZone: -60}, time.Date(2024, 7, 1, 9, 0, 0, 0, time.UTC)},
	} {
		assert.Equal(t, c.want.UnixNano(), unixNano(c.t), "%+v", c.t)
	}
}

// TestInitialStack checks the Linux process stack boot hands the runtime
// (System V AMD64 ABI, Figure 3.9).
func TestInitialStack(t *testing.T) {
	buf := make([]byte, 64<<10)
	rtStackTop = ptr(&buf[len(buf)-1]) + 1
	sp := initialStack()
	assert.Equal(t, uint64(0), sp%16, "16-byte aligned")
	word := func(i int) uint64 { return load64(sp + uint64(8*i)) }
	cstr := func(p uint64) string {
		var b []byte
		for ; *(*byte)(efi.Pointer(p)) != 0; p++ {
			b = append(b, *(*byte)(efi.Pointer(p)))
		}
		return string(b)
	}
	require.Equal(t, uint64(1), word(0), "argc")
	assert.Equal(t, "ptilab", cstr(word(1)))
	assert.Equal(t, uint64(0), word(2))
	assert.Equal(t, "GODEBUG=asyncpreemptoff=1", cstr(word(3)))
	assert.Equal(t, uint64(0), word(4))
	aux := map[uint64]uint64{}
	for i := 5; ; i += 2 {
		if word(i) == linuxabi.AT_NULL {
			break
		}
		aux[word(i)] = word(i + 1)
	}
	assert.Equal(t, uint64(4096), aux[linuxabi.AT_PAGESZ])
	require.Contains(t, aux, uint64(linuxabi.AT_RANDOM))
	r := aux[linuxabi.AT_RANDOM]
	assert.True(t, r > sp && r+16 <= rtStackTop, "linuxabi.AT_RANDOM points at 16 bytes on the stack")
}
