package goos

import (
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/linuxabi"
)

// The Linux system-call personality: the Go runtime issues SYSCALL in ring
// 0 as if it ran on Linux, and syscall answers with Linux's numbers and
// semantics (man-pages section 2) for the calls the runtime and the os
// package make. An unknown call is reported on the console, by name and
// number, the first time it is made, and answered -ENOSYS.

// syscallFn handles one system call for the thread whose registers are r:
// arguments in DI, SI, DX, R10, R8, R9 (the x86-64 Linux convention). It
// returns the result or a negative errno. A handler that blocks or ends
// the thread tells the scheduler, and its result is then ignored.
type syscallFn func(r *PtRegs) int64

// maxSyscall bounds the system-call table: the x86-64 numbers are below it.
const maxSyscall = 512

// syscallTable maps each system call ptilab answers to its handler. It is
// initialized statically (the linker lays it out), so it is complete
// before the runtime's first system call.
var syscallTable = [maxSyscall]syscallFn{
	linuxabi.SYS_read:              sysRead,
	linuxabi.SYS_write:             sysWrite,
	linuxabi.SYS_close:             sysClose,
	linuxabi.SYS_fstat:             sysFstat,
	linuxabi.SYS_lseek:             sysLseek,
	linuxabi.SYS_mmap:              sysMmap,
	linuxabi.SYS_mprotect:          sysMprotect,
	linuxabi.SYS_munmap:            sysMunmap,
	linuxabi.SYS_rt_sigaction:      sysRtSigaction,
	linuxabi.SYS_rt_sigprocmask:    sysRtSigprocmask,
	linuxabi.SYS_pread64:           sysPread64,
	linuxabi.SYS_pwrite64:          sysPwrite64,
	linuxabi.SYS_sched_yield:       sysSchedYield,
	linuxabi.SYS_madvise:           sysMadvise,
	linuxabi.SYS_nanosleep:         sysNanosleep,
	linuxabi.SYS_getpid:            sysGetpid,
	linuxabi.SYS_clone:             sysClone,
	linuxabi.SYS_exit:              sysExit,
	linuxabi.SYS_kill:              sysKill,
	linuxabi.SYS_uname:             sysUname,
	linuxabi.SYS_fcntl:             sysFcntl,
	linuxabi.SYS_fsync:             sysFsync,
	linuxabi.SYS_sigaltstack:       sysSigaltstack,
	linuxabi.SYS_prctl:             sysPrctl,
	linuxabi.SYS_arch_prctl:        sysArchPrctl,
	linuxabi.SYS_gettid:            sysGettid,
	linuxabi.SYS_tkill:             sysKill,
	linuxabi.SYS_futex:             sysFutex,
	linuxabi.SYS_sched_getaffinity: sysSchedGetaffinity,
	linuxabi.SYS_clock_gettime:     sysClockGettime,
	linuxabi.SYS_clock_getres:      sysClockGetres,
	linuxabi.SYS_exit_group:        sysExitGroup,
	linuxabi.SYS_epoll_ctl:         sysEpollCtl,
	linuxabi.SYS_tgkill:            sysKill,
	linuxabi.SYS_openat:            sysOpenat,
	linuxabi.SYS_mkdirat:           sysMkdirat,
	linuxabi.SYS_newfstatat:        sysNewfstatat,
	linuxabi.SYS_epoll_pwait:       sysEpollPwait,
	linuxabi.SYS_eventfd2:          sysEventfd2,
	linuxabi.SYS_epoll_create1:     sysEpollCreate1,
	linuxabi.SYS_prlimit64:         sysPrlimit64,
	linuxabi.SYS_getrandom:         sysGetrandom,
}

// stats counts what the kernel did for the runtime.
var stats struct {
	syscalls      [maxSyscall]uint64 // by number; unknown numbers included
	other         uint64             // numbers at or above maxSyscall
	unknown       uint64             // calls answered -ENOSYS for want of a handler
	pagesBacked   uint64             // demand-zero pages given a frame
	pagesReleased uint64             // frames taken back (munmap, madvise)
	exceptions    uint64             // CPU exceptions, page faults included
}

// kernelDepth counts the kernel-mode activations under way: boot and the
// system-call handler. An exception with kernelDepth > 0 hit kernel code.
var kernelDepth int

