package tables

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
)

// modeWidth is the width of the mode column: the longest mode name the
// run's timing record lists (the plan's modes), at least 8, or 16 (the
// longest name, "on-noswitch+pcid") for a log written before it listed
// them.
func (r *Renderer) modeWidth() int {
	if r.timing == nil || len(r.timing.Modes) == 0 {
		return 8
	}
	w := 8
	for _, m := range r.timing.Modes {
		w = max(w, len(m))
	}
	return w
}

// modeCol is the mode column.
func (r *Renderer) modeCol() Column { return Column{Head: "mode", Width: r.modeWidth(), Left: true} }

// entryCols are the entry column of a world with several entries: the
// 32-bit one (SYSENTER and INT 0x80), and the 64-bit one when the run's
// timing record lists more than one of its entries (SYSCALL and FRED).
func (r *Renderer) entryCols(width int) []Column {
	if !r.entryColumn(width) {
		return nil
	}
	return []Column{{Head: "entry", Width: 8, Left: true}}
}

func (r *Renderer) entryCells(c config) []string {
	if !r.entryColumn(c.width) {
		return nil
	}
	return []string{c.entry}
}

// entryColumn reports whether world width's tables have an entry column.
func (r *Renderer) entryColumn(width int) bool {
	if width == 32 {
		return true
	}
	n := 0
	if r.timing != nil {
		for _, name := range r.timing.Entries {
			if e, err := experiment.ParseEntry(name); err == nil && int(e.Row().World) == width {
				n++
			}
		}
	}
	return n > 1
}

// asiColumn reports whether world width's syscall and tasks tables have
// a column of ASI transitions per operation: the run's timing record
// lists an asi mode (experiment.Mode.ASI) the world has. The plan's
// modes decide it, not the rows, because a table is headed before its
// asi rows come; a plan without asi modes has the tables it had.
func (r *Renderer) asiColumn(width int) bool {
	if r.timing == nil {
		return false
	}
	for _, name := range r.timing.Modes {
		if m, _, err := experiment.ParseModeName(name); err == nil && m.ASI() && m.In(experiment.Width(width)) {
			return true
		}
	}
	return false
}

// asiCols are the ASI transitions column of a table of world width,
// headed head ("asi/call", "asi/rt", "asi/msg"), if it has one.
func (r *Renderer) asiCols(width int, head string) []Column {
	if !r.asiColumn(width) {
		return nil
	}
	return []Column{right(head, max(len(head), 7))}
}

// asiCells are the ASI transitions column's cell of a row of world
// width, if its table has the column: rec's mean transitions per
// operation (contract.Syscall.ASIPerOp, ...) to two places
// (a sched-messaging run of 800 messages made 1682: 2.10); "-" where the
// record carries none (the other modes).
func (r *Renderer) asiCells(width int, rec interface{ ASIPerOp() (float64, bool) }) []string {
	if !r.asiColumn(width) {
		return nil
	}
	v, ok := rec.ASIPerOp()
	if !ok {
		return []string{"-"}
	}
	return []string{fmt.Sprintf("%.2f", v)}
}

// worldTitle starts the title of a table of the 32-bit world: the PAE
// kernel's, or a Linux run's 32-bit programs on its 64-bit kernel.
func worldTitle(c config) string {
	switch {
	case c.kernel == "64-compat":
		return "32-bit programs on the 64-bit Linux kernel (its compat entries): "
	case c.width == 32:
		return "32-bit PAE kernel: "
	}
	return ""
}

// globalNote says whether a table's rows ran with global pages.
func globalNote(global bool) string {
	if global {
		return "global pages"
	}
	return "no global pages"
}

// unit is what the figures count ("tsc_cycles", "instructions").
func (r *Renderer) unit(st *contract.Stats) string {
	if st != nil && st.Unit != "" {
		return st.Unit
	}
	if r.timing != nil && r.timing.Icount {
		return "instructions"
	}
	return "tsc_cycles"
}

func (r *Renderer) icount() bool { return r.timing != nil && r.timing.Icount }

