package report

import (
	"fmt"
	"math"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"

	"github.com/ptilab/ptilab/tables"
)

// How compare tests a difference. The records carry each figure's
// summary over its R repeats (mean, sample standard deviation, median,
// minimum, maximum: contract.Stats), not the repeats themselves, so
// benchstat's default test (benchmath.AssumeNothing, the Mann-Whitney U
// test on the values) cannot be applied; the test that works from the
// summary is benchmath.AssumeNormal's: Welch's two-sample t-test
// (go-moremath's stats.TwoSampleWelchTTest, which AssumeNormal calls),
// from the mean, the variance and R of each side. When neither side has
// any spread, the R values of each are known exactly (all equal to the
// mean), and benchmath.AssumeNothing compares them.
const TestNote = "significance: Welch's two-sample t-test from each figure's mean, standard deviation and repeats " +
	"(benchmath.AssumeNormal's test; the records carry summaries, not the repeats benchstat's U-test needs); " +
	"figures without spread on either side: benchmath.AssumeNothing on the exact repeats; " +
	"alpha 0.05 (benchmath.DefaultThresholds); ~ is no significant difference"

// CoreClockKey is the field of a figure's record that gives its
// effective core clock in MHz (contract.Core's CoreMHz: TSC Hz * dAPERF /
// dMPERF over the measured repeats), where the CPU has APERF/MPERF;
// figures whose core clocks differ by more than CoreClockTolerance are
// not compared.
const (
	CoreClockKey       = "core_mhz"
	CoreClockTolerance = 0.02
)

// Compare compares two runs row by row: each configuration either
// measured, A's figure, B's, B/A and whether the difference is
// significant given their repeats (TestNote); rows that cannot be
// compared say why (not run in one, units, emulated against hardware,
// core clocks). The configurations only one run has are counted, and
// listed as rows only with all. Every row names its unit, the report's:
// sched-messaging in seconds (from TSC cycles and the TSC's frequency),
// the others as recorded. When A and B hold the same figures, a note
// says so: comparing a run with itself finds nothing.
func Compare(a, b *Run, all bool) Document {
	d := Document{Heading: []string{
		"A: " + a.Source, "   " + MachineLine(a), "   " + StatusLine(a),
		"B: " + b.Source, "   " + MachineLine(b), "   " + StatusLine(b),
		TestNote,
	}}
	t := Table{Name: "compare", Title: "A against B, configuration by configuration: mean ± (perf style), B/A, p-value and repeats, the change if significant",
		Columns: tables.Cols("configuration", "unit", "A", "B", "B/A", "test", "change")}
	ma, mb := a.Measurements(), b.Measurements()
	inB := map[string]*Measurement{}
	var order []string
	for i := range mb {
		k := mb[i].Subject.Key()
		if _, dup := inB[k]; !dup {
			order = append(order, k)
		}
		inB[k] = &mb[i]
	}
	seen := map[string]bool{}
	onlyA, onlyB, same, both := 0, 0, 0, 0
	for i := range ma {
		k := ma[i].Subject.Key()
		if seen[k] {
			continue
		}
		seen[k] = true
		y := inB[k]
		if y == nil {
			onlyA++
			if !all {
				continue
			}
		} else if ma[i].Stats != nil && y.Stats != nil {
			both++
			if sameFigure(&ma[i], y) {
				same++
			}
		}
		t.Rows = append(t.Rows, compareRow(k, a, b, &ma[i], y))
	}
	for _, k := range order {
		if !seen[k] {
			onlyB++
			if all {
				t.Rows = append(t.Rows, compareRow(k, a, b, nil, inB[k]))
			}
		}
	}
	comparable, not := 0, 0
	for _, row := range t.Rows {
		if row[4] == "-" {
			not++
		} else {
			comparable++
		}
	}
	t.Notes = []string{fmt.Sprintf("%d rows compared, %d not compared (named with the reason)", comparable, not)}
	if onlyA+onlyB > 0 {
		shown := "not shown: -all lists them"
		if all {
			shown = "listed"
		}
		t.Notes = append(t.Notes, fmt.Sprintf("%d configurations only in A, %d only in B (%s)", onlyA, onlyB, shown))
	}
	if both > 0 && same == both {
		t.Notes = append(t.Notes, "A and B hold the same figures, every one: a run compared with itself (p = 1 everywhere, nothing to find)")
	}
	t.Notes = append(t.Notes, "(the seed tables' cells are the null and sched-messaging rows above, not compared twice)")
	d.Tables = []Table{t}
	return d
}

