package i386pae

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/pti"
)

// Result is how a run ended.
type Result struct {
	Reason uint32 // layout.ReasonExit, ReasonFault or ReasonDeadlock
	Status uint32 // the exit status
	// The exception that ended the run, with ReasonFault.
	Vector, ErrorCode, EIP, CS, ESP, CR2 uint32
	// Cycles are the R TSC differences of a Syscalls run.
	Cycles []uint64
	// Value is what Probe read, or the last result of Syscalls' calls.
	Value uint32
	// Stamps are the instrumented trampoline's phases over the run, with
	// experiment.Config.Stamps.
	Stamps Stamps
	// IBPBs and RSBFills are the mitigated trampoline's IBPBs and RSB
	// stuffings after switches to another process (experiment.Config.Knobs ibpb,
	// rsb).
	IBPBs, RSBFills uint32
}

// FromUser reports whether the exception came from ring 3.
func (r Result) FromUser() bool { return r.CS&amd64.SelectorRPL == 3 }

// String says how the run ended: an exit, a deadlock or an unknown end
// as package pti's Result says it (the same reasons and exit statuses: a
// test compares them), an exception with the 32-bit registers.
func (r Result) String() string {
	if r.Reason != layout.ReasonFault {
		return pti.Result{Reason: uint64(r.Reason), Status: uint64(r.Status)}.String()
	}
	ring := 0
	if r.FromUser() {
		ring = 3
	}
	return fmt.Sprintf("%s in ring %d (32-bit), error %#x, EIP %#x, CR2 %#x", amd64.VectorName(uint64(r.Vector)), ring, r.ErrorCode, r.EIP, r.CR2)
}

// Stamps are the instrumented SYSENTER trampolines' phase stamps over a
// run (layout.CPUData.Phase, PhaseN, StampCal, StampCalNs).
type Stamps struct {
	// Sums are the TSC cycles of each phase (layout.Phase*) summed over
	// the run's stamped calls, each with its stamp's own cost (Cost), and
	// N how many times each phase was stamped: a call that ends its task,
	// or returns by IRET (the direct trampoline's way for a task's first
	// run), stamps only the phases it reached.
	Sums [layout.PhaseCount]uint64
	N    [layout.PhaseCount]uint64
	// Cost is the TSC cycles a stamp adds to each phase: the run's
	// stamps of one call taken back to back, nothing between them, in
	// layout.StampCalBlocks blocks of layout.StampBlockCalls, the median
	// of the blocks' means (a disturbance inflates one block, not the
	// cost). Zero in an uninstrumented run.
	Cost [layout.PhaseCount]float64
}

// Net is phase i's cycles over the run less its stamps' cost (N[i] times
// Cost[i]): the phase's own work.
func (s Stamps) Net(i int) float64 { return float64(s.Sums[i]) - float64(s.N[i])*s.Cost[i] }

// Calls is how many calls were stamped: those that reached the first
// phase's stamp.
func (s Stamps) Calls() uint64 { return s.N[0] }
