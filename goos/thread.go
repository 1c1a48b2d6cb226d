package goos

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/linuxabi"
)

// PtRegs is the register frame of a thread that entered the kernel,
// Linux's x86-64 struct pt_regs (linuxabi.PtRegs), so that it reads the
// same: the general registers, the system-call number (OrigAX), and the
// five words IRETQ pops. An alias, so that go_asm.h gives the assembly
// its size (PtRegs__size).
type PtRegs = linuxabi.PtRegs

// thread is one of the runtime's threads (an M): its registers while it is
// not running, its FS base (the runtime's TLS) and its x87/SSE state.
type thread struct {
	Regs   PtRegs
	FSBase uint64
	// FX holds the FXSAVE image at the first 16-byte boundary inside it
	// (SDM Vol. 2A, FXSAVE: 512 bytes, 16-byte aligned).
	FX       [512 + 16]byte
	sigmask  uint64
	altstack [3]uint64 // stack_t: ss_sp, ss_flags, ss_size
}

var threads [maxThreads]thread

// sched decides which thread runs; curThread is the address of the running
// thread's record, for the entry code.
var (
	sched     scheduler
	curThread uint64
)

// fxArea returns the address of t's FXSAVE image.
func (t *thread) fxArea() uint64 {
	return (addr(&t.FX[0]) + 15) &^ 15
}

// switchTo makes thread i current: the system-call exit path restores its
// registers. A thread resumes with the result its wait ended with, or
// re-executes its system call (SYSCALL is 2 bytes: 0F 05), with what is
// left of its timeout.
func switchTo(i int) {
	t := &threads[i]
	e := &sched.t[i]
	if e.restart {
		t.Regs.IP -= 2
		t.Regs.AX = t.Regs.OrigAX
		e.restart = false
		if e.deadline != 0 {
			// epoll_pwait's timeout (R10, ms) becomes what is left of it.
			left := uint64(0)
			if now := amd64.RDTSC(); e.deadline > now {
				left = (clock.tsc.Nanoseconds(e.deadline-now) + 999_999) / 1_000_000
			}
			t.Regs.R10 = left
		}
	} else {
		t.Regs.AX = uint64(e.ret)
	}
	curThread = addr(t)
}

// initThreads makes the boot CPU's context thread 0, the runtime's main
// thread, which starts in _rt0_amd64_linux with FS base 0.
func initThreads() {
	sched.init()
	i, _ := sched.spawn(0)
	sched.pick(0)
	t := &threads[i]
	amd64.FXSAVE(uintptr(t.fxArea()))
	curThread = addr(t)
}
