package tables

import (
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/reference"
)

// The system-call tables: the null call per mode, entry, flavour and
// global setting; the 32-bit linux trampoline's pt_regs copy methods and
// their phase breakdown; the work curve; lseek.

// perCallCells are a measured syscall record's figures: units per call,
// the spread, median, minimum, ns per call, the ratio to off, the ASI
// transitions per call (with the column) and the core-clock cells; with
// the PMU columns, the cross-check's status.
func (r *Renderer) perCallCells(v contract.Syscall, pmu pmuCols) []string {
	s := v.Stats
	out := append(append([]string{f1(s.Mean), spread(&s, v.R), f1(s.Median), f1(s.Min), nsCell(v.Subject, v.NsPerCall), ratioCell(s.RatioToOff)},
		r.asiCells(v.Width, v)...), coreCells(&s.Core, v.R, pmu)...)
	if pmu.on {
		out = append(out, checkCell(v.PMUCheck))
	}
	return out
}

// checkCell is a PMU cross-check's status in a cell: "ok", "MISMATCH"
// (its warning under the row), or "-" where the path has none or the
// counts are not available.
func checkCell(c *contract.PMUCheck) string {
	switch {
	case c == nil || strings.HasPrefix(c.Status, "not available"):
		return "-"
	case c.Status == "mismatch":
		return "MISMATCH"
	}
	return c.Status
}

// perCallCols head perCallCells in the tables of world width.
func (r *Renderer) perCallCols(width int, pmu pmuCols) []Column {
	cs := append(append([]Column{right(r.perCall(), 12), right("±%", 7), right("median", 12), right("min", 12), right("ns/call", 10), right("vs off", 7)},
		r.asiCols(width, "asi/call")...), coreCols(pmu)...)
	if pmu.on {
		cs = append(cs, right("pmu check", 9))
	}
	return cs
}

// nullPlace places a null-call record: the null table of its world, or
// (a linux row with another pt_regs copy than the table's) the copy
// methods' table, or (instrumented) the phase breakdown.
func (r *Renderer) nullPlace(rec contract.Record, c config, s contract.Subject) place {
	pmu := r.pmuOn()
	if r.open != nil {
		pmu = r.open.pmu
	}
	syscallCells := func() []string { return r.perCallCells(rec.(contract.Syscall), pmu) }
	n, reps, warmup := sizes(rec)
	if c.stamps {
		return r.phasesPlace(rec, c, pmu)
	}
	main, what := fmt.Sprintf("null%d", c.width), "null system call (getppid)"
	if c.bench == "getpid" { // a Linux run's libMicro getpid, its own table
		main, what = "getpid", "getpid (libMicro's null call)"
	}
	copies := fmt.Sprintf("copies%d", c.width)
	if c.isFlavour(experiment.Linux) && c.copy != "" {
		def, ok := r.defaultCopy[c.width]
		if !ok && (r.open == nil || r.open.id != copies) {
			r.defaultCopy[c.width] = c.copy
			def = c.copy
		}
		if c.copy != def || (r.open != nil && r.open.id == copies) {
			return r.copiesPlace(rec, c, s, def, pmu)
		}
	}
	return place{id: main, row: "", cells: append(append(append([]string{c.mode}, r.entryCells(c)...), c.flavour, yn(c.global)), figures(rec, syscallCells)...),
		notes: checkNotes(rec),
		begin: func(t *Table, _ []string) {
			t.Name = main
			t.Title = fmt.Sprintf("%s%s, per call: %s, empty-loop overhead subtracted;", worldTitle(c), what, repeatsOf(reps, n, warmup, "call", "calls"))
			t.Heading = []string{r.unitNote() + "; ± as perf stat --repeat (stddev of the mean); " + r.clockHeader(), r.countersNote(), r.pmuCheckNote()}
			t.Columns = append(append(append([]Column{r.modeCol()}, r.entryCols(c.width)...), left("flavour", 8), left("global", 6)), r.perCallCols(c.width, pmu)...)
		},
		ref: func(o *open) []string {
			if c.width != 64 || c.bench == "getpid" {
				return nil
			}
			out := reference.Null()
			if o.data["deferred"] == true {
				out = append(out, reference.Deferred()...)
			}
			if r.linux != nil {
				return append(out, "(a Linux run: the running kernel's own entry, with the mitigations its vulnerabilities record names)")
			}
			return append(out, "(the linux flavour has Linux's entry shape, not its speculation mitigations: no VERW, IBRS or RSB stuffing)")
		},
		mark: func(o *open) {
			if c.ok && c.cfg.Mode.Deferred() {
				o.data["deferred"] = true
			}
		},
	}
}

