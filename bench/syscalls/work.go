package syscalls

import (
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/experiment"
)

// Work is the work curve's registry row, with its keys.
var Work = bench.Benchmark{Name: "work", TaskRepeats: true, Summary: "the work curve: a system call that spends 0 to 5 µs in the kernel, minimal flavour",
	Worlds: []int{64, 32}, Keys: []string{"modes", workN.Name(), workNs.Name(), "r", "warmup", "loop_offset"}, Run: workCurve}

// The work curve's plan keys: its calls per repeat and its points (ns
// spent in the kernel per call).
var (
	workN  = bench.IntKey("work_n", 200, 1, 1_000_000)
	workNs = bench.NewKey("work_ns", []int64{0, 100, 500, 2000, 5000}, func(v string) ([]int64, error) {
		var ws []int64
		for _, f := range strings.Split(v, ",") {
			n, err := bench.IntIn(strings.TrimSpace(f), "work_ns", 0, 1_000_000)
			if err != nil {
				return nil, fmt.Errorf("work_ns must be a comma-separated list of integers from 0 to 1000000")
			}
			ws = append(ws, int64(n))
		}
		return ws, nil
	})
)

// workCurve measures a system call that spends a given time in the
// kernel (the plan's work_ns points), minimal trampoline of the world's
// default entry, without global pages, under every mode of the plan, and
// records each point as it goes (package tables shows the overhead of
// isolation against the call's length, a row per length: the reference
// figures have +150% for a null call and about 6% for a 2 µs one).
func workCurve(x *bench.Ctx) any {
	p, w, clk := x.Plan, x.World, x.Clock
	entry := w.Entries()[0]
	var ms []bench.Measurement
	for _, ns := range workNs.Of(p) {
		row := make([]bench.Measurement, len(p.Modes))
		for i, mode := range p.Modes {
			m := bench.Measure(w, bench.ConfigOf(mode, entry, experiment.Minimal), bench.Call{Op: bench.Work, Arg: clk.Cycles(ns)}, workN.Of(p), p.R, p.Warmup)
			m.Bench, m.WorkNs, m.HasWork = x.Name, ns, true
			row[i] = m
		}
		base := &row[0] // modes start with off
		for i := range row {
			x.RecordMeasurement(row[i], bench.Ratio(&row[i], base))
		}
		ms = append(ms, row...)
	}
	return ms
}