// counted is insns where the TSC counts instructions, tsc where it ticks.
func (r *Renderer) counted(insns, tsc string) string {
	if r.icount() {
		return insns
	}
	return tsc
}

func (r *Renderer) perCall() string { return r.counted("insns/call", "tsc/call") }
func (r *Renderer) perMsg() string  { return r.counted("insns/msg", "tsc/msg") }

// emulatorName names the run's emulator in headings.
func (r *Renderer) emulatorName() string {
	t := r.timing
	if t == nil {
		return "an emulator"
	}
	switch t.Emulator {
	case "bochs":
		return "Bochs"
	case "qemu-tcg", "":
		if t.Icount {
			return "QEMU -icount"
		}
		return "QEMU TCG"
	}
	return t.Emulator
}

// unitNote says what the figures count.
func (r *Renderer) unitNote() string {
	return r.counted("INSTRUCTIONS ("+r.emulatorName()+": the TSC counts instructions; ns are virtual)", "TSC cycles (not core cycles)")
}

// emulatedNote is the label of an emulated run's figures, or "".
func (r *Renderer) emulatedNote() string {
	switch t := r.timing; {
	case t == nil:
		return ""
	case t.Icount:
		return "EMULATED (" + r.emulatorName() + "): path lengths, not timings"
	case t.Emulated:
		return "EMULATED (" + r.emulatorName() + "): these are not hardware timings"
	}
	return ""
}

// clockHeader is the clock's part of a heading: the TSC frequency and its
// source, and whether the figures are emulated.
func (r *Renderer) clockHeader() string {
	t := r.timing
	if t == nil {
		return "TSC: unknown (the log has no timing record)"
	}
	s := fmt.Sprintf("TSC %.3f GHz (%s)", float64(t.TSCHz)/1e9, t.TSCSource)
	if e := r.emulatedNote(); e != "" {
		s += "; " + e
	}
	return s
}

// countersNote says which counters the core-clock columns come from.
func (r *Renderer) countersNote() string {
	clock, smi := "unsupported (no APERF/MPERF)", "unsupported (no MSR_SMI_COUNT)"
	cc, sc := "", ""
	switch {
	case r.core != nil:
		cc, sc = r.core.CoreClock, r.core.SMICount
	case r.cpu != nil:
		cc, sc = r.cpu.CoreClock, r.cpu.SMICount
	}
	if cc == "aperf/mperf" {
		clock = "APERF/MPERF around every repeat"
	}
	if sc == "msr" {
		smi = "MSR_SMI_COUNT around every repeat"
	}
	if r.linux != nil {
		return "a Linux run (ptilab linux): no APERF/MPERF, SMI or NMI counts from user space; performance counters: " + r.linux.Counters
	}
	return "core clock: " + clock + "; SMIs: " + smi + "; NMIs: counted around every repeat" +
		"; dist rep: repeats an SMI or an NMI disturbed, of all (headline over the undisturbed when at least half are)"
}

// pmuCheckNote says what the PMU cross-check compares and whether it can.
func (r *Renderer) pmuCheckNote() string {
	s := "PMU cross-check (instructions retired per call less the empty loop's = the path length under QEMU -icount and Bochs, on the REP-free paths): "
	if r.linux != nil {
		s = "performance counters per call (perf_event_open; no path-length cross-check: the kernel's path is not ptilab's): "
		if r.pmuOn().on {
			return s + "the columns"
		}
	}
	if r.pmuOn().on {
		return s + "the check column; a mismatch is also printed under its row"
	}
	why := "not programmed (no benchmark has run)"
	if r.core != nil && r.core.PMU != nil && r.core.PMU.Unsupported != "" {
		why = r.core.PMU.Unsupported
	}
	return s + "not available: " + why
}

// pmuCols are a table's PMU columns: none (on false: the counters do not
// count), or instructions and core cycles per operation and the model's
// events the records count (events, by their event-list names, in
// eventOrder).
type pmuCols struct {
	on     bool
	events []string
}

