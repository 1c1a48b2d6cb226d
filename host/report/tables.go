package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/reference"
)

// Table is a table of a report: its name (a short key: "null64",
// "seed-null", ...), title, column heads, rows of cells as printed, and
// the lines under it: the reference figure as the image prints it (or
// why there is none), then notes (why configurations did not run).
type Table struct {
	Name      string     `json:"name"`
	Title     string     `json:"title"`
	Columns   []string   `json:"columns"`
	Rows      [][]string `json:"rows"`
	Reference []string   `json:"reference,omitempty"`
	Notes     []string   `json:"notes,omitempty"`
}

// Measurement is a benchmark's configuration as a run recorded it: a
// measured figure (a syscall, pingpong or messaging record), or one that
// did not run (an unsupported or error record), with its record.
type Measurement struct {
	contract.Subject
	// Stats and R are the figure and its repeats; Stats is nil when the
	// configuration did not run.
	Stats *contract.Stats
	R     int
	// Ns is the figure's mean in ns per operation (per call, per round
	// trip, per sched-messaging run).
	Ns float64
	// NotRun is "unsupported" or "FAILED" when it did not run, and Why
	// the reason (its configuration's name left out).
	NotRun, Why string
	Record      Record
}

// Measurements returns the run's benchmark figures and the configurations
// that did not run, in output order.
func (r *Run) Measurements() []Measurement {
	var out []Measurement
	for _, rec := range r.Records {
		var m Measurement
		switch v := rec.Record.(type) {
		case contract.Syscall:
			m = Measurement{Subject: v.Subject, Stats: &v.Stats, R: v.R, Ns: v.NsPerCall}
		case contract.PingPong:
			m = Measurement{Subject: v.Subject, Stats: &v.Stats, R: v.R, Ns: v.NsPerRoundTrip}
		case contract.Messaging:
			m = Measurement{Subject: v.Subject, Stats: &v.Stats, R: v.R, Ns: v.Seconds * 1e9}
		case contract.TLBSweep:
			m = Measurement{Subject: v.Subject, Stats: &v.Stats, R: v.R, Ns: v.NsPerCall}
		case contract.Unsupported:
			m = Measurement{Subject: v.Subject, NotRun: "unsupported", Why: reason(v.Reason)}
		case contract.Error:
			if v.Subject == nil {
				continue
			}
			m = Measurement{Subject: *v.Subject, NotRun: "FAILED", Why: v.Name + ": " + v.Error}
		default:
			continue
		}
		m.Record = rec
		out = append(out, m)
	}
	return out
}

// Report is what `ptilab report` prints of a run: where it came from, the
// machine line, how the run ended, and the tables.
type Report struct {
	Source   string  `json:"source"`
	Machine  string  `json:"machine"`
	Status   string  `json:"status"`
	CutShort bool    `json:"cut_short"`
	Tables   []Table `json:"tables"`
	Records  struct {
		Machine *contract.Machine `json:"machine,omitempty"`
		Timing  *contract.Timing  `json:"timing,omitempty"`
		End     *contract.End     `json:"end,omitempty"`
	} `json:"records"`
}

// Build makes a run's report: the machine line, the status, and the
// seed-shaped tables the run has figures for (the null call per mode and
// flavour, the 32-bit vs 64-bit null call and sched-messaging, lseek with
// the global-page gain, the work curve, ping-pong, sched-messaging, the
// mitigation ladder), each
// with the reference figure under it as the image prints it.
func Build(r *Run) Report {
	rep := Report{Source: r.Source, Machine: MachineLine(r), Status: StatusLine(r), CutShort: r.CutShort()}
	rep.Records.Machine, rep.Records.Timing, rep.Records.End = r.Machine, r.Timing, r.End
	ms := r.Measurements()
	unit := unitOf(ms)
	for _, width := range []int{64, 32} {
		add(&rep.Tables, nullTable(ms, width, unit))
	}
	add(&rep.Tables, seedTable(r, "null", []string{"minimal", "linux"}, unit))
	add(&rep.Tables, seedTable(r, "messaging", []string{"processes", "threads"}, unit))
	add(&rep.Tables, lseekTable(ms, unit))
	for _, width := range []int{64, 32} {
		add(&rep.Tables, workTable(ms, width))
	}
	add(&rep.Tables, pingPongTable(ms, unit))
	for _, width := range []int{64, 32} {
		add(&rep.Tables, messagingTable(ms, width, unit))
	}
	for _, kind := range sweepKinds(ms) {
		add(&rep.Tables, sweepTable(ms, kind, unit))
	}
	add(&rep.Tables, flushCostTable(r))
	add(&rep.Tables, retentionTable(r))
	add(&rep.Tables, probeTable(r))
	add(&rep.Tables, exposureTable(r))
	add(&rep.Tables, oracleTable(r))
	add(&rep.Tables, ladderTable(r, unit, "ladder"))
	add(&rep.Tables, ladderTable(r, unit, "ladder32"))
	return rep
}