// syscall handles the current thread's system call: called by syscallEntry
// on the kernel stack, with the thread's registers in its record. It
// returns with curThread set to the thread to resume.
func syscall() {
	kernelDepth++
	t := (*thread)(efi.Pointer(curThread))
	r := &t.Regs
	nr := r.OrigAX
	var fn syscallFn
	switch {
	case nr < maxSyscall:
		stats.syscalls[nr]++
		fn = syscallTable[nr]
	case nr == linuxabi.SYS_ptilab_fault:
		fn = sysFault
	default:
		stats.other++
	}
	var ret int64
	if fn != nil {
		ret = fn(r)
	} else {
		ret = unknownSyscall(nr, r)
	}
	if sched.cur >= 0 {
		now := amd64.RDTSC()
		if now-sliceStart < sliceCycles || !sched.waiting(now) {
			r.AX = uint64(ret)
			kernelDepth--
			return
		}
		sched.preempt(ret)
	}
	schedule()
	kernelDepth--
}

// timeSlice is how long a thread runs before a system call lets another
// runnable one have the CPU: 1 ms, a tenth of the time after which the
// runtime's sysmon asks a goroutine to yield.
const timeSlice = 1_000_000 // ns

var (
	sliceStart  uint64 // TSC when the current thread was switched in
	sliceCycles uint64 // timeSlice in TSC cycles, set with the clock
)

// unknownSyscall reports a system call ptilab does not answer, once per
// number, and returns -ENOSYS.
func unknownSyscall(nr uint64, r *PtRegs) int64 {
	stats.unknown++
	if nr >= maxSyscall || stats.syscalls[nr] == 1 {
		var l kline
		l.s("ptilab: unknown system call ").s(linuxabi.SyscallName(nr)).s(" (").udec(nr).s(") from RIP ").hex(r.IP, 0).s(": answered ENOSYS").flush()
	}
	return -linuxabi.ENOSYS
}

// schedule picks the thread to run after the current one blocked, yielded
// or exited. With none runnable it spins until the earliest deadline; with
// none runnable and no deadline the run is deadlocked and ends.
func schedule() {
	for {
		next, until, deadlock := sched.pick(amd64.RDTSC())
		if next >= 0 {
			switchTo(next)
			sliceStart = amd64.RDTSC()
			return
		}
		if deadlock {
			reportDeadlock()
			endRun(exitDeadlock, "deadlock")
		}
		for amd64.RDTSC() < until {
			amd64.Pause()
		}
	}
}

func reportDeadlock() {
	var l kline
	l.s("ptilab: deadlock: no thread can run and none waits with a timeout").flush()
	for i := range sched.t {
		e := &sched.t[i]
		if e.state == threadFree {
			continue
		}
		l.s("  thread ").dec(int64(e.tid)).s(" ").s(stateNames[e.state])
		if e.state == threadBlocked {
			l.s(" on ").s(waitNames[e.wait]).s(" ").hex(e.addr, 0)
		}
		l.s(" RIP ").hex(threads[i].Regs.IP, 0).flush()
	}
}

// User memory. The runtime shares the kernel's address space, so its
// pointers are used as they are, once userRange has checked them.

func userBytes(va, n uint64) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(efi.Pointer(va)), n)
}

func load64(va uint64) uint64     { return *(*uint64)(efi.Pointer(va)) }
func store64(va, v uint64)        { *(*uint64)(efi.Pointer(va)) = v }
func load32(va uint64) uint32     { return *(*uint32)(efi.Pointer(va)) }
func store32(va uint64, v uint32) { *(*uint32)(efi.Pointer(va)) = v }

// timespec reads a struct timespec as nanoseconds; negative fields are
// invalid.
func timespec(va uint64) (int64, bool) {
	if !userRange(va, 16, false) {
		return 0, false
	}
	sec, nsec := int64(load64(va)), int64(load64(va+8))
	if sec < 0 || nsec < 0 || nsec >= 1e9 {
		return 0, false
	}
	const maxSec = (1<<63-1)/1_000_000_000 - 1
	if sec > maxSec {
		sec = maxSec
	}
	return sec*1e9 + nsec, true
}

// Memory.

func pageAlign(n uint64) uint64 { return (n + pageSize - 1) &^ (pageSize - 1) }