// copiesPlace places a row of the copy methods' table: a mode's rows
// start with its row of the null table's copy (def), reused, not
// measured again.
func (r *Renderer) copiesPlace(rec contract.Record, c config, s contract.Subject, def string, pmu pmuCols) place {
	id := fmt.Sprintf("copies%d", c.width)
	p := place{id: id, row: "",
		cells: append([]string{c.mode, c.copy}, figures(rec, func() []string { return r.perCallCells(rec.(contract.Syscall), pmu) })...),
		notes: checkNotes(rec),
		begin: func(t *Table, _ []string) {
			n, reps, warmup := sizes(rec)
			t.Name = id
			t.Title = fmt.Sprintf("%slinux %s trampoline: pt_regs copy methods, per null call: %s;", worldTitle(c), upper(c.entry), repeatsOf(reps, n, warmup, "call", "calls"))
			t.Heading = []string{r.unitNote() + "; global pages off", r.pmuCheckNote()}
			t.Columns = append([]Column{r.modeCol(), left("copy", 8)}, r.perCallCols(c.width, pmu)...)
		},
	}
	reused := map[string]bool{}
	if r.open != nil && r.open.id == id {
		reused, _ = r.open.data["reused"].(map[string]bool)
	}
	if c.copy != def && !reused[c.mode] {
		b := s
		b.Copy, b.Global, b.Stamps = def, false, false
		if old, ok := r.seen[configOf(b).key].(contract.Syscall); ok {
			p.before = append(p.before, append([]string{c.mode, def}, r.perCallCells(old, pmu)...))
		}
	}
	p.mark = func(o *open) {
		m, _ := o.data["reused"].(map[string]bool)
		if m == nil {
			m = map[string]bool{}
			o.data["reused"] = m
		}
		m[c.mode] = true
	}
	return p
}

// phasesPlace places a row of the phase breakdown: the instrumented
// trampoline's units per call in each phase and its share of the call,
// and the stamps' own cost taken out of them (logs before the stamps were
// calibrated: "-", their cost inside the phases).
func (r *Renderer) phasesPlace(rec contract.Record, c config, pmu pmuCols) place {
	id := fmt.Sprintf("phases%d", c.width)
	names := []string{"cr3_in", "copy_in", "dispatch", "copy_out", "cr3_out"}
	v, _ := rec.(contract.Syscall)
	cells := func() []string {
		call, rest := v.PhaseCall, v.PhaseCall
		share := func(x float64) string { return fmt.Sprintf("%8.1f %5.1f%%", x, 100*x/call) }
		var out []string
		for _, n := range names {
			ph := v.Phases[n]
			out = append(out, share(ph))
			rest -= ph
		}
		stamps := "-"
		if v.StampCost != nil {
			cost := 0.0
			for _, n := range names {
				cost += v.StampCost[n]
			}
			stamps, rest = share(cost), rest-cost
		}
		out = append(out, stamps, share(rest), f1(call))
		return append(out, coreCells(&v.Core, v.R, pmu)...)
	}
	return place{id: id, row: "", cells: append([]string{c.mode, c.copy}, figures(rec, cells)...),
		begin: func(t *Table, _ []string) {
			t.Name = id
			how := "MFENCE;LFENCE;RDTSC at each boundary, their own cost (calibrated in the run) taken out of the phases"
			if v.Phases != nil && v.StampCost == nil {
				how = "RDTSC at each boundary, its own cost inside the phases"
			}
			t.Title = fmt.Sprintf("phase breakdown (instrumented trampoline: %s), %s per call and %% of the call", how, r.unit(statsOf(rec)))
			t.Columns = append([]Column{r.modeCol(), left("copy", 8), right("cr3 in", 16), right("copy in", 16), right("dispatch", 16),
				right("copy out", 16), right("cr3 out", 16), right("stamps", 16), right("rest", 16), right("call", 10)}, coreCols(pmu)...)
		},
		ref: func(*open) []string {
			return []string{fmt.Sprintf("(phases over every call of the run, warm-up included; rest: %s and %s, the register saves and restores, the vsyscall routine; the entry path is the call less the dispatch)", upper(c.entry), exitOf(c.entry))}
		},
	}
}