// add appends t to ts if it has rows.
func add(ts *[]Table, t Table) {
	if len(t.Rows) > 0 {
		*ts = append(*ts, t)
	}
}

// unitOf is the unit of the run's figures ("tsc_cycles" or
// "instructions"), or "units" when it has none.
func unitOf(ms []Measurement) string {
	for _, m := range ms {
		if m.Stats != nil && m.Stats.Unit != "" {
			return m.Stats.Unit
		}
	}
	return "units"
}

// MachineLine identifies the run's machine in one line: the CPU, its
// microcode, the TSC, the features PTI's modes need, the firmware, and
// whether the figures are emulated.
func MachineLine(r *Run) string {
	m := r.Machine
	if m == nil {
		return "machine: unknown (the log has no machine record)"
	}
	s := fmt.Sprintf("machine: %s %s, family %d model 0x%x stepping %d", m.Vendor, strings.TrimSpace(m.Brand), m.Family, m.Model, m.Stepping)
	if m.Microcode != nil {
		s += fmt.Sprintf(", microcode 0x%x", *m.Microcode)
	}
	inv := "not invariant"
	if m.TSCInvariant {
		inv = "invariant"
	}
	s += fmt.Sprintf("; TSC %.3f GHz (%s, %s)", float64(m.TSCHz)/1e9, m.TSCSource, inv)
	var feats []string
	for _, f := range []struct {
		name string
		on   bool
	}{{"PCID", m.PCID}, {"INVPCID", m.INVPCID}, {"PGE", m.PGE}, {"SMEP", m.SMEP}, {"SMAP", m.SMAP}, {"RDTSCP", m.RDTSCP}} {
		if f.on {
			feats = append(feats, f.name)
		} else {
			feats = append(feats, "no "+f.name)
		}
	}
	s += "; " + strings.Join(feats, " ")
	s += fmt.Sprintf("; %d MiB RAM; firmware %s 0x%x; board %s", m.RAMBytes>>20, m.FirmwareVendor, m.FirmwareRevision, m.Board)
	switch {
	case m.Emulator != "":
		s += "; EMULATED (" + m.Emulator + "): the figures say nothing about hardware"
	case r.Emulated():
		s += "; EMULATED: the figures say nothing about hardware"
	default:
		s += "; hardware"
	}
	if r.Timing != nil && r.Timing.Icount {
		s += "; the TSC counted instructions"
	}
	if a := contract.RetentionAnswers(records(r)); len(a) > 0 {
		s += "; TLB retention: " + contract.RetentionSummary(a)
	}
	return s
}

// records are the run's records as package contract's.
func records(r *Run) []contract.Record {
	out := make([]contract.Record, len(r.Records))
	for i, rec := range r.Records {
		out[i] = rec.Record
	}
	return out
}

