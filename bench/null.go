package bench

import (
	"fmt"
	"slices"

	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/reference"
)

// The null system call (getppid) under each isolation mode: the figure the
// Linux threads measured at 0.079 µs without PTI and 0.203 µs with it.

// nullConfigs lists the null call's configurations in w: the plan's
// modes outermost, then w's entries, the flavours (linux with w's default
// copy) and the global settings.
func nullConfigs(w World, p Plan) []experiment.Config {
	var cs []experiment.Config
	for _, m := range p.Modes {
		for _, e := range w.Entries() {
			for _, f := range p.Flavours {
				for _, g := range p.Globals {
					c := config(m, e, f)
					c.Global = g
					cs = append(cs, c)
				}
			}
		}
	}
	return cs
}

// entryColumn is the entry's column of a table of a world with several
// entries, and nothing in one with one.
func entryColumn(w World, e string) string {
	if len(w.Entries()) < 2 {
		return ""
	}
	return fmt.Sprintf(" %-8s", e)
}

// nullSyscall measures the null call in every configuration of the plan
// and prints the table as it goes, a row per configuration: cycles and ns
// per call, the spread, and the ratio to PTI off with the same entry,
// flavour and global pages. In a world with copy methods it then measures
// those (copyMethods).
func nullSyscall(x *Ctx) any {
	p, w, clk := x.Plan, x.World, x.Clock
	x.Printf("")
	x.Printf("%snull system call (getppid), per call: %s, empty-loop overhead subtracted;", w.Title(), repeats(p.R, p.N, p.Warmup))
	x.Printf("%s; ± as perf stat --repeat (stddev of the mean); %s", clk.unitNote(), clk.header())
	x.Printf("%s", countersNote())
	x.Printf("%s", pmuCheckNote())
	x.Printf("%-*s%s %-8s %-6s %12s %7s %12s %12s %10s %7s%s", x.modeWidth(), "mode", entryColumn(w, "entry"), "flavour", "global", clk.perCall(), "±%", "median", "min", "ns/call", "vs off", coreColumns())
	var ms []Measurement
	for _, c := range nullConfigs(w, p) {
		m := Measure(w, c, Call{Op: Getppid}, p.N, p.R, p.Warmup)
		m.Bench = x.Name
		ms = append(ms, m)
		q := ratio(&m, find(ms, offOf(c)))
		x.row(fmt.Sprintf("%-*s%s %-8s %-6s", x.modeWidth(), c.Mode, entryColumn(w, c.Entry.String()), c.Flavour, yn(c.Global)), &m, q)
		x.measurement(m, q)
	}
	if w.Width() == 64 {
		x.lines(reference.Null())
		if slices.ContainsFunc(p.Modes, experiment.Mode.Deferred) {
			x.lines(reference.Deferred())
		}
		x.Printf("(the linux flavour has Linux's entry shape, not its speculation mitigations: no VERW, IBRS or RSB stuffing)")
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
// pages off, and prints the table: the Linux thread found that REP MOVSL
// for REP MOVSB and the trimmed exit copy barely helped, the CR3 switch
// dominating. Then the instrumented trampolines' phase breakdown: cycles
// per call in each phase (the CR3 switch in, the copy in, the dispatch,
// the copy out, the CR3 switch out) and their shares of the whole call, so
// that the "25% of cycles in entry_SYSENTER_32 with PTI" finding can be
// read off: the entry path is everything but the dispatch.
//
// A configuration measured already in have (the null table's linux rows
// with the default copy) is reused, not measured and recorded again.
func copyMethods(x *Ctx, have []Measurement) []Measurement {
	p, w, clk := x.Plan, x.World, x.Clock
	entry := w.Entries()[0]
	var ms []Measurement
	x.Printf("")
	x.Printf("%slinux %s trampoline: pt_regs copy methods, per null call: %s;", w.Title(), entry.Row().Instruction, repeats(p.R, p.N, p.Warmup))
	x.Printf("%s; global pages off", clk.unitNote())
	x.Printf("%s", pmuCheckNote())
	x.Printf("%-*s %-8s %12s %7s %12s %12s %10s %7s%s", x.modeWidth(), "mode", "copy", clk.perCall(), "±%", "median", "min", "ns/call", "vs off", coreColumns())
	for _, stamps := range []bool{false, true} {
		if stamps {
			x.Printf("")
			x.Printf("phase breakdown (instrumented trampoline: RDTSC at each boundary, its own cost inside the phases), %s per call and %% of the call", clk.Unit())
			x.Printf("%-*s %-8s %16s %16s %16s %16s %16s %16s %10s%s", x.modeWidth(), "mode", "copy", "cr3 in", "copy in", "dispatch", "copy out", "cr3 out", "rest", "call", coreColumns())
		}
		for _, mode := range p.Modes {
			if isNotInWorld(config(mode, entry, experiment.Minimal)) {
				continue // the null table says so
			}
			for _, cp := range w.Copies() {
				c := config(mode, entry, experiment.Linux)
				c.Copy, c.Stamps = cp, stamps
				var m Measurement
				old := find(have, c)
				if old != nil {
					m = *old
				} else {
					m = Measure(w, c, Call{Op: Getppid}, p.N, p.R, p.Warmup)
					m.Bench = x.Name
				}
				ms = append(ms, m)
				q := ratio(&m, find(ms, offOf(c)))
				head := fmt.Sprintf("%-*s %-8s", x.modeWidth(), mode, cp)
				if !stamps || !m.ok() {
					x.row(head, &m, q)
				} else {
					line := head
					call := m.PhaseCall
					rest := call
					for _, ph := range m.Phases {
						line += fmt.Sprintf(" %8.1f %5.1f%%", ph, 100*ph/call)
						rest -= ph
					}
					line += fmt.Sprintf(" %8.1f %5.1f%% %10.1f%s", rest, 100*rest/call, call, m.Disturb.coreCells(clk.Hz, m.R))
					x.Printf("%s", line)
				}
				if old == nil {
					x.measurement(m, q)
				}
			}
		}
	}
	x.Printf("(phases over every call of the run, warm-up included; rest: %s and %s, the register saves and restores, the vsyscall routine; the entry path is the call less the dispatch)", entry.Row().Instruction, entry.Row().Return)
	return ms
}