func sysMmap(r *PtRegs) int64 {
	addr, length, prot, flags, fd := r.DI, r.SI, r.DX, r.R10, int32(r.R8)
	fixed := flags&(linuxabi.MAP_FIXED|linuxabi.MAP_FIXED_NOREPLACE) != 0
	if length == 0 || pageAlign(length) < length || fixed && addr%pageSize != 0 || prot&^(linuxabi.PROT_READ|linuxabi.PROT_WRITE|linuxabi.PROT_EXEC) != 0 {
		return -linuxabi.EINVAL
	}
	if flags&linuxabi.MAP_ANONYMOUS == 0 || fd != -1 && fd != 0 {
		return -linuxabi.ENODEV // only anonymous memory
	}
	length = pageAlign(length)
	var start uint64
	switch {
	case flags&linuxabi.MAP_FIXED_NOREPLACE != 0:
		if !vm.isFree(addr, addr+length) {
			return -linuxabi.EEXIST
		}
		start = addr
	case flags&linuxabi.MAP_FIXED != 0:
		if addr < vm.lo || addr+length > vm.hi || addr+length < addr {
			return -linuxabi.ENOMEM
		}
		if !vm.remove(addr, addr+length) {
			return -linuxabi.ENOMEM
		}
		unbackRange(addr, addr+length)
		start = addr
	default:
		var ok bool
		if start, ok = vm.findFree(addr&^(pageSize-1), length); !ok {
			return -linuxabi.ENOMEM
		}
	}
	if !vm.insert(start, start+length, uint8(prot)) {
		return -linuxabi.ENOMEM
	}
	return int64(start)
}

func sysMunmap(r *PtRegs) int64 {
	addr, length := r.DI, pageAlign(r.SI)
	if addr%pageSize != 0 || length == 0 || addr+length < addr {
		return -linuxabi.EINVAL
	}
	if addr+length <= vm.lo || addr >= vm.hi {
		return 0
	}
	addr, end := max(addr, vm.lo), min(addr+length, vm.hi)
	if !vm.remove(addr, end) {
		return -linuxabi.ENOMEM
	}
	unbackRange(addr, end)
	return 0
}

func sysMprotect(r *PtRegs) int64 {
	addr, length, prot := r.DI, pageAlign(r.SI), r.DX
	if addr%pageSize != 0 || prot&^(linuxabi.PROT_READ|linuxabi.PROT_WRITE|linuxabi.PROT_EXEC) != 0 || length < r.SI {
		return -linuxabi.EINVAL
	}
	if length == 0 {
		return 0
	}
	if addr+length < addr || !vm.protect(addr, addr+length, uint8(prot)) {
		return -linuxabi.ENOMEM
	}
	reprotect(addr, addr+length, uint8(prot))
	return 0
}

func sysMadvise(r *PtRegs) int64 {
	addr, length, advice := r.DI, pageAlign(r.SI), r.DX
	if addr%pageSize != 0 || length < r.SI || addr+length < addr {
		return -linuxabi.EINVAL
	}
	switch advice {
	case linuxabi.MADV_DONTNEED, linuxabi.MADV_FREE:
		// As Linux: release what is mapped, then report the holes.
		unbackRange(max(addr, vm.lo), min(addr+length, vm.hi))
		if !vm.covered(addr, addr+length) {
			return -linuxabi.ENOMEM
		}
	}
	return 0
}

// Threads and scheduling.

// clone flags (include/uapi/linux/sched.h).
const (
	cloneRequired = linuxabi.CLONE_VM | linuxabi.CLONE_THREAD
)

// sysClone starts a thread: the runtime's newosproc. The child resumes
// from the same SYSCALL with RAX = 0, RSP = the new stack, FS base = the
// TLS argument and every other register as the parent had it (the
// runtime's clone passes m, g and the start function in R13, R9, R12).
func sysClone(r *PtRegs) int64 {
	flags, stack, tls := r.DI, r.SI, r.R8
	if flags&cloneRequired != cloneRequired {
		return -linuxabi.EINVAL // only threads: ptilab runs one process
	}
	i, tid := sched.spawn(0)
	if i < 0 {
		return -linuxabi.EAGAIN
	}
	parent := (*thread)(efi.Pointer(curThread))
	child := &threads[i]
	child.Regs = *r
	child.Regs.SP = stack
	child.FSBase = parent.FSBase
	if flags&linuxabi.CLONE_SETTLS != 0 {
		child.FSBase = tls
	}
	child.FX = parent.FX
	child.sigmask = parent.sigmask
	child.altstack = [3]uint64{0, ssDisable, 0}
	return int64(tid)
}

