package bench

import (
	"fmt"
	"math/big"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/pathlength"
)

// The PMU cross-check (issue 13, item 2): on a path whose length is exact
// (pathlength.Path.Exact: no REP string instruction, no branch on the
// CPU's features, no Go code), the instructions the CPU retires per call
// must equal the instructions QEMU -icount shift=0 and Bochs count.
//
// Both sides are taken alike. The emulators' figure is the TSC difference
// of a repeat of n calls (RDTSC to RDTSCP, which count instructions
// there) over n, less the empty loop's: the loop's own instructions and
// the repeat's boundary cancel, leaving the call's path. The PMU's
// figure is fixed counter 0's delta between the sample calls around a
// repeat (pmuState.perOp's, which also counts the sample call's own path
// and the RDTSC boundary: K instructions per repeat) over n, less the
// same for the empty loop, whose repeats make the same sample call
// through the same entry (so the same K): a repeat of calls retires
// n*(C+L)+K, one of the empty loop n*L+K, and the difference per call is
// C, the path, an integer.
//
// Tolerance: none. Over rc undisturbed repeats of the calls (sum Sc) and
// re of the empty loop (sum Se), Sc*re - Se*rc - C*n*rc*re is an integer,
// 0 when every repeat retired what the path says; one instruction more or
// less anywhere makes it nonzero, a difference of at least 1/(n*rc*re) per
// call. The comparison is made in integers. What could add instructions
// to a repeat is kept out: interrupts are masked while the loops run;
// NMIs and SMIs are counted around every repeat (the NMI count always,
// MSR_SMI_COUNT where the CPU has it) and the repeats they disturbed are
// left out; where IA32_PERF_CAPABILITIES[12] allows, startPMU also sets
// IA32_DEBUGCTL.FREEZE_WHILE_SMM, so that an SMI's handler is not
// counted even where no SMI count shows it; a page fault (which counts one more instruction, V. Weaver's
// notes) does not happen on these paths, whose pages are touched in the
// warm-up.

// notAvailable prefixes a PMUCheck's status when nothing could be compared.
const notAvailable = "not available: "

// xcheckIn are a measurement's counter deltas for the cross-check: its
// measured repeats' (calls) and its empty loop's (empty), one per repeat,
// nil when not sampled around every repeat.
type xcheckIn struct {
	calls, empty []cpustate.Sample
}

// xcheckOf takes the per-repeat deltas of a measurement's loops, samples
// as Loop.Samples, warmup+r repeats each.
func xcheckOf(calls, empty []cpustate.Sample, r, warmup int) xcheckIn {
	var in xcheckIn
	if d, how := repeatDeltas(calls, r, warmup); how == sampledRepeat {
		in.calls = d
	}
	if d, how := repeatDeltas(empty, r, warmup); how == sampledRepeat {
		in.empty = d
	}
	return in
}

// slot is the Sample.PMC slot counting name, -1 when none does.
func (st *pmuState) slot(name string) int {
	for i, n := range st.names {
		if n == name {
			return i
		}
	}
	return -1
}

// instructions sums slot i's deltas (masked to the counter's width, as
// perOp) over the repeats no SMI or NMI disturbed, and counts them.
func (st *pmuState) instructions(deltas []cpustate.Sample, i int) (sum *big.Int, repeats int) {
	sum = new(big.Int)
	for _, d := range deltas {
		if d.Disturbed() {
			continue
		}
		sum.Add(sum, new(big.Int).SetUint64(st.counts(d.PMC)[i]))
		repeats++
	}
	return sum, repeats
}

// check is the cross-check of a figure of subject s, n calls per repeat:
// nil when s's path has no exact length.
func (st *pmuState) check(s contract.Subject, n int, in xcheckIn) *contract.PMUCheck {
	want, ok := pathlength.Exact(s.Key())
	if !ok {
		return nil
	}
	c := &contract.PMUCheck{Expected: want}
	slot := st.slot(pmuFixedNames[0])
	switch {
	case !st.on:
		c.Status = notAvailable + st.reason
	case slot < 0:
		c.Status = notAvailable + "fixed counter 0 (INST_RETIRED.ANY) is not counted"
	case n <= 0 || in.calls == nil || in.empty == nil:
		c.Status = notAvailable + "not sampled around every repeat"
	}
	if c.Status != "" {
		return c
	}
	sc, rc := st.instructions(in.calls, slot)
	se, re := st.instructions(in.empty, slot)
	c.Repeats, c.EmptyRepeats = rc, re
	if rc == 0 || re == 0 {
		c.Status = notAvailable + "every repeat of a loop was disturbed (an SMI or an NMI)"
		return c
	}
	// Sc*re - Se*rc against C*n*rc*re.
	lhs := new(big.Int).Mul(sc, big.NewInt(int64(re)))
	lhs.Sub(lhs, new(big.Int).Mul(se, big.NewInt(int64(rc))))
	rhs := big.NewInt(want)
	rhs.Mul(rhs, big.NewInt(int64(n)*int64(rc)*int64(re)))
	fc, _ := new(big.Float).SetInt(sc).Float64()
	fe, _ := new(big.Float).SetInt(se).Float64()
	c.Measured = round(fc/float64(n*rc) - fe/float64(n*re))
	if lhs.Cmp(rhs) == 0 {
		c.Status = "ok"
		return c
	}
	c.Status = "mismatch"
	c.Warning = fmt.Sprintf("validity warning: the CPU retired %.3f instructions per call (less the empty loop's), the path is %d under QEMU -icount and Bochs: this figure's PMU counts may not mean what they say", c.Measured, want)
	return c
}

// pmuCheckNote says, under a null-call table's heading, what the
// cross-check compares and whether it can.
func pmuCheckNote() string {
	s := "PMU cross-check (instructions retired per call less the empty loop's = the path length under QEMU -icount and Bochs, on the REP-free paths): "
	if !pmuNow.on {
		return s + notAvailable + pmuNow.reason
	}
	return s + "a mismatch is printed under its row"
}

// pmuCheck is m's cross-check (nil on a path without an exact length).
func (x *Ctx) pmuCheck(m Measurement) *contract.PMUCheck {
	return pmuNow.check(x.subject(m.Bench, m.Config), m.N, m.xcheck)
}
