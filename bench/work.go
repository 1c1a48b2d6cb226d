package bench

import "github.com/ptilab/ptilab/experiment"

// workCurve measures a system call that spends a given time in the
// kernel (the plan's work_ns points), minimal trampoline of the world's
// default entry, without global pages, under every mode of the plan, and
// records each point as it goes (package tables shows the overhead of
// isolation against the call's length, a row per length: the reference
// figures have +150% for a null call and about 6% for a 2 µs one).
func workCurve(x *Ctx) any {
	p, w, clk := x.Plan, x.World, x.Clock
	entry := w.Entries()[0]
	var ms []Measurement
	for _, ns := range p.WorkNs {
		row := make([]Measurement, len(p.Modes))
		for i, mode := range p.Modes {
			m := Measure(w, config(mode, entry, experiment.Minimal), Call{Op: Work, Arg: clk.Cycles(ns)}, p.WorkN, p.R, p.Warmup)
			m.Bench, m.WorkNs, m.HasWork = x.Name, ns, true
			row[i] = m
		}
		base := &row[0] // modes start with off
		for i := range row {
			x.measurement(row[i], ratio(&row[i], base))
		}
		ms = append(ms, row...)
	}
	return ms
}
