package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/tables"
)

// Table is a table of a report (package tables's): its name (a short
// key: "null64", "seed-null", ...), title, columns, rows of cells as
// printed, and the lines under it: the reference figure as the image
// prints it (or why there is none), then notes (why configurations did
// not run).
type Table = tables.Table

// Measurement is a benchmark's configuration as a run recorded it: a
// measured figure (a syscall, pingpong, messaging, tlbsweep or flushcost
// record; a flush cost's Stats are made from its per-operation spread),
// or one that did not run (an unsupported or error record), with its
// record.
type Measurement struct {
	contract.Subject
	// Stats and R are the figure and its repeats; Stats is nil when the
	// configuration did not run.
	Stats *contract.Stats
	R     int
	// Ns is the figure's mean in ns per operation (per call, per round
	// trip, per sched-messaging run).
	Ns float64
	// NotRun is "unsupported" or "FAILED" when it did not run.
	NotRun string
	Record Record
}

// Key is the measurement's configuration key: its record's own where the
// record has one (sched-messaging's adds the IPC: contract.Messaging.Key),
// else its subject's.
func (m Measurement) Key() string {
	if k, ok := m.Record.Record.(interface{ Key() string }); ok {
		return k.Key()
	}
	return m.Subject.Key()
}

// globalTwin is the key of m's configuration with the other global
// setting.
func (m Measurement) globalTwin() string {
	switch v := m.Record.Record.(type) {
	case contract.Messaging:
		v.Global = !v.Global
		return v.Key()
	case contract.Unsupported:
		v.Global = !v.Global
		return v.Key()
	}
	s := m.Subject
	s.Global = !s.Global
	return s.Key()
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
		case contract.FlushCost:
			st := &contract.Stats{Unit: v.Unit, Mean: v.PerOp.Mean, Stddev: v.PerOp.Stddev, Median: v.PerOp.Median,
				Min: v.PerOp.Min, Max: v.PerOp.Max, TSCHz: v.TSCHz, Repeats: v.Repeats}
			if v.PerfPct != nil {
				st.PerfPct = *v.PerfPct
			}
			if v.PerOp.Mean != 0 {
				st.StddevPct = 100 * v.PerOp.Stddev / math.Abs(v.PerOp.Mean)
			}
			m = Measurement{Subject: v.Subject, Stats: st, R: v.R}
			if v.TSCHz != 0 && v.Unit == "tsc_cycles" {
				m.Ns = v.PerOp.Mean / float64(v.TSCHz) * 1e9
			}
		case contract.Unsupported:
			m = Measurement{Subject: v.Subject, NotRun: "unsupported"}
		case contract.Error:
			if v.Subject == nil {
				continue
			}
			m = Measurement{Subject: *v.Subject, NotRun: "FAILED"}
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
	Source   string   `json:"source"`
	Machine  string   `json:"machine"`
	Status   string   `json:"status"`
	CutShort bool     `json:"cut_short"`
	Tables   []Table  `json:"tables"`
	Figures  []Figure `json:"figures"` // the run's figures (Run.Figures): the tidy CSV's rows
	Records  struct {
		Machine *contract.Machine `json:"machine,omitempty"`
		Timing  *contract.Timing  `json:"timing,omitempty"`
		End     *contract.End     `json:"end,omitempty"`
	} `json:"records"`
	run *Run // the run the report is of (the HTML page draws its plots)
}

// Build makes a run's report: the machine line, the status, and the
// tables: the run's records fed in order to package tables, the renderer
// the image's console uses, so that the report prints the console's
// table text, each table with the reference figure under it.
func Build(r *Run) Report {
	rep := Report{Source: r.Source, Machine: MachineLine(r), Status: StatusLine(r), CutShort: r.CutShort()}
	rep.Records.Machine, rep.Records.Timing, rep.Records.End = r.Machine, r.Timing, r.End
	rep.run = r
	rep.Tables = Rendered(r)
	rep.Figures = r.Figures()
	return rep
}