// compareRow is the row of configuration k: x in run a, y in run b
// (nil: absent).
func compareRow(k string, a, b *Run, x, y *Measurement) []string {
	row := []string{k, unitOf(x, y), cell(x), cell(y), "-", "-"}
	why := func(s string) []string { return append(row, s) }
	switch {
	case x == nil:
		return why("only in B")
	case y == nil:
		return why("only in A")
	case x.Stats == nil || y.Stats == nil:
		return why(fmt.Sprintf("not compared: %s in A, %s in B", runState(x), runState(y)))
	}
	if x.Stats.Unit != y.Stats.Unit {
		row[1] = x.Stats.Unit + " / " + y.Stats.Unit
		return why(fmt.Sprintf("not compared: different units (A %s, B %s)", x.Stats.Unit, y.Stats.Unit))
	}
	if x.Emulated != y.Emulated {
		return why(fmt.Sprintf("not compared: A %s, B %s", emulation(a, x), emulation(b, y)))
	}
	if ca, cb, ok := coreClocks(x, y); ok && math.Abs(cb/ca-1) > CoreClockTolerance {
		return why(fmt.Sprintf("not compared: core clocks differ (A %.3f GHz, B %.3f GHz)", ca/1e9, cb/1e9))
	}
	c := significance(x, y)
	xm, _, _ := figure(x)
	ym, _, _ := figure(y)
	row[4] = fmt.Sprintf("%.3f", ym/xm)
	row[5] = c.String()
	change := c.FormatDelta(xm, ym)
	for _, w := range c.Warnings {
		change += " (" + w.Error() + ")"
	}
	return append(row, change)
}

// sameFigure reports whether x and y are the same figure: unit, mean,
// spread, median, extremes and repeats.
func sameFigure(x, y *Measurement) bool {
	a, b := x.Stats, y.Stats
	return a.Unit == b.Unit && a.Mean == b.Mean && a.Stddev == b.Stddev && a.Median == b.Median &&
		a.Min == b.Min && a.Max == b.Max && x.R == y.R
}

// figure is a measurement's mean and standard deviation in the unit the
// report uses, and that unit: sched-messaging's TSC cycles per run as
// seconds (the report's and perf's), every other figure as recorded.
func figure(m *Measurement) (mean, stddev float64, unit string) {
	s := m.Stats
	if m.Bench == "messaging" && s.Unit == "tsc_cycles" && s.TSCHz > 0 {
		hz := float64(s.TSCHz)
		return s.Mean / hz, s.Stddev / hz, "s"
	}
	return s.Mean, s.Stddev, s.Unit
}

// unitOf is the unit of a row: its figures' (figure), "-" when neither
// side has one.
func unitOf(x, y *Measurement) string {
	for _, m := range []*Measurement{x, y} {
		if m != nil && m.Stats != nil {
			_, _, u := figure(m)
			return u
		}
	}
	return "-"
}

// cell is a measurement's figure in a comparison: mean ±perf%, or why it
// has none.
func cell(m *Measurement) string {
	switch {
	case m == nil:
		return "absent"
	case m.Stats == nil:
		return m.NotRun
	}
	mean, _, unit := figure(m)
	if unit == "s" {
		return fmt.Sprintf("%.4g ±%.1f%%", mean, m.Stats.PerfPct)
	}
	return fmt.Sprintf("%.1f ±%.1f%%", mean, m.Stats.PerfPct)
}

// runState says what became of a configuration that has a row.
func runState(m *Measurement) string {
	if m.Stats != nil {
		return "measured"
	}
	return m.NotRun
}

// emulation says whether a measurement's figures are emulated, and by
// what, in a word or two.
func emulation(r *Run, m *Measurement) string {
	if !m.Emulated {
		return "hardware"
	}
	if r.Machine != nil && r.Machine.Emulator != "" {
		return "emulated (" + r.Machine.Emulator + ")"
	}
	return "emulated"
}

// coreClocks returns the core clocks of x and y in Hz, from each
// record's CoreClockKey field; ok is false unless both have one.
func coreClocks(x, y *Measurement) (ca, cb float64, ok bool) {
	ca, okA := number(x.Record.Fields[CoreClockKey])
	cb, okB := number(y.Record.Fields[CoreClockKey])
	return ca * 1e6, cb * 1e6, okA && okB && ca > 0 && cb > 0
}

// number is a record field's number (a json.Number or a float64).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case interface{ Float64() (float64, error) }:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

// summary is a figure's summary as a sample for Welch's t-test.
type summary struct{ n, mean, variance float64 }

func (s summary) Weight() float64   { return s.n }
func (s summary) Mean() float64     { return s.mean }
func (s summary) Variance() float64 { return s.variance }

// significance tests whether x and y differ (TestNote), as a
// benchmath.Comparison (its P, sizes and alpha; FormatDelta gives "~"
// when not significant).
func significance(x, y *Measurement) benchmath.Comparison {
	alpha := benchmath.DefaultThresholds.CompareAlpha
	c := benchmath.Comparison{N1: x.R, N2: y.R, Alpha: alpha, P: 1}
	if x.R < 2 || y.R < 2 {
		c.Warnings = append(c.Warnings, fmt.Errorf("fewer than 2 repeats"))
		return c
	}
	if x.Stats.Stddev == 0 && y.Stats.Stddev == 0 {
		if x.Stats.Mean == y.Stats.Mean {
			return c
		}
		th := benchmath.DefaultThresholds
		cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(repeat(x.Stats.Mean, x.R), &th), benchmath.NewSample(repeat(y.Stats.Mean, y.R), &th))
		return cmp
	}
	res, err := stats.TwoSampleWelchTTest(
		summary{float64(x.R), x.Stats.Mean, x.Stats.Stddev * x.Stats.Stddev},
		summary{float64(y.R), y.Stats.Mean, y.Stats.Stddev * y.Stats.Stddev}, stats.LocationDiffers)
	if err != nil {
		c.Warnings = append(c.Warnings, err)
		return c
	}
	c.P = res.P
	return c
}

// repeat is n copies of v.
func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
