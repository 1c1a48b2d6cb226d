// Package syscalls holds the benchmark family of system-call loops: the
// null call (getppid), the work curve and lseek, each timed in a ring-3
// loop by the engine's Measure in both worlds, and the work curve's plan
// keys.
package syscalls

import (
	"slices"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/experiment"
)

// Null is the null call's registry row.
var Null = bench.Benchmark{Name: "null", TaskRepeats: true, Summary: "the null system call (getppid) under each mode, flavour and global setting; in the 32-bit world by SYSENTER and INT 0x80, and with the linux flavour also the pt_regs copy methods and the phase breakdown",
	Worlds: []int{64, 32}, Keys: []string{"modes", "asi_actions", "entries", "flavours", "global", "n", "r", "warmup", "loop_offset"}, Run: nullSyscall}

// The null system call (getppid) under each isolation mode: the figure the
// Linux threads measured at 0.079 µs without PTI and 0.203 µs with it.

// nullConfigs lists the null call's configurations in w: the plan's
// modes outermost, then w's entries, the flavours (linux with w's default
// copy), the global settings and, in an asi mode, the plan's asi actions.
func nullConfigs(w bench.World, p bench.Plan) []experiment.Config {
	var cs []experiment.Config
	for _, m := range p.Modes {
		for _, e := range p.EntriesOf(w) {
			for _, f := range p.Flavours {
				for _, g := range p.Globals {
					c := bench.ConfigOf(m, e, f)
					c.Global = g
					cs = append(cs, p.ConfigsOf(c)...)
				}
			}
		}
	}
	return cs
}

// nullSyscall measures the null call in every configuration of the plan
// and records each as it goes (package tables makes the table, a row per
// configuration: cycles and ns per call, the spread, and the ratio to PTI
// off with the same entry, flavour and global pages). In a world with
// copy methods it then measures those (copyMethods).
func nullSyscall(x *bench.Ctx) any {
	p, w := x.Plan, x.World
	var ms []bench.Measurement
	for _, c := range nullConfigs(w, p) {
		m := bench.Measure(w, c, bench.Call{Op: bench.Getppid}, p.N, p.R, p.Warmup)
		m.Bench = x.Name
		ms = append(ms, m)
		x.RecordMeasurement(m, bench.Ratio(&m, bench.Find(ms, bench.OffOf(c))))
	}
	if len(w.Copies()) > 0 && slices.Contains(p.Flavours, experiment.Linux) {
		copyMethods(x, ms)
	}
	return ms
}

// copyMethods measures the linux trampoline of the world's default entry
// with each way of copying pt_regs (in the 32-bit world: REP MOVSL, REP
// MOVSB, the exit copy trimmed to 8 bytes, and Linux 4.19's shape: no copy
// in, the trimmed exit), under the plan's modes the world has, global
// pages off, and records them: the Linux thread found that REP MOVSL
// for REP MOVSB and the trimmed exit copy barely helped, the CR3 switch
// dominating. Then the instrumented trampolines' phase breakdown: cycles
// per call in each phase (the CR3 switch in, the copy in, the dispatch,
// the copy out, the CR3 switch out) and their shares of the whole call, so
// that the "25% of cycles in entry_SYSENTER_32 with PTI" finding can be
// read off: the entry path is everything but the dispatch.
//
// A configuration measured already in have (the null table's linux rows
// with the default copy) is reused, not measured and recorded again.
func copyMethods(x *bench.Ctx, have []bench.Measurement) []bench.Measurement {
	p, w := x.Plan, x.World
	entry := w.Entries()[0]
	var ms []bench.Measurement
	for _, stamps := range []bool{false, true} {
		for _, mode := range p.Modes {
			if bench.NotInWorld(bench.ConfigOf(mode, entry, experiment.Minimal)) {
				continue // the null table says so
			}
			for _, cp := range w.Copies() {
				c := bench.ConfigOf(mode, entry, experiment.Linux)
				c.Copy, c.Stamps = cp, stamps
				var m bench.Measurement
				old := bench.Find(have, c)
				if old != nil {
					m = *old
				} else {
					m = bench.Measure(w, c, bench.Call{Op: bench.Getppid}, p.N, p.R, p.Warmup)
					m.Bench = x.Name
				}
				ms = append(ms, m)
				if old == nil {
					x.RecordMeasurement(m, bench.Ratio(&m, bench.Find(ms, bench.OffOf(c))))
				}
			}
		}
	}
	return ms
}
