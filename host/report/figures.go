package report

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ptilab/ptilab/contract"
)

// Figure is one figure of a run, flat, as the tidy CSV has it (one row
// each) and the JSON report lists it: what was measured (the record's
// subject, a flush cost's operation, sched-messaging's shape), whether
// it was ("measured", "unsupported" or "failed", with why), and, when
// measured, its statistics per operation in Unit over its repeats of
// Ops operations (Spread: N is the repeats), perf's ±, ns per operation
// (from the TSC's frequency; virtual under an emulator), the ratio to
// PTI off (1 for off itself; absent where off did not run), an asi
// mode's ASI transitions per operation and its record's core clock and
// disturbances (Core).
type Figure struct {
	Source string `json:"source"`
	CPU    string `json:"cpu"` // the machine record's brand string
	// Microcode is the figure's microcode revision ("0xf0"; absent where
	// it has none): its record's own (contract.Subject.Microcode), or in
	// logs from before records carried it the machine record's, which is
	// the same (every figure of a run is from one boot, whose revision
	// ptilab never changes).
	Microcode string `json:"microcode,omitempty"`
	Line      int    `json:"line"` // the record's line in the log
	Key       string `json:"key"`  // contract.Subject.Key
	contract.Subject
	Operation string `json:"operation,omitempty"`
	*contract.Workload
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Unit   string `json:"unit,omitempty"`
	TSCHz  uint64 `json:"tsc_hz,omitempty"`
	Ops    int    `json:"ops,omitempty"` // operations per repeat
	Warmup int    `json:"warmup,omitempty"`
	*contract.Spread
	// Repeats are the repeats the statistics summarise (Stats.Repeats;
	// absent in older logs). The CSV leaves them out: one row a figure.
	Repeats    []float64 `json:"repeats,omitempty"`
	PerfPct    *float64  `json:"perf_pm_pct,omitempty"`
	NsPerOp    *float64  `json:"ns_per_op,omitempty"`
	RatioToOff *float64  `json:"ratio_to_off,omitempty"`
	// ASIPerOp is an asi mode's mean ASI transitions per operation (per
	// call, round trip or message: the record's ASIPerOp, as the tables
	// show it); absent in the other modes, and from the CSV, whose
	// columns every run has.
	ASIPerOp *float64 `json:"asi_per_op,omitempty"`
	*contract.Core
}

func ptr[T any](v T) *T { return &v }

// Figures are the run's figures in output order: every measured,
// unsupported or failed configuration of a benchmark, flush costs
// included (Measurements).
func (r *Run) Figures() []Figure {
	var out []Figure
	cpu, microcode := "", ""
	if r.Machine != nil {
		cpu = strings.TrimSpace(r.Machine.Brand)
		if r.Machine.Microcode != nil {
			microcode = fmt.Sprintf("%#x", *r.Machine.Microcode)
		}
	}
	for _, m := range r.Measurements() {
		f := Figure{Source: r.Source, CPU: cpu, Microcode: cmp.Or(m.Subject.Microcode, microcode), Line: m.Record.Line, Key: m.Subject.Key(), Subject: m.Subject}
		switch v := m.Record.Record.(type) {
		case contract.Syscall:
			f.Ops, f.Warmup = v.N, v.Warmup
		case contract.PingPong:
			f.Ops, f.Warmup = v.N, v.Warmup
		case contract.TLBSweep:
			f.Ops, f.Warmup = v.N, v.Warmup
		case contract.FlushCost:
			f.Ops, f.Warmup, f.Operation = v.N, v.Warmup, v.Operation
		case contract.Messaging:
			f.Warmup, f.Workload = v.Warmup, &v.Workload
		case contract.Unsupported:
			f.Reason, f.Workload = v.Reason, v.Workload
		case contract.Error:
			f.Reason = v.Error
		}
		if m.Stats == nil {
			f.Status = "unsupported"
			if m.NotRun == "FAILED" {
				f.Status = "failed"
			}
			out = append(out, f)
			continue
		}
		st := m.Stats
		f.Status, f.Unit, f.TSCHz = "measured", st.Unit, st.TSCHz
		if _, flush := m.Record.Record.(contract.FlushCost); !flush {
			f.Core = &st.Core // a flush cost's counters are not read
		}
		f.Spread = &contract.Spread{N: m.R, Mean: st.Mean, Stddev: st.Stddev, Median: st.Median, Min: st.Min, Max: st.Max}
		f.Repeats = st.Repeats
		if m.R > 1 {
			f.PerfPct = ptr(st.PerfPct)
		}
		if m.Ns != 0 {
			f.NsPerOp = ptr(m.Ns)
		}
		if st.RatioToOff != 0 {
			f.RatioToOff = ptr(st.RatioToOff)
		}
		if a, ok := m.Record.Record.(interface{ ASIPerOp() (float64, bool) }); ok {
			if v, ok := a.ASIPerOp(); ok {
				f.ASIPerOp = ptr(v)
			}
		}
		out = append(out, f)
	}
	return out
}

