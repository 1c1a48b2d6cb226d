package bench

import (
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/reference"
)

// workCurve measures a system call that spends a given time in the
// kernel (the plan's work_ns points), minimal trampoline of the world's
// default entry, without global pages, under every mode of the plan, and
// prints the overhead of isolation against the call's length, a row per
// length as it goes: the reference figures have +150% for a null call and
// about 6% for a 2 µs one.
func workCurve(x *Ctx) any {
	p, w, clk := x.Plan, x.World, x.Clock
	entry := w.Entries()[0]
	how := "minimal flavour, no global pages"
	if len(w.Entries()) > 1 {
		how = entry.Row().Instruction + ", minimal, no global pages"
	}
	x.Printf("")
	x.Printf("%ssystem call spending a given time in the kernel (%s), ns per call: %s;", w.Title(), how, repeats(p.R, p.WorkN, p.Warmup))
	x.Printf("0 ns is the work call with nothing to do (two RDTSCs), not the null call; %s", clk.header())
	hdr := fmt.Sprintf("%-10s", "work (ns)")
	for _, mode := range p.Modes {
		hdr += fmt.Sprintf(" %12s", mode)
	}
	for _, mode := range p.Modes[1:] {
		hdr += fmt.Sprintf(" %14s", mode.String()+" vs off")
	}
	for _, mode := range p.Modes {
		hdr += fmt.Sprintf(" %17s", mode.String()+" MHz, dist")
	}
	x.Printf("%s", countersNote())
	x.Printf("%s", hdr)
	var ms []Measurement
	for _, ns := range p.WorkNs {
		row := make([]Measurement, len(p.Modes))
		for i, mode := range p.Modes {
			m := Measure(w, config(mode, entry, experiment.Minimal), Call{Op: Work, Arg: clk.Cycles(ns)}, p.WorkN, p.R, p.Warmup)
			m.Bench, m.WorkNs, m.HasWork = x.Name, ns, true
			row[i] = m
		}
		line := fmt.Sprintf("%-10d", ns)
		for _, m := range row {
			switch {
			case m.Unsup != nil:
				line += fmt.Sprintf(" %12s", unsupportedText(m.Unsup))
			case m.Failure != nil:
				line += fmt.Sprintf(" %12s", "FAILED")
			default:
				line += fmt.Sprintf(" %12.1f", clk.Ns(m.Stats.Mean))
			}
		}
		base := &row[0] // modes start with off
		for i := range row[1:] {
			if q := ratio(&row[1+i], base); q > 0 {
				line += fmt.Sprintf(" %+13.1f%%", 100*(q-1))
			} else {
				line += fmt.Sprintf(" %14s", "-")
			}
		}
		for _, m := range row {
			line += fmt.Sprintf(" %17s", strings.TrimSpace(m.Disturb.coreShort(clk.Hz)))
		}
		x.Printf("%s", line)
		for i := range row {
			x.measurement(row[i], ratio(&row[i], base))
		}
		ms = append(ms, row...)
	}
	if w.Width() == 64 {
		x.lines(reference.Work())
	}
	return ms
}