// StatusLine says how the run ended: its PTILAB-END line's status and
// counts, or that the log was cut short and what it holds.
func StatusLine(r *Run) string {
	var unknown string
	if len(r.Unknown) > 0 {
		var ks []string
		for k, n := range r.Unknown {
			ks = append(ks, fmt.Sprintf("%d %q", n, k))
		}
		slices.Sort(ks)
		unknown = "; records of kinds this tool does not know, left out: " + strings.Join(ks, ", ")
	}
	measured, notRun := 0, 0
	for _, m := range r.Measurements() {
		if m.Stats != nil {
			measured++
		} else {
			notRun++
		}
	}
	if r.End == nil {
		last := "none"
		if n := len(r.Records); n > 0 {
			rec := r.Records[n-1]
			last = fmt.Sprintf("%s, on line %d", rec.Kind(), rec.Line)
			if k, ok := rec.Record.(interface{ Key() string }); ok {
				last = fmt.Sprintf("%s of %s, on line %d", rec.Kind(), k.Key(), rec.Line)
			}
		}
		return fmt.Sprintf("CUT SHORT: no PTILAB-END line; the log holds %d lines, %d records (%d figures, %d configurations not run); the last record: %s%s",
			r.Lines, len(r.Records), measured, notRun, last, unknown)
	}
	e := r.End
	s := fmt.Sprintf("run: PTILAB-END status %q (exit %d), %d records (%d figures, %d configurations not run), %d of %d checks passed",
		e.Status, e.Exit, len(r.Records), measured, notRun, e.Passed, e.Checks)
	if len(e.Failed) > 0 {
		s += "; failed: " + strings.Join(e.Failed, ", ")
	}
	if e.ElapsedMs > 0 {
		s += fmt.Sprintf("; %.1f s", float64(e.ElapsedMs)/1000)
	}
	if e.PlanErrors > 0 {
		s += fmt.Sprintf("; %d plan lines ignored", e.PlanErrors)
	}
	return s + unknown
}

// unitPer is a column head: the unit per operation ("tsc/call").
func unitPer(unit, op string) string {
	switch unit {
	case "tsc_cycles":
		return "tsc/" + op
	case "instructions":
		return "instr/" + op
	}
	return unit + "/" + op
}

// benchOf reports whether m is of benchmark name in either world ("null"
// and "null32").
func benchOf(m Measurement, name string) bool {
	return m.Bench == name || m.Bench == name+"32"
}

// ratioCell is the ratio to off as the image prints it, or "-".
func ratioCell(st *contract.Stats) string {
	if st == nil || st.RatioToOff == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", st.RatioToOff)
}

// reason is an unsupported record's reason without the configuration's
// name the image puts first ("on+pcid/minimal/global: PCID: not
// supported by this CPU" is "PCID: not supported by this CPU").
func reason(r string) string {
	if head, rest, ok := strings.Cut(r, ": "); ok && strings.Contains(head, "/") && !strings.Contains(head, " ") {
		return rest
	}
	return r
}

// notRunRow is a row's cells for a configuration that did not run:
// "unsupported" or "FAILED" in the first figure column, "-" in the other
// n-1; the reason goes under t, once.
func notRunRow(t *Table, m Measurement, n int) []string {
	t.note(m)
	row := []string{m.NotRun}
	for range n - 1 {
		row = append(row, "-")
	}
	return row
}

// note adds under t why m did not run, unless it says so already.
func (t *Table) note(m Measurement) {
	if m.Why == "" {
		return
	}
	n := m.NotRun + ": " + m.Why
	if !slices.Contains(t.Notes, n) {
		t.Notes = append(t.Notes, n)
	}
}