func sysExit(r *PtRegs) int64 {
	sched.exit()
	return 0
}

func sysSchedYield(r *PtRegs) int64 {
	sched.yield()
	return 0
}

func sysGetpid(r *PtRegs) int64 { return 1 }

func sysGettid(r *PtRegs) int64 { return int64(sched.t[sched.cur].tid) }

// Signals are accepted and never delivered: ptilab has no asynchronous
// events to deliver them for.
func sysKill(r *PtRegs) int64 { return 0 }

// sigactions keeps what the runtime installs (struct sigaction, 32 bytes:
// handler, flags, restorer, mask) so that it reads back what it set.
var sigactions [65][4]uint64

func sysRtSigaction(r *PtRegs) int64 {
	sig, act, old := r.DI, r.SI, r.DX
	if sig < 1 || sig > 64 {
		return -linuxabi.EINVAL
	}
	if old != 0 {
		if !userRange(old, 32, true) {
			return -linuxabi.EFAULT
		}
		for i := uint64(0); i < 4; i++ {
			store64(old+8*i, sigactions[sig][i])
		}
	}
	if act != 0 {
		if !userRange(act, 32, false) {
			return -linuxabi.EFAULT
		}
		for i := uint64(0); i < 4; i++ {
			sigactions[sig][i] = load64(act + 8*i)
		}
	}
	return 0
}

func sysRtSigprocmask(r *PtRegs) int64 {
	how, set, old := r.DI, r.SI, r.DX
	t := (*thread)(efi.Pointer(curThread))
	if old != 0 {
		if !userRange(old, 8, true) {
			return -linuxabi.EFAULT
		}
		store64(old, t.sigmask)
	}
	if set != 0 {
		if !userRange(set, 8, false) {
			return -linuxabi.EFAULT
		}
		m := load64(set)
		switch how {
		case linuxabi.SIG_BLOCK:
			t.sigmask |= m
		case linuxabi.SIG_UNBLOCK:
			t.sigmask &^= m
		case linuxabi.SIG_SETMASK:
			t.sigmask = m
		default:
			return -linuxabi.EINVAL
		}
	}
	return 0
}

const ssDisable = 2 // SS_DISABLE

func sysSigaltstack(r *PtRegs) int64 {
	ss, old := r.DI, r.SI
	t := (*thread)(efi.Pointer(curThread))
	if old != 0 {
		if !userRange(old, 24, true) {
			return -linuxabi.EFAULT
		}
		store64(old, t.altstack[0])
		store64(old+8, t.altstack[1])
		store64(old+16, t.altstack[2])
	}
	if ss != 0 {
		if !userRange(ss, 24, false) {
			return -linuxabi.EFAULT
		}
		t.altstack = [3]uint64{load64(ss), load64(ss + 8), load64(ss + 16)}
	}
	return 0
}

func sysPrctl(r *PtRegs) int64 {
	switch r.DI {
	case linuxabi.PR_SET_NAME, linuxabi.PR_SET_VMA:
		return 0
	}
	return -linuxabi.EINVAL
}

func sysArchPrctl(r *PtRegs) int64 {
	t := (*thread)(efi.Pointer(curThread))
	switch r.DI {
	case linuxabi.ARCH_SET_FS:
		t.FSBase = r.SI
		return 0
	case linuxabi.ARCH_GET_FS:
		if !userRange(r.SI, 8, true) {
			return -linuxabi.EFAULT
		}
		store64(r.SI, t.FSBase)
		return 0
	}
	return -linuxabi.EINVAL // GS belongs to the kernel
}

func sysSchedGetaffinity(r *PtRegs) int64 {
	size, mask := r.SI, r.DX
	if size < 8 {
		return -linuxabi.EINVAL
	}
	if !userRange(mask, 8, true) {
		return -linuxabi.EFAULT
	}
	store64(mask, 1) // one CPU: the runtime runs with GOMAXPROCS=1
	return 8
}

