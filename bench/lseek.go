package bench

import (
	"fmt"

	"github.com/ptilab/ptilab/reference"
)

// lseekFileBytes is the size of lseek's kernel file.
const lseekFileBytes = 1 << 20

// lseek measures a real system call through the linux trampolines:
// lseek(fd, 0, SEEK_SET) on a kernel file object of the world's tasks
// kernel, by each of the world's entries, in every mode of the plan, with
// global pages off and on, and prints cycles and ns per call, operations
// per second and what global pages change (the reference: +1.72% ops/s on
// Skylake with PCID under PTI, for will-it-scale's lseek1), a row as each
// configuration finishes.
func lseek(x *Ctx) any {
	p, w, clk := x.Plan, x.World, x.Clock
	how := "linux flavour"
	if len(w.Entries()) > 1 {
		how = "linux trampolines"
	}
	x.Printf("")
	x.Printf("%slseek(fd, 0, SEEK_SET) on a kernel file, %s: %s; ± as perf; %s", w.Title(), how, repeats(p.R, p.N, p.Warmup), clk.header())
	x.Printf("%s", countersNote())
	x.Printf("%-*s%s %-6s %12s %7s %10s %14s %7s %14s%s", x.modeWidth(), "mode", entryColumn(w, "entry"), "global", clk.perCall(), "±%", "ns/call", "ops/s", "vs off", "global gain", coreColumns())
	var ms []Measurement
	for _, entry := range w.Entries() {
		for _, mode := range p.Modes {
			for _, g := range []bool{false, true} {
				c := w.TasksConfig(mode, entry)
				c.Global = g
				m := Measure(w, c, Call{Op: Lseek, File: lseekFileBytes}, p.N, p.R, p.Warmup)
				m.Bench = x.Name
				ms = append(ms, m)
				q := ratio(&m, find(ms, offOf(c)))
				head := fmt.Sprintf("%-*s%s %-6s", x.modeWidth(), mode, entryColumn(w, entry.String()), yn(g))
				ng := c
				ng.Global = false
				var nonGlobal *Measurement
				if g {
					nonGlobal = find(ms, ng)
				}
				x.lseekRow(head, &m, nonGlobal, q)
				x.measurement(m, q)
			}
		}
	}
	if w.Width() == 64 {
		x.lines(reference.Lseek())
	}
	return ms
}

// lseekRow prints a row of an lseek table: head, then cycles and ns per
// call, operations per second, the ratio to off and, for a row with
// global pages, the gain over nonGlobal's row (nil: none).
func (x *Ctx) lseekRow(head string, m, nonGlobal *Measurement, ratio float64) {
	s := m.Stats
	switch {
	case m.Unsup != nil:
		x.Printf("%s unsupported: %s", head, reasonOf(m.Unsup))
	case m.Failure != nil:
		x.Printf("%s FAILED: %v", head, m.Failure)
	default:
		gain := "-"
		if nonGlobal != nil && nonGlobal.ok() {
			gain = fmt.Sprintf("%+.2f%%", 100*(nonGlobal.Stats.Mean/s.Mean-1))
		}
		ns := x.Clock.Ns(s.Mean)
		x.Printf("%s %12.1f %7s %10.1f %14.0f %7.2f %14s%s", head, s.Mean, spread(s), ns, 1e9/ns, ratio, gain, m.Disturb.coreCells(x.Clock.Hz, m.R))
	}
}