// nullTable is the null call of the world of width: a row per mode,
// entry, flavour, pt_regs copy and global setting, with the ratio to off.
func nullTable(ms []Measurement, width int, unit string) Table {
	t := Table{Name: fmt.Sprintf("null%d", width),
		Title:   fmt.Sprintf("%d-bit null system call (getppid) per mode and flavour, per call; ± as perf stat --repeat (stddev of the mean)", width),
		Columns: []string{"mode", "entry", "flavour", "copy", "global", unitPer(unit, "call"), "±%", "median", "min", "ns/call", "vs off"}}
	for _, m := range ms {
		if !benchOf(m, "null") || m.Width != width || m.Stamps {
			continue
		}
		head := []string{m.Mode, m.Entry, m.Flavour, orDash(m.Copy), yn(m.Global)}
		if m.Stats == nil {
			t.Rows = append(t.Rows, append(head, notRunRow(&t, m, 6)...))
			continue
		}
		s := m.Stats
		t.Rows = append(t.Rows, append(head, f1(s.Mean), fmt.Sprintf("%.1f%%", s.PerfPct), f1(s.Median), f1(s.Min), f1(m.Ns), ratioCell(s)))
	}
	t.Reference = []string{"(no reference figure: the reference threads' null-call figures are 64-bit)"}
	if width == 64 {
		t.Reference = reference.Null()
		for _, m := range ms {
			if c, err := m.Config(); err == nil && benchOf(m, "null") && c.Mode.Deferred() {
				t.Reference = append(t.Reference, reference.Deferred()...)
				break
			}
		}
	}
	return t
}

