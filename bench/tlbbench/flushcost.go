package tlbbench

import (
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/tlb"
)

// FlushCost is the flush costs' registry row.
var FlushCost = bench.Benchmark{Name: "flushcost", Summary: "TLB flush costs in ring 0, per operation, empty loop subtracted: MOV to CR3 without PCID, with PCID and NOFLUSH, with PCID without NOFLUSH; INVLPG of a page the TLB does not hold, and of a just-used one (a load, then INVLPG: the load's page walk included); INVPCID types 0 to 3; the CR4.PGE toggle",
	Worlds: []int{64}, Keys: []string{"n", "r", "warmup"}, Run: flushCost, Optional: true}

// Flush costs: what the TLB invalidations PTI and its alternatives use
// cost in ring 0 (SDM Vol. 3A, 4.10.4.1; Vol. 2A INVLPG, INVPCID; Linux
// arch/x86/mm/tlb.c: native_flush_tlb_global toggles CR4.PGE, or uses
// INVPCID type 2 where the CPU has it). The operations, their setting and
// their timed loop are package tlb's (tlb.FlushCost).

// flushCost times each operation of tlb.FlushCost.Ops in ring 0, plan.N per
// repeat, and writes a record per operation (unsupported ones say why),
// which package tables renders; it returns units per operation by record
// name.
func flushCost(x *bench.Ctx) any {
	out := map[string]float64{}
	if x.World.Width() != 64 {
		x.Fail(contract.Error{Name: x.Name, Error: "the flush costs are measured in the 64-bit world only"})
		return out
	}
	p := x.Plan
	fc, err := tlb.NewFlushCost()
	if err != nil {
		x.Fail(contract.Error{Name: x.Name, Error: err.Error()})
		return out
	}
	loop := func(op tlb.FlushOp) []float64 {
		cycles := make([]uint64, p.Warmup+p.R)
		fc.Time(op, uint64(p.N), cycles)
		return bench.PerOp(cycles[p.Warmup:], p.N, 0)
	}
	empty := bench.Summarize(loop(tlb.FlushOp{Op: tlb.FlushEmpty})).Median

	for _, op := range fc.Ops() {
		s := x.Subject("flushcost", experiment.Config{})
		s.Mode, s.Entry, s.Flavour, s.Target = "", "", "", op.Name
		if op.Missing != "" {
			x.Record(contract.Unsupported{Subject: s, N: p.N, R: p.R, Warmup: p.Warmup, Operation: op.Title, Reason: op.Missing})
			continue
		}
		per := loop(op)
		for i := range per {
			per[i] -= empty
		}
		st := bench.Summarize(per)
		out[op.Name] = st.Mean
		rec := contract.FlushCost{Subject: s, Operation: op.Title, N: p.N, R: p.R, Warmup: p.Warmup, Unit: x.Clock.Unit(),
			PerOp:           contract.Spread{N: st.N, Mean: bench.Round(st.Mean), Stddev: bench.Round(st.Stddev), Median: bench.Round(st.Median), Min: bench.Round(st.Min), Max: bench.Round(st.Max)},
			EmptyLoopCycles: bench.Round(empty), TSCHz: x.Clock.Hz, Repeats: bench.Rounded(per)}
		if st.N >= 2 {
			pct := bench.Round(st.PerfPct())
			rec.PerfPct = &pct
		}
		x.Record(rec)
	}
	return out
}