// CSVHeader is the tidy CSV's header: the columns of Figure a reader
// sorts and plots by (Core's in part: the core clock, core cycles per
// operation, SMIs, NMIs and disturbed repeats).
var CSVHeader = []string{
	"source", "cpu", "microcode", "line", "key", "bench", "width", "mode", "entry", "flavour", "copy", "stamps", "global",
	"tasks", "target", "work_ns", "sweep_pages", "mitigations", "loop_offset", "operation", "groups", "loops", "bytes", "ipc", "emulated", "icount",
	"status", "reason", "unit", "ops", "r", "warmup", "mean", "stddev", "perf_pm_pct", "median", "min", "max",
	"ns_per_op", "ratio_to_off", "core_mhz", "core_per_op", "smis", "nmis", "disturbed",
}

// csvRow is f's cells in CSVHeader's order: numbers as numbers (Go's
// shortest representation), an empty cell where there is none.
func (f Figure) csvRow() []string {
	var cells []string
	add := func(c ...string) { cells = append(cells, c...) }
	num := func(v float64, ok bool) string {
		if !ok {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	count := func(v int) string { return num(float64(v), v != 0) }
	opt := func(p *float64) string { return num(deref(p), p != nil) }
	b := strconv.FormatBool
	work, pages := "", ""
	if f.WorkNs != nil {
		work = strconv.FormatInt(*f.WorkNs, 10)
	}
	if f.SweepPages != nil {
		pages = strconv.Itoa(*f.SweepPages)
	}
	add(f.Source, f.CPU, f.Microcode, count(f.Line), f.Key, f.Bench, strconv.Itoa(f.Width), f.Mode, f.Entry, f.Flavour, f.Copy, b(f.Stamps), b(f.Global))
	add(f.Tasks, f.Target, work, pages, f.Mitigations, strconv.Itoa(f.LoopOffset), f.Operation)
	if w := f.Workload; w != nil {
		add(count(w.Groups), count(w.Loops), count(w.Size), w.IPC)
	} else {
		add("", "", "", "")
	}
	add(b(f.Emulated), b(f.Icount), f.Status, f.Reason, f.Unit, count(f.Ops))
	warmup := num(float64(f.Warmup), f.Status == "measured") // 0 warm-up repeats is a figure
	if sp := f.Spread; sp != nil {
		add(count(sp.N), warmup, num(sp.Mean, true), num(sp.Stddev, true), opt(f.PerfPct), num(sp.Median, true), num(sp.Min, true), num(sp.Max, true))
	} else {
		add("", count(f.Warmup), "", "", "", "", "", "")
	}
	add(opt(f.NsPerOp), opt(f.RatioToOff))
	if c := f.Core; c != nil {
		sampled := c.Sampled != ""
		add(num(c.CoreMHz, c.CoreMHz != 0), num(c.CoreMean, c.CoreMHz != 0), num(float64(c.SMIs), c.SMICount == "msr"), num(float64(c.NMIs), sampled), num(float64(c.Disturbed), sampled))
	} else {
		add("", "", "", "", "")
	}
	return cells
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// writeFigures writes the reports' figures as one tidy CSV: CSVHeader,
// then a row per figure.
func writeFigures(w io.Writer, reps []Report) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	for _, rep := range reps {
		for _, f := range rep.Figures {
			cw.Write(f.csvRow())
		}
	}
	cw.Flush()
	return cw.Error()
}