// seedTable is a table shaped as the reference thread's, from the run's
// seed records of bench ("null" or "messaging"): a row per width (32,
// then 64) and mode, a column per cols (flavours or task kinds), each
// cell its figure ± (perf style) and the ratio to the same width's off.
func seedTable(r *Run, bench string, cols []string, unit string) Table {
	t := Table{Name: "seed-" + bench, Columns: append([]string{"kernel"}, cols...)}
	if bench == "null" {
		t.Title = fmt.Sprintf("null system call, 32-bit PAE (SYSENTER) vs 64-bit (SYSCALL), global pages off: %s per call ± (perf style), ratio to the same width's off", unitName(unit))
		t.Reference = reference.Null()
	} else {
		t.Title = "sched-messaging, 32-bit PAE (SYSENTER) vs 64-bit (SYSCALL): seconds ± (perf style), ratio to the same width's off"
		t.Reference = []string{reference.SeedMessaging()}
	}
	type key struct {
		width int
		mode  string
	}
	cells := map[key][]string{}
	var order []key
	for _, rec := range r.Records {
		var sub contract.Subject
		var text string
		switch v := rec.Record.(type) {
		case contract.Seed:
			sub = v.Subject
			if bench == "messaging" {
				text = fmt.Sprintf("%.6f ±%.1f%% %.2fx", v.Seconds, v.PerfPct, v.RatioToOff)
			} else {
				text = fmt.Sprintf("%.1f ±%.1f%% %.2fx", v.Mean, v.PerfPct, v.RatioToOff)
			}
		case contract.SeedUnsupported:
			sub = v.Subject
			text = "unsupported"
			t.note(Measurement{NotRun: text, Why: reason(v.Reason)})
		default:
			continue
		}
		if sub.Bench != bench {
			continue
		}
		col := slices.Index(cols, sub.Flavour)
		if bench == "messaging" {
			col = slices.Index(cols, sub.Tasks)
		}
		if col < 0 {
			continue
		}
		k := key{sub.Width, sub.Mode}
		if cells[k] == nil {
			cells[k] = make([]string, len(cols))
			order = append(order, k)
		}
		cells[k][col] = text
	}
	for _, k := range order {
		row := []string{fmt.Sprintf("%d-bit PTI %s", k.width, k.mode)}
		for _, c := range cells[k] {
			row = append(row, orText(c, "not measured"))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// lseekTable is lseek in both worlds: a row per entry, mode and global
// setting, with operations per second, the ratio to off and what global
// pages gain over the same configuration without them.
func lseekTable(ms []Measurement, unit string) Table {
	t := Table{Name: "lseek", Title: "lseek(fd, 0, SEEK_SET) on a kernel file, linux trampolines; ± as perf",
		Columns:   []string{"kernel", "entry", "mode", "global", unitPer(unit, "call"), "±%", "ns/call", "ops/s", "vs off", "global gain"},
		Reference: reference.Lseek()}
	var ls []Measurement
	for _, m := range ms {
		if benchOf(m, "lseek") {
			ls = append(ls, m)
		}
	}
	for _, m := range ls {
		head := []string{fmt.Sprintf("%d-bit", m.Width), m.Entry, m.Mode, yn(m.Global)}
		if m.Stats == nil {
			t.Rows = append(t.Rows, append(head, notRunRow(&t, m, 6)...))
			continue
		}
		gain := "-"
		if m.Global {
			ng := m.Subject
			ng.Global = false
			if base := findMeasured(ls, ng); base != nil {
				gain = fmt.Sprintf("%+.2f%%", 100*(base.Stats.Mean/m.Stats.Mean-1))
			}
		}
		s := m.Stats
		t.Rows = append(t.Rows, append(head, f1(s.Mean), fmt.Sprintf("%.1f%%", s.PerfPct), f1(m.Ns), fmt.Sprintf("%.0f", 1e9/m.Ns), ratioCell(s), gain))
	}
	return t
}

// findMeasured returns the measured configuration s among ms, or nil.
func findMeasured(ms []Measurement, s contract.Subject) *Measurement {
	for i := range ms {
		if ms[i].Stats != nil && ms[i].Subject.Key() == s.Key() {
			return &ms[i]
		}
	}
	return nil
}

// workTable is the work curve of the world of width: a row per work
// point, ns per call in each mode and each mode's overhead over off.
func workTable(ms []Measurement, width int) Table {
	t := Table{Name: fmt.Sprintf("work%d", width),
		Title: fmt.Sprintf("%d-bit system call spending a given time in the kernel (minimal flavour, no global pages), ns per call; 0 ns is the work call with nothing to do", width)}
	var modes []string
	var points []int64
	cell := map[string]Measurement{}
	for _, m := range ms {
		if !benchOf(m, "work") || m.Width != width || m.WorkNs == nil {
			continue
		}
		if !slices.Contains(modes, m.Mode) {
			modes = append(modes, m.Mode)
		}
		if !slices.Contains(points, *m.WorkNs) {
			points = append(points, *m.WorkNs)
		}
		cell[fmt.Sprint(*m.WorkNs, m.Mode)] = m
	}
	if len(points) == 0 {
		return t
	}
	t.Columns = []string{"work (ns)"}
	t.Columns = append(t.Columns, modes...)
	for _, mode := range modes[1:] {
		t.Columns = append(t.Columns, mode+" vs off")
	}
	for _, p := range points {
		row := []string{fmt.Sprint(p)}
		for _, mode := range modes {
			m, ok := cell[fmt.Sprint(p, mode)]
			switch {
			case !ok:
				row = append(row, "not measured")
			case m.Stats == nil:
				t.note(m)
				row = append(row, m.NotRun)
			default:
				row = append(row, f1(m.Ns))
			}
		}
		for _, mode := range modes[1:] {
			m, ok := cell[fmt.Sprint(p, mode)]
			if !ok || m.Stats == nil || m.Stats.RatioToOff == 0 {
				row = append(row, "-")
				continue
			}
			row = append(row, fmt.Sprintf("%+.1f%%", 100*(m.Stats.RatioToOff-1)))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Reference = []string{"(no reference figure: the reference threads' work figures are 64-bit)"}
	if width == 64 {
		t.Reference = reference.Work()
	}
	return t
}

// pingPongTable is the ping-pong in both worlds: a row per width, entry
// and mode, processes and threads: units and ns per round trip, the ratio
// to off and the CR3 loads per round trip.
func pingPongTable(ms []Measurement, unit string) Table {
	t := Table{Name: "pingpong", Title: "ping-pong: a 1-byte token through two pipes, per round trip (two context switches); ± as perf",
		Columns: []string{"kernel", "entry", "mode", "processes " + unitPer(unit, "rt"), "±%", "ns", "vs off", "CR3/rt",
			"threads " + unitPer(unit, "rt"), "±%", "ns", "vs off", "CR3/rt"},
		Reference: []string{"(no reference figure: the reference threads measured no ping-pong)"}}
	tasksRows(&t, ms, "pingpong", func(m Measurement) []string {
		pp := m.Record.Record.(contract.PingPong)
		cr3 := "-"
		if pp.RoundTrips > 0 {
			cr3 = fmt.Sprintf("%.2f", float64(pp.CR3Loads)/float64(pp.RoundTrips))
		}
		return []string{f1(m.Stats.Mean), fmt.Sprintf("%.1f%%", m.Stats.PerfPct), f1(m.Ns), ratioCell(m.Stats), cr3}
	}, 5, 0)
	return t
}

// messagingIPC names the IPC of the sched-messaging records of width:
// "socket" or "pipe" as the records say, "mixed" when they differ, and
// "pipe" for records from before the image named it (it had pipes only).
func messagingIPC(ms []Measurement, width int) string {
	ipc := ""
	for _, m := range ms {
		mg, ok := m.Record.Record.(contract.Messaging)
		if !ok || mg.Width != width {
			continue
		}
		v := mg.IPC
		if v == "" {
			v = "pipe"
		}
		if ipc != "" && ipc != v {
			return "mixed"
		}
		ipc = v
	}
	if ipc == "" {
		return "pipe"
	}
	return ipc
}

// messagingTable is sched-messaging in the world of width: a row per
// mode, processes and threads: seconds, units per message and the ratio
// to off.
func messagingTable(ms []Measurement, width int, unit string) Table {
	ipc := messagingIPC(ms, width)
	how := map[string]string{"pipe": " -p: pipes", "socket": ": Unix-domain stream socket pairs"}[ipc]
	if how == "" {
		how = ": IPC " + ipc
	}
	t := Table{Name: fmt.Sprintf("messaging%d", width),
		Title: fmt.Sprintf("%d-bit sched-messaging (perf bench sched messaging%s), total time per run; ± as perf", width, how),
		Columns: []string{"kernel", "entry", "mode", "processes s", "±%", unitPer(unit, "msg"), "vs off",
			"threads s", "±%", unitPer(unit, "msg"), "vs off"},
		Reference: reference.Messaging(width, ipc)}
	tasksRows(&t, ms, "messaging", func(m Measurement) []string {
		mg := m.Record.Record.(contract.Messaging)
		return []string{fmt.Sprintf("%.6f", mg.Seconds), fmt.Sprintf("%.1f%%", m.Stats.PerfPct), f1(mg.PerMessage), ratioCell(m.Stats)}
	}, 4, width)
	return t
}

// tasksRows adds to t a row per width, entry and mode of bench's
// measurements (of width only, unless 0; phase runs left out), with a
// processes half and a threads half of n cells each, made by cells.
func tasksRows(t *Table, ms []Measurement, bench string, cells func(Measurement) []string, n, width int) {
	type key struct {
		width       int
		entry, mode string
	}
	halves := map[key][2][]string{}
	var order []key
	for _, m := range ms {
		if !benchOf(m, bench) || m.Stamps || (width != 0 && m.Width != width) {
			continue
		}
		if _, ok := m.Record.Record.(contract.Unsupported); ok && m.Tasks == "" {
			continue
		}
		k := key{m.Width, m.Entry, m.Mode}
		h, seen := halves[k]
		if !seen {
			order = append(order, k)
		}
		i := 0
		if m.Tasks == "threads" {
			i = 1
		}
		if m.Stats == nil {
			h[i] = notRunRow(t, m, n)
		} else {
			h[i] = cells(m)
		}
		halves[k] = h
	}
	for _, k := range order {
		row := []string{fmt.Sprintf("%d-bit", k.width), k.entry, k.mode}
		for _, h := range halves[k] {
			if h == nil {
				h = notRunRow(t, Measurement{NotRun: "not measured"}, n)
			}
			row = append(row, h...)
		}
		t.Rows = append(t.Rows, row)
	}
}

// sweepKinds are the TLB sweep's kinds (record targets: "user 4k", "user
// 2m", "kernel 4k") among ms, in output order.
func sweepKinds(ms []Measurement) []string {
	var out []string
	for _, m := range ms {
		if m.Bench == "tlbsweep" && m.SweepPages != nil && !slices.Contains(out, m.Target) {
			out = append(out, m.Target)
		}
	}
	return out
}

// sweepTable is the TLB sweep of kind: a row per global setting, point
// (pages touched per call) and mode, with units and ns per call plus its
// touches, PTI's extra over off at the same point, in units and as a
// ratio; what the sweep touched goes under it, from its records.
func sweepTable(ms []Measurement, kind, unit string) Table {
	t := Table{Name: "tlbsweep-" + strings.ReplaceAll(kind, " ", "-"),
		Title:   fmt.Sprintf("TLB working-set sweep, %s: per call plus its touches of N distinct pages; extra: the mode's figure less off's at the same N; ± as perf", kind),
		Columns: []string{"global", "N", "mode", unitPer(unit, "call"), "±%", "median", "min", "ns/call", "extra", "vs off"},
		Reference: []string{"(no reference figure: lmbench's lat_ctx -s and Gregg's sweep measured whole context switches; " +
			"expected on hardware: without PCID the extra grows with N, with PCID it stays nearly flat)"}}
	var what string
	for _, m := range ms {
		if m.Bench != "tlbsweep" || m.Target != kind || m.SweepPages == nil {
			continue
		}
		head := []string{yn(m.Global), fmt.Sprint(*m.SweepPages), m.Mode}
		if m.Stats == nil {
			t.Rows = append(t.Rows, append(head, notRunRow(&t, m, 7)...))
			continue
		}
		sw := m.Record.Record.(contract.TLBSweep)
		if what == "" {
			who := "ring 3 reads them between calls"
			if sw.Side == "kernel" {
				who = "the system call reads them in ring 0"
			}
			what = fmt.Sprintf("touched: N of %d virtual pages of %d KiB from %s, %d bytes apart, all mapped onto %d frame(s) of %d KiB; %d byte(s) per touch at %s; %s",
				sw.VirtualPages, sw.PageBytes>>10, sw.Region, sw.Stride, sw.Frames, sw.FrameBytes>>10, sw.BytesPerTouch, sw.Offset, who)
		}
		extra := "-"
		if sw.ExtraVsOff != nil {
			extra = fmt.Sprintf("%+.1f", *sw.ExtraVsOff)
		}
		s := m.Stats
		t.Rows = append(t.Rows, append(head, f1(s.Mean), fmt.Sprintf("%.1f%%", s.PerfPct), f1(s.Median), f1(s.Min), f1(m.Ns), extra, ratioCell(s)))
	}
	if what != "" {
		t.Notes = append([]string{what}, t.Notes...)
	}
	return t
}

// flushCostTable is the TLB flush costs: a row per operation, units per
// operation (the empty loop subtracted) with their spread and ns, or why
// it did not run.
func flushCostTable(r *Run) Table {
	t := Table{Name: "flushcost", Title: "TLB flush costs in ring 0, interrupts masked, per operation, empty-loop overhead subtracted",
		Reference: []string{"(reference: Linux's Documentation/arch/x86/pti.rst puts a CR3 write \"on the order of a hundred cycles\")"}}
	unit := ""
	for _, rec := range r.Records {
		switch v := rec.Record.(type) {
		case contract.FlushCost:
			if unit == "" {
				unit = v.Unit
			}
			ns := "-"
			if v.TSCHz != 0 {
				ns = f1(v.PerOp.Mean * 1e9 / float64(v.TSCHz))
			}
			t.Rows = append(t.Rows, []string{v.Target, f1(v.PerOp.Mean), f1(v.PerOp.Stddev), f1(v.PerOp.Median), f1(v.PerOp.Min), f1(v.PerOp.Max), ns,
				fmt.Sprintf("%d x %d after %d", v.R, v.N, v.Warmup), f1(v.EmptyLoopCycles)})
		case contract.Unsupported:
			if v.Bench != "flushcost" {
				continue
			}
			t.Rows = append(t.Rows, append([]string{v.Target}, notRunRow(&t, Measurement{NotRun: "unsupported", Why: v.Reason}, 8)...))
		}
	}
	t.Columns = []string{"operation", unitPer(unit, "op"), "stddev", "median", "min", "max", "ns/op", "repeats x ops", "empty loop"}
	return t
}

// retentionTable is the TLB retention proof's answers: a row per probe,
// its mode, the CR3 values and whether the second read saw the first
// frame (kept) or the new one (walked again), or why it did not run.
func retentionTable(r *Run) Table {
	t := Table{Name: "retention", Title: "TLB retention: a user page read in ring 0, its PTE pointed at another frame without invalidation between two CR3 writes, then read again",
		Columns:   []string{"probe", "mode", "global", "address", "first CR3", "away CR3", "back CR3", "second read"},
		Reference: []string{"(SDM Vol. 3A 4.10.2.4 and 4.10.4.1: NOFLUSH and the G bit permit keeping a translation, they do not promise it; QEMU TCG walks again for both, Bochs keeps a global entry and walks again with PCIDs)"}}
	for _, rec := range r.Records {
		switch v := rec.Record.(type) {
		case contract.Retention:
			t.Rows = append(t.Rows, []string{v.Probe, v.Mode, yn(v.Global), v.Address, v.First, v.Away, v.Back, v.Result})
		case contract.Unsupported:
			if v.Bench != "retention" {
				continue
			}
			row := append([]string{v.Target, v.Mode, yn(v.Global), orDash(v.Address)}, notRunRow(&t, Measurement{NotRun: "unsupported", Why: v.Reason}, 4)...)
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}

// ladderTable is the speculation-mitigation ladder of bench ("ladder",
// or "ladder32": the 32-bit world's, by SYSENTER, without the 64-bit
// reference line): a row per rung in the order the image printed them, from its ladder
// records (a rung that could not run from its unsupported or error
// record): the mode, the operation (the null call, or a ping-pong round
// trip between processes), the part of the ladder, the rung's knobs, its
// figure per operation, and its increment over the rung named in "over".
func ladderTable(r *Run, unit, bench string) Table {
	title := "speculation-mitigation ladder (mitigated flavour): each rung's increment over the rung named in over; a disabled site costs a TEST and a taken JE"
	if bench == "ladder32" {
		title = "32-bit PAE kernel, SYSENTER: " + title
	}
	t := Table{Name: bench, Title: title,
		Columns: []string{"mode", "operation", "part", "rung", unitPer(unit, "op"), "increment", "over"}}
	op := func(s contract.Subject) string {
		if s.Tasks != "" {
			return "ping-pong " + s.Tasks
		}
		return "null call"
	}
	rung := func(s contract.Subject) string {
		if s.Mitigations == "" {
			return s.Flavour + " flavour"
		}
		return s.Mitigations
	}
	for _, rec := range r.Records {
		switch v := rec.Record.(type) {
		case contract.Ladder:
			if v.Bench != bench {
				continue
			}
			inc := "-"
			if v.Increment != nil {
				inc = fmt.Sprintf("%+.1f", *v.Increment)
			}
			t.Rows = append(t.Rows, []string{v.Mode, op(v.Subject), v.Part, rung(v.Subject), f1(v.Mean), inc, orDash(v.Over)})
		case contract.Unsupported:
			if v.Bench == bench {
				m := Measurement{Subject: v.Subject, NotRun: "unsupported", Why: reason(v.Reason)}
				t.Rows = append(t.Rows, append([]string{v.Mode, op(v.Subject), "-", rung(v.Subject)}, notRunRow(&t, m, 3)...))
			}
		case contract.Error:
			if v.Subject != nil && v.Subject.Bench == bench {
				m := Measurement{Subject: *v.Subject, NotRun: "FAILED", Why: v.Name + ": " + v.Error}
				t.Rows = append(t.Rows, append([]string{v.Mode, op(*v.Subject), "-", rung(*v.Subject)}, notRunRow(&t, m, 3)...))
			}
		}
	}
	if bench == "ladder" {
		t.Reference = reference.Ladder()
	}
	return t
}

// unitName is the unit as the image's headings say it.
func unitName(unit string) string {
	if unit == "tsc_cycles" {
		return "TSC cycles"
	}
	return unit
}

func f1(x float64) string { return fmt.Sprintf("%.1f", x) }

func yn(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string { return orText(s, "-") }

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