// eventHeads are the short heads of the model events' columns (package
// pmu's tables: Intel's event lists for Ivy Bridge and Skylake), per
// operation; an event not here is headed by its name.
var eventHeads = map[string]string{
	"DTLB_LOAD_MISSES.WALK_COMPLETED": "dTLB walk/op",
	"ITLB_MISSES.WALK_COMPLETED":      "iTLB walk/op",
	"DTLB_LOAD_MISSES.STLB_HIT":       "dSTLB hit/op",
	"ITLB_MISSES.STLB_HIT":            "iSTLB hit/op",
	"DTLB_LOAD_MISSES.WALK_DURATION":  "dwalk cyc/op",
	"ITLB_MISSES.WALK_DURATION":       "iwalk cyc/op",
	"DTLB_LOAD_MISSES.WALK_PENDING":   "dwalk pend/op",
	"ITLB_MISSES.WALK_PENDING":        "iwalk pend/op",
}

// eventOrder is the order of the events' columns: walks, STLB hits, walk
// cycles (then any other event, by name).
var eventOrder = []string{
	"DTLB_LOAD_MISSES.WALK_COMPLETED", "ITLB_MISSES.WALK_COMPLETED", "DTLB_LOAD_MISSES.STLB_HIT", "ITLB_MISSES.STLB_HIT",
	"DTLB_LOAD_MISSES.WALK_DURATION", "ITLB_MISSES.WALK_DURATION", "DTLB_LOAD_MISSES.WALK_PENDING", "ITLB_MISSES.WALK_PENDING",
}

// fixedCounts are the fixed counters' names in PMUCounts.PerOp (bench's
// pmuFixedNames), which have columns of their own or none.
var fixedCounts = []string{"instructions", "core_cycles", "ref_cycles"}

// eventsOf are the model events counts holds, in eventOrder.
func eventsOf(counts map[string]float64) []string {
	var known, other []string
	for name := range counts {
		switch {
		case slices.Contains(fixedCounts, name):
		case slices.Contains(eventOrder, name):
			known = append(known, name)
		default:
			other = append(other, name)
		}
	}
	slices.SortFunc(known, func(a, b string) int { return slices.Index(eventOrder, a) - slices.Index(eventOrder, b) })
	slices.Sort(other)
	return append(known, other...)
}

// coreCols head the core-clock columns: the effective core clock, core
// cycles per operation, the repeats an SMI or NMI disturbed; with the
// performance counters counting, instructions and PMU core cycles per
// operation and a column per model event too.
func coreCols(pmu pmuCols) []Column {
	cs := []Column{{Head: "core MHz", Width: 8}, {Head: "core/op", Width: 10}, {Head: "dist rep", Width: 8}}
	if pmu.on {
		cs = append(cs, Column{Head: "inst/op", Width: 9}, Column{Head: "pmu cyc/op", Width: 10})
		for _, e := range pmu.events {
			h := eventHeads[e]
			if h == "" {
				h = e
			}
			cs = append(cs, Column{Head: h, Width: max(len(h), 9)})
		}
	}
	return cs
}

// coreCells are c's core-clock cells for r measured repeats: "-" where a
// counter is unsupported.
func coreCells(c *contract.Core, r int, pmu pmuCols) []string {
	mhz, core, dist := "-", "-", "-"
	if c != nil && c.CoreMHz != 0 {
		mhz = fmt.Sprintf("%.0f", c.CoreMHz)
		core = fmt.Sprintf("%.1f", c.CoreMean)
	}
	if c != nil && c.Sampled != "" {
		dist = fmt.Sprintf("%d/%d", c.Disturbed, r)
	}
	out := []string{mhz, core, dist}
	if pmu.on {
		cell := func(name string) string {
			if c == nil || c.PMU == nil || c.PMU.PerOp == nil {
				return "-"
			}
			v, ok := c.PMU.PerOp[name]
			if !ok {
				return "-"
			}
			return fmt.Sprintf("%.1f", v)
		}
		out = append(out, cell("instructions"), cell("core_cycles"))
		for _, e := range pmu.events {
			out = append(out, cell(e))
		}
	}
	return out
}