// sysFutex implements FUTEX_WAIT and FUTEX_WAKE on 32-bit futex words: a
// waiter sleeps only if the word still holds the value it expects, and
// wakers release waiters oldest first.
func sysFutex(r *PtRegs) int64 {
	uaddr, op, val, timeout := r.DI, r.SI&^(linuxabi.FUTEX_PRIVATE_FLAG|linuxabi.FUTEX_CLOCK_REALTIME), uint32(r.DX), r.R10
	if uaddr%4 != 0 {
		return -linuxabi.EINVAL
	}
	switch op {
	case linuxabi.FUTEX_WAIT:
		if !userRange(uaddr, 4, false) {
			return -linuxabi.EFAULT
		}
		if load32(uaddr) != val {
			return -linuxabi.EAGAIN
		}
		var deadline uint64
		if timeout != 0 {
			ns, ok := timespec(timeout)
			if !ok {
				return -linuxabi.EINVAL
			}
			deadline = deadlineAfter(ns)
		}
		sched.block(waitFutex, uaddr, deadline, 0)
		return 0
	case linuxabi.FUTEX_WAKE:
		return int64(sched.wake(waitFutex, uaddr, int(min(val, maxThreads))))
	}
	return -linuxabi.ENOSYS
}

func sysNanosleep(r *PtRegs) int64 {
	ns, ok := timespec(r.DI)
	if !ok {
		return -linuxabi.EINVAL
	}
	if ns == 0 {
		sched.yield()
		return 0
	}
	sched.block(waitSleep, 0, deadlineAfter(ns), 0)
	return 0
}

// Resource limits (include/uapi/asm-generic/resource.h).
const (
	rlimInfinity = ^uint64(0)
)

func sysPrlimit64(r *PtRegs) int64 {
	pid, resource, old := r.DI, r.SI, r.R10
	if pid != 0 && pid != 1 {
		return -linuxabi.EPERM
	}
	cur, lim := rlimInfinity, rlimInfinity
	switch resource {
	case linuxabi.RLIMIT_NOFILE:
		cur, lim = maxFDs, maxFDs
	case linuxabi.RLIMIT_STACK:
		cur = 8 << 20
	}
	if old != 0 {
		if !userRange(old, 16, true) {
			return -linuxabi.EFAULT
		}
		store64(old, cur)
		store64(old+8, lim)
	}
	return 0 // new limits are accepted and change nothing
}

// sysUname describes the kernel the runtime believes it runs on.
func sysUname(r *PtRegs) int64 {
	const field = 65
	if !userRange(r.DI, 6*field, true) {
		return -linuxabi.EFAULT
	}
	b := userBytes(r.DI, 6*field)
	clear(b)
	for i, s := range [...]string{"Linux", "ptilab", "6.1.0-ptilab", "#1 ptilab", "x86_64", ""} {
		copy(b[i*field:(i+1)*field-1], s)
	}
	return 0
}

// sysGetrandom fills the buffer from RDSEED or RDRAND where the CPU has
// them, and otherwise from a generator seeded by the TSC (not
// cryptographic; the machine line says which).
func sysGetrandom(r *PtRegs) int64 {
	buf, n := r.DI, r.SI
	if n > 1<<20 {
		n = 1 << 20
	}
	if !userRange(buf, n, true) {
		return -linuxabi.EFAULT
	}
	b := userBytes(buf, n)
	for i := 0; i < len(b); i += 8 {
		v := random64()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return int64(n)
}

// Random sources.
const (
	RandomRDSEED = "rdseed"
	RandomRDRAND = "rdrand"
	RandomTSC    = "tsc-xorshift"
)

var xorshift uint64

func random64() uint64 {
	if amd64.Features.RDSEED {
		if v, ok := amd64.RDSEED(); ok {
			return v
		}
	}
	if amd64.Features.RDRAND {
		if v, ok := amd64.RDRAND(); ok {
			return v
		}
	}
	if xorshift == 0 {
		xorshift = amd64.RDTSC() | 1
	}
	xorshift ^= xorshift << 13
	xorshift ^= xorshift >> 7
	xorshift ^= xorshift << 17
	return xorshift ^ amd64.RDTSC()
}

// RandomSource names where getrandom's bytes come from.
func RandomSource() string {
	switch {
	case amd64.Features.RDSEED:
		return RandomRDSEED
	case amd64.Features.RDRAND:
		return RandomRDRAND
	}
	return RandomTSC
}

func sysExitGroup(r *PtRegs) int64 {
	code := uint8(r.DI)
	endRun(code, "exit")
	return 0
}