// MachineLine identifies the run's machine in one line: the CPU, its
// microcode, the TSC and what its frequency rests on (its references:
// contract.Machine.TSCEvidence), the features PTI's modes need, the firmware,
// whether the figures are emulated, the vulnerability table's PTI
// verdict and what the P-state request came to (the console's
// "vulnerabilities" and "pstate" lines), and the ptilab source that ran.
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
	if e := m.TSCEvidence(); e != "" {
		inv += "; " + e
	}
	s += fmt.Sprintf("; TSC %.3f GHz (%s, %s)", float64(m.TSCHz)/1e9, m.TSCSource, inv)
	var feats []string
	for _, f := range []struct {
		name string
		on   bool
	}{{"PCID", m.PCID}, {"INVPCID", m.INVPCID}, {"PGE", m.PGE}, {"SMEP", m.SMEP}, {"SMAP", m.SMAP}, {"RDTSCP", m.RDTSCP}, {"FRED", m.FRED}, {"LASS", m.LASS}} {
		if f.on {
			feats = append(feats, f.name)
		} else {
			feats = append(feats, "no "+f.name)
		}
	}
	s += "; " + strings.Join(feats, " ")
	if m.Board == "linux" {
		s += fmt.Sprintf("; %d MiB RAM; board linux (a ptilab linux run: the running kernel's figures)", m.RAMBytes>>20)
	} else {
		s += fmt.Sprintf("; %d MiB RAM; firmware %s 0x%x; board %s", m.RAMBytes>>20, m.FirmwareVendor, m.FirmwareRevision, m.Board)
	}
	switch {
	case m.EmulatorBuild != "":
		s += "; EMULATED (" + m.EmulatorBuild + "): the figures say nothing about hardware"
	case m.Emulator != "":
		s += "; EMULATED (" + m.Emulator + "): the figures say nothing about hardware"
	case r.Emulated():
		s += "; EMULATED: the figures say nothing about hardware"
	case m.Hypervisor != "":
		s += "; under the hypervisor " + m.Hypervisor + ": a guest's figures"
	default:
		s += "; hardware"
	}
	if r.Timing != nil && r.Timing.Icount {
		s += "; the TSC counted instructions"
	}
	if a := contract.RetentionAnswers(records(r)); len(a) > 0 {
		s += "; TLB retention: " + contract.RetentionSummary(a)
	}
	for _, rec := range r.Records {
		switch v := rec.Record.(type) {
		case contract.Linux:
			s += fmt.Sprintf("; Linux %s, PTI %s (%s), global %s (%s); 32-bit rows: %s; pinned: %s", v.Release, v.PTI, v.PTIWhy,
				yesNo(v.Global), v.GlobalWhy, v.Compat32, v.Pinned)
		case contract.Vulnerabilities:
			s += fmt.Sprintf("; PTI needed as Linux %s decides: %s (%s)", v.Linux, yesNo(v.PTINeeded), v.PTIWhy)
		case contract.PState:
			s += "; pstate " + v.Mode + ": " + pstateOutcome(v)
		case contract.Baseline:
			s += "; " + baselineOutcome(v)
		}
	}
	if m.PtilabCommit != "" {
		s += "; ptilab " + m.PtilabCommit
	}
	return s
}

// pstateOutcome says what the run's P-state request came to: the ratio
// applied and the core clock it settled at, or why nothing was written.
func pstateOutcome(p contract.PState) string {
	switch {
	case !p.Applied:
		return p.Why
	case p.Settled:
		return fmt.Sprintf("ratio %d applied, settled at %.0f MHz", p.Ratio, p.CoreMHz)
	}
	return fmt.Sprintf("ratio %d applied, not settled (%s)", p.Ratio, p.Why)
}

// baselineOutcome says what the disturbance baseline saw: SMIs and gaps
// a second, the longest gap, and its warnings.
func baselineOutcome(b contract.Baseline) string {
	smis := "SMI count " + b.SMICount
	if b.SMICount == "msr" {
		smis = fmt.Sprintf("%.1f SMIs/s", b.SMIsPerS)
	}
	s := fmt.Sprintf("baseline %.0f ms: %s, %.1f gaps/s over %.0f µs, longest %.1f µs", b.Ms, smis, b.GapsPerS, b.GapThresholdUs, b.MaxGapUs)
	for _, w := range b.Warnings {
		s += "; WARNING: " + w
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
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
		return fmt.Sprintf("CUT SHORT: no PTILAB-END line; the log holds %d lines, %d records (%d figures, %s not run); the last record: %s%s",
			r.Lines, len(r.Records), measured, configurations(notRun), last, unknown)
	}
	e := r.End
	s := fmt.Sprintf("run: PTILAB-END status %q (exit %d), %d records (%d figures, %s not run), %d of %d checks passed",
		e.Status, e.Exit, len(r.Records), measured, configurations(notRun), e.Passed, e.Checks)
	if e.FailedBenchmarks > 0 {
		s += fmt.Sprintf(", %d benchmarks failed", e.FailedBenchmarks)
	}
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

// benchOf reports whether m is of benchmark name in either world ("null"
// and "null32").
func benchOf(m Measurement, name string) bool {
	return m.Bench == name || m.Bench == name+"32"
}

// unitName is the unit as the image's headings say it.
func unitName(unit string) string {
	if unit == "tsc_cycles" {
		return "TSC cycles"
	}
	return unit
}

// configurations counts configurations: "1 configuration", "3
// configurations".
func configurations(n int) string {
	if n == 1 {
		return "1 configuration"
	}
	return fmt.Sprintf("%d configurations", n)
}
