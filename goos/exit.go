package goos

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/contract"
)

// The statuses the kernel ends a run with (contract.Status*): under QEMU
// the debug-exit device makes them QEMU's exit status.
const (
	exitFault    = contract.StatusFault
	exitDeadlock = contract.StatusDeadlock
	exitBoot     = contract.StatusBootFailed
	exitOOM      = contract.StatusOutOfMemory
)

var (
	endPrinted bool            // the program printed its PTILAB-END line
	endAction  board.EndAction // what a PC does at the end
)

// MarkEndPrinted tells the kernel that the program printed its PTILAB-END
// line, so that the kernel does not print one when the run ends.
func MarkEndPrinted() { endPrinted = true }

// SetEndAction chooses how a PC ends the run (QEMU always exits through its
// debug-exit device when it has one).
func SetEndAction(a board.EndAction) { endAction = a }

// endRun ends the run: it prints the PTILAB-END line unless the program
// did, and leaves through the board. A run with a fatal exception ends with
// the fault status whatever exit status the program chose after it.
func endRun(status uint8, reason string) {
	kernelDepth++
	if faults > 0 && status != exitOOM {
		status, reason = exitFault, "fault"
	}
	if !endPrinted {
		endPrinted = true
		var l kline
		l.s(contract.EndTag).s(` {"status":"`).s(reason).s(`","exit":`).udec(uint64(status)).
			s(`,"syscalls":`).udec(syscallTotal()).s(`,"uptime_ms":`).dec(Monotonic() / 1e6).
			s(`,"nmis":`).udec(amd64.NMICount()).s("}").flush()
	}
	flushResults()
	board.End(status, endAction)
	amd64.Halt()
}

// NMICount returns the NMIs counted since boot (amd64.NMICount): in the
// kernel, in firmware calls and in ring 3 of both worlds (the 32-bit
// world's are added when its run returns). Read it before and after a
// repeat: a repeat during which it moved was disturbed.
func NMICount() uint64 { return amd64.NMICount() }

func syscallTotal() uint64 {
	n := stats.other
	for _, c := range stats.syscalls {
		n += c
	}
	return n
}
