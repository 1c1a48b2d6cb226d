package goos

import (
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
)

// The kernel's way out gives back the MSRs the run wrote (the P-state
// request, the PMU's: cpustate.Saved) whenever the program did not: a Go
// panic or an exit before the end, a fault in the kernel, a deadlock, the
// frame pool used up. The program restores them itself at its end
// (bench.RestoreMSRs, before PTILAB-END); here the same registry is
// replayed, and finds nothing left after a normal end.

// msrCPU is the CPU restoreMSRs writes to: the hardware (#GP-safe
// accessors); host tests set a fake bank.
var msrCPU cpustate.CPU = cpustate.Hardware{}

// restoreBuf holds restoreMSRs' line and record (up to cpustate.MaxSaved
// entries of about 160 bytes each): no allocation in an exception
// handler.
var restoreBuf [cpustate.MaxSaved*192 + 256]byte

// istCalleeRoom is the stack below restoreMSRs's frame that the restore's
// callees (the registry, the #GP-safe WRMSR) use, left alone when IST1
// is lowered; istNestedRoom the least stack a nested exception needs
// below the lowered IST1 (its frame, FXSAVE area and handler).
const (
	istCalleeRoom = 4 << 10
	istNestedRoom = 8 << 10
)

// restoreMSRs restores cpustate.Saved on the kernel's way out at (endRun's
// reason) and, when it restored anything, prints the line and the
// msr-restore record of it (cpustate.WriteRestoreLine,
// WriteRestoreJSON).
//
// On an exception's stack: a kernel fault ends the run from its handler,
// on IST1, and a WRMSR that raises #GP there (a restore the CPU refuses)
// would be delivered through IST1 too, whose top the CPU loads whatever
// RSP is (SDM Vol. 3A, 6.14.5): the #GP's frame and handler would
// overwrite the frames of the handler that is restoring, and the #GP-safe
// fix-up would return into them. While it restores from IST1, it lowers
// IST1 below its own frames (istBelow), as Linux once shifted the #DB IST
// stack for nested debug exceptions (arch/x86/entry/entry_64.S,
// shift_ist), and sets it back after.
func restoreMSRs(at string) {
	var here byte
	_, top := istExcStack()
	low, shifted := istBelow(addr(&here))
	if shifted {
		tss.SetIST(istExc, low)
	}
	e := cpustate.Saved.Restore(msrCPU)
	if shifted {
		tss.SetIST(istExc, top)
	}
	if e == nil {
		return
	}
	serial := excDepth > 1
	n := cpustate.WriteRestoreLine(restoreBuf[:len(restoreBuf)-1], at, e)
	restoreBuf[n] = '\n'
	writeKernelLine(restoreBuf[:n+1], serial)
	n = copy(restoreBuf[:], contract.RecordTag+" ")
	n += cpustate.WriteRestoreJSON(restoreBuf[n:len(restoreBuf)-1], at, e)
	restoreBuf[n] = '\n'
	writeKernelLine(restoreBuf[:n+1], serial)
}

// istExcStack is IST1's stack: its lowest address and its top.
func istExcStack() (lo, top uint64) {
	return kstackBase + guardSize, kstackBase + istExcTop
}

// istBelow is where IST1 must point while code running at sp may take a
// nested exception: below sp and its callees' istCalleeRoom, 16-byte
// aligned; shift is false when sp is not on IST1 (a nested exception
// then lands on IST1's top, away from sp) or when too little of IST1 is
// left below.
func istBelow(sp uint64) (ist uint64, shift bool) {
	lo, top := istExcStack()
	if sp < lo || sp >= top || sp-lo < istCalleeRoom+istNestedRoom {
		return top, false
	}
	return (sp - istCalleeRoom) &^ 15, true
}

// writeKernelLine writes a line (its newline included) from the kernel:
// to COM1 only when serial (handlers that may interrupt the firmware
// gate, which the display output goes through), else to the console.
func writeKernelLine(b []byte, serial bool) {
	if serial && !captureConsole {
		board.WriteSerial(b)
		return
	}
	consoleWrite(b)
}