// coreShort is c's core clock and disturbed repeats in one cell: "3400
// MHz 0", "- MHz 0" for an unsupported core clock, "-" when neither is
// known; the disturbed repeats of all (those disturbed and those not).
func coreShort(c *contract.Core) string {
	mhz, dist := "-", "-"
	if c != nil && c.CoreMHz != 0 {
		mhz = fmt.Sprintf("%.0f", c.CoreMHz)
	}
	if c != nil && c.Sampled != "" {
		all := c.Disturbed
		if c.Undisturbed != nil {
			all += c.Undisturbed.N
		}
		dist = fmt.Sprintf("%d/%d", c.Disturbed, all)
		if c.Disturbed == 0 {
			dist = "0"
		}
	}
	if mhz == "-" && dist == "-" {
		return "-"
	}
	return fmt.Sprintf("%5s MHz %s", mhz, dist)
}

// spread is the perf-style ± of st over r repeats; with one repeat there
// is none.
func spread(st *contract.Stats, r int) string {
	if r < 2 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", st.PerfPct)
}

// ratioCell is a ratio to off, or "-" where there is none.
func ratioCell(q float64) string {
	if q == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", q)
}

// reason is an unsupported record's reason without the configuration's
// key the image puts first ("width=64 mode=on+pcid entry=syscall
// flavour=minimal global=on: PCID: not supported by this CPU" is "PCID:
// not supported by this CPU").
func reason(s string) string {
	if i := strings.Index(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// notRun is the cell of a configuration that did not run: "unsupported:
// reason" or "FAILED: error", or false for a measured one.
func notRun(rec contract.Record) (string, bool) {
	switch v := rec.(type) {
	case contract.Unsupported:
		return "unsupported: " + reason(v.Reason), true
	case contract.SeedUnsupported:
		return "unsupported: " + reason(v.Reason), true
	case contract.Error:
		return "FAILED: " + v.Error, true
	}
	return "", false
}

// repeatsOf describes r repeats of n operations (one, many: their name)
// after warmup repeats.
func repeatsOf(r, n, warmup int, one, many string) string {
	return fmt.Sprintf("%s of %s after %s", plural(r, "repeat", "repeats"), plural(n, one, many), plural(warmup, "warm-up repeat", "warm-up repeats"))
}

// runs describes r runs after warmup warm-up runs.
func runs(r, warmup int) string {
	return fmt.Sprintf("%s after %s", plural(r, "run", "runs"), plural(warmup, "warm-up run", "warm-up runs"))
}

func plural(k int, one, many string) string {
	if k == 1 {
		return fmt.Sprintf("%d %s", k, one)
	}
	return fmt.Sprintf("%d %s", k, many)
}

func f1(x float64) string { return fmt.Sprintf("%.1f", x) }

// nsCell is a figure's ns per operation, or "-" where the TSC counted
// instructions (QEMU -icount, Bochs): nanoseconds of an emulator's
// 100 MHz "TSC" are not a time (150 ns for 15 instructions).
func nsCell(s contract.Subject, ns float64) string {
	if s.Icount {
		return "-"
	}
	return f1(ns)
}

func yn(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// left and right make columns.
func left(head string, w int) Column  { return Column{Head: head, Width: w, Left: true} }
func right(head string, w int) Column { return Column{Head: head, Width: w} }

// entryRow is the row of the entry named entry (experiment.EntryRow),
// the zero row for no entry.
func entryRow(entry string) experiment.EntryRow {
	e, err := experiment.ParseEntry(entry)
	if err != nil {
		return experiment.EntryRow{}
	}
	return e.Row()
}

// upper is an entry's instruction in headings ("SYSENTER", "INT 0x80").
func upper(entry string) string { return entryRow(entry).Instruction }

// exitOf names an entry's way back ("SYSEXIT", "SYSRETQ", "IRET").
func exitOf(entry string) string { return entryRow(entry).Return }

// notInPAE reports whether an unsupported reason says PAE paging cannot
// have the configuration: records carry the error's text
// (experiment.ErrNotInPAE), not its kind.
func notInPAE(reason string) bool { return strings.Contains(reason, experiment.ErrNotInPAE.Error()) }

func trimSpace(s string) string { return strings.TrimSpace(s) }
