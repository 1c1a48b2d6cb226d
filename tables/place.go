package tables

import (
	"fmt"

	"github.com/ptilab/ptilab/contract"
)

// place finds rec's table and row; false for a record of no table.
func (r *Renderer) place(rec contract.Record) (place, bool) {
	switch v := rec.(type) {
	case contract.Seed, contract.SeedUnsupported:
		return r.seedPlace(rec)
	case contract.Exposure:
		return r.exposurePlace(v), true
	case contract.PerfBench:
		return r.perfBenchPlace(v), true
	case contract.Phases:
		return r.msgPhasesPlace(rec, configOf(v.Subject)), true
	case contract.Check:
		return place{}, false
	}
	s, ok := subjectOf(rec)
	if !ok {
		return place{}, false
	}
	c := configOf(s)
	switch rec.(type) {
	case contract.Syscall, contract.PingPong, contract.Messaging, contract.Probe, contract.Unsupported, contract.Error,
		contract.TLBSweep, contract.FlushCost, contract.Retention, contract.Oracle, contract.Ladder:
	default:
		return place{}, false
	}
	if s.LoopOffset != 0 {
		return r.placementPlace(rec, s)
	}
	switch c.bench {
	case "tlbsweep":
		return r.sweepPlace(rec, c), true
	case "flushcost":
		return r.flushCostPlace(rec, c), true
	case "retention":
		return r.retentionPlace(rec, c), true
	case "oracle":
		return r.oraclePlace(rec, c), true
	case "ladder":
		return r.ladderPlace(rec, c), true
	case "null", "getpid":
		return r.nullPlace(rec, c, s), true
	case "work":
		return r.workPlace(rec, c), true
	case "lseek":
		return r.lseekPlace(rec, c, s), true
	case "pingpong":
		return r.pingPongPlace(rec, c), true
	case "messaging":
		if c.stamps {
			return r.msgPhasesPlace(rec, c), true
		}
		return r.messagingPlace(rec, c), true
	case "probe":
		return r.probePlace(rec, c), true
	}
	return place{}, false
}

// sizes are a record's operations per repeat, measured repeats and
// warm-up repeats.
func sizes(rec contract.Record) (n, reps, warmup int) {
	switch v := rec.(type) {
	case contract.Syscall:
		return v.N, v.R, v.Warmup
	case contract.PingPong:
		return v.N, v.R, v.Warmup
	case contract.Messaging:
		return 0, v.R, v.Warmup
	case contract.TLBSweep:
		return v.N, v.R, v.Warmup
	case contract.Unsupported:
		return v.N, v.R, v.Warmup
	case contract.Error:
		return v.N, v.R, 0
	}
	return 0, 0, 0
}

// lead returns cells after the lead cells of a row: a measured row's
// figures, or the one cell saying why it did not run.
func figures(rec contract.Record, cells func() []string) []string {
	if why, ok := notRun(rec); ok {
		return []string{why}
	}
	return cells()
}

// checkNotes are the lines under a measured row: its PMU cross-check's
// warning.
func checkNotes(rec contract.Record) []string {
	if v, ok := rec.(contract.Syscall); ok && v.PMUCheck != nil && v.PMUCheck.Warning != "" {
		return []string{"  ! PMU cross-check mismatch: " + v.PMUCheck.Warning}
	}
	return nil
}

// half is the cells of a half row (processes or threads) of n cells: the
// figures, or why it did not run followed by empty cells it spans.
func half(rec contract.Record, n int, cells func() []string) []string {
	if why, ok := notRun(rec); ok {
		out := make([]string, n)
		out[0] = why
		return out
	}
	return cells()
}

// tasksAt is where the half of a tasks kind starts, after lead cells of
// a row whose halves are n cells.
func tasksAt(c config, lead, n int) int {
	if c.tasks == "threads" {
		return lead + n
	}
	return lead
}

func rowKey(c config, parts ...any) string { return fmt.Sprintln(append([]any{c.width}, parts...)...) }
