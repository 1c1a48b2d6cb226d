package pti

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/exitstatus"
)

// Result is how a run ended.
type Result struct {
	Reason uint64 // ReasonExit, ReasonFault, ReasonDeadlock or ReasonNoSwitch
	Status uint64 // the exit status
	// The exception that ended the run, with ReasonFault.
	Vector, ErrorCode, RIP, CS, CR2 uint64
	// The page faults from ring 3 the run recovered (StartRecovering),
	// and the last one's CR2 and error code.
	Recovered, RecoverCR2, RecoverError uint64
	// ASITransitions are the asi modes' switches to the sensitive table
	// (ASI faults) in the run.
	ASITransitions uint64
}

// FromUser reports whether the exception came from ring 3.
func (r Result) FromUser() bool { return r.CS&amd64.SelectorRPL == 3 }

func (r Result) String() string {
	switch r.Reason {
	case ReasonExit:
		if name, ok := exitstatus.Name(r.Status); ok {
			return fmt.Sprintf("exit %d (%s)", r.Status, name)
		}
		return fmt.Sprintf("exit %d", r.Status)
	case ReasonDeadlock:
		return "deadlock: every remaining task is blocked"
	case ReasonNoSwitch:
		return "a task blocked or yielded under a trampoline without a pt_regs frame"
	case ReasonFault:
	default:
		return fmt.Sprintf("unknown end %d", r.Reason)
	}
	ring := 0
	if r.FromUser() {
		ring = 3
	}
	return fmt.Sprintf("%s in ring %d, error %#x, RIP %#x, CR2 %#x", amd64.VectorName(r.Vector), ring, r.ErrorCode, r.RIP, r.CR2)
}