// workPlace places a point of the work curve: a row per point, a column
// per mode (ns per call), each mode's overhead over off, and each mode's
// core clock and disturbed repeats.
func (r *Renderer) workPlace(rec contract.Record, c config) place {
	id := fmt.Sprintf("work%d", c.width)
	point := "-"
	if c.work != nil {
		point = fmt.Sprint(*c.work)
	}
	ns, vs, core := "", skipCell, ""
	switch v := rec.(type) {
	case contract.Syscall:
		ns = f1(v.NsPerCall)
		if !c.isMode(experiment.Off) {
			vs = ratioCell(v.RatioToOff)
		}
		core = coreShort(&v.Core)
	case contract.Unsupported:
		ns = "unsupported"
		if notInPAE(v.Reason) {
			ns = "not in PAE"
		}
		core = coreShort(nil)
	default:
		ns = "FAILED"
		core = coreShort(nil)
	}
	if !c.isMode(experiment.Off) && vs == skipCell {
		vs = "-"
	}
	n, reps, warmup := sizes(rec)
	return place{id: id, grid: true, mode: c.mode, row: point, size: 3,
		cells: []string{point, ns, vs, trimSpace(core)},
		begin: func(t *Table, modes []string) {
			how := "minimal flavour, no global pages"
			if c.width == 32 {
				how = upper(c.entry) + ", minimal, no global pages"
			}
			t.Name = id
			t.Title = fmt.Sprintf("%ssystem call spending a given time in the kernel (%s), ns per call: %s;", worldTitle(c), how, repeatsOf(reps, n, warmup, "call", "calls"))
			t.Heading = []string{"0 ns is the work call with nothing to do (two RDTSCs), not the null call; " + r.clockHeader(), r.countersNote()}
			t.Columns = []Column{left("work (ns)", 10)}
			for _, m := range modes {
				t.Columns = append(t.Columns, right(m, 12))
			}
			for _, m := range modes[1:] {
				t.Columns = append(t.Columns, right(m+" vs off", 14))
			}
			for _, m := range modes {
				t.Columns = append(t.Columns, right(m+" MHz, dist", 17))
			}
		},
		ref: func(*open) []string {
			if c.width == 64 {
				return reference.Work()
			}
			return nil
		},
	}
}

// lseekPlace places an lseek row: units and ns per call, operations per
// second, the ratio to off and, with global pages, the gain over the
// same configuration without them (seen before it; "-" otherwise), and
// in a plan with asi modes the ASI transitions per call.
func (r *Renderer) lseekPlace(rec contract.Record, c config, s contract.Subject) place {
	id := fmt.Sprintf("lseek%d", c.width)
	pmu := r.pmuOn()
	if r.open != nil && r.open.id == id {
		pmu = r.open.pmu
	}
	cells := func() []string {
		v := rec.(contract.Syscall)
		gain := "-"
		if c.global {
			b := s
			b.Global = false
			if base, ok := r.seen[configOf(b).key].(contract.Syscall); ok && v.Mean > 0 {
				gain = fmt.Sprintf("%+.2f%%", 100*(base.Mean/v.Mean-1))
			}
		}
		ops := fmt.Sprintf("%.0f", 1e9/v.NsPerCall)
		if v.Icount {
			ops = "-" // virtual ns make virtual operations per second
		}
		return append(append([]string{f1(v.Mean), spread(&v.Stats, v.R), nsCell(v.Subject, v.NsPerCall), ops, ratioCell(v.RatioToOff), gain},
			r.asiCells(c.width, v)...), coreCells(&v.Core, v.R, pmu)...)
	}
	n, reps, warmup := sizes(rec)
	return place{id: id, cells: append(append(append([]string{c.mode}, r.entryCells(c)...), yn(c.global)), figures(rec, cells)...),
		begin: func(t *Table, _ []string) {
			how := "linux flavour"
			if c.width == 32 {
				how = "linux trampolines"
			}
			file := "a kernel file"
			if r.linux != nil {
				how, file = "the running kernel's entry and lseek", "a file of the run's own (will-it-scale lseek1's loop)"
			}
			t.Name = id
			t.Title = fmt.Sprintf("%slseek(fd, 0, SEEK_SET) on %s, %s: %s; ± as perf; %s", worldTitle(c), file, how, repeatsOf(reps, n, warmup, "call", "calls"), r.clockHeader())
			t.Heading = []string{r.countersNote()}
			t.Columns = append(append(append([]Column{r.modeCol()}, r.entryCols(c.width)...), left("global", 6), right(r.perCall(), 12), right("±%", 7),
				right("ns/call", 10), right("ops/s", 14), right("vs off", 7), right("global gain", 14)), r.asiCols(c.width, "asi/call")...)
			t.Columns = append(t.Columns, coreCols(pmu)...)
		},
		ref: func(*open) []string {
			if c.width == 64 {
				return reference.Lseek()
			}
			return nil
		},
	}
}
