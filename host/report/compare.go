package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/tables"
)

// How compare tests a difference. Where both records carry their
// repeats (Stats.Repeats), as benchstat does: each side's undisturbed
// repeats are a benchmath sample, its centre the median with a 95%
// confidence interval (benchmath.AssumeNothing's Summary), and the test
// Mann-Whitney's U-test (AssumeNothing's Compare, with benchstat's rule
// that too few repeats cannot be significant). Where one of them carries
// only its summary (a log written before the repeats were recorded): the
// mean ± perf's spread, and Welch's two-sample t-test from each side's
// mean, standard deviation and repeats (benchmath.AssumeNormal's test,
// go-moremath's stats.TwoSampleWelchTTest); when neither side has any
// spread its repeats are known exactly (all equal to the mean) and the
// U-test compares them.
const TestNote = "significance: with the repeats in both records, benchstat's: the median ± its 95% confidence interval " +
	"of the undisturbed repeats, Mann-Whitney's U-test (benchmath.AssumeNothing); " +
	"without them (an older log): the mean ± perf's spread and Welch's t-test from the summaries (test marked t); " +
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
// listed as rows only with all; where one run is a Linux run (ptilab
// linux), a row without its key in the other run stands beside the other
// run's row that differs only in global, the configuration cell saying
// so ("(B: global=off)"): a Linux kernel maps its entry text global, and
// the image runs the task benchmarks with global pages off only. Every row names its unit, the report's:
// sched-messaging in seconds (from TSC cycles and the TSC's frequency),
// the others as recorded. When A and B hold the same figures, a note
// says so: comparing a run with itself finds nothing.
func Compare(a, b *Run, all bool) Document {
	d := Document{Heading: []string{
		"A: " + a.Source, "   " + MachineLine(a), "   " + StatusLine(a),
		"B: " + b.Source, "   " + MachineLine(b), "   " + StatusLine(b),
		TestNote,
	}}
	t := Table{Name: "compare", Title: "A against B, configuration by configuration: centre ± spread (see significance above), B/A, p-value and repeats, the change if significant",
		Columns: tables.Cols("configuration", "unit", "A", "B", "B/A", "test", "change")}
	ma, mb := a.Measurements(), b.Measurements()
	inB := map[string]*Measurement{}
	var order []string
	for i := range mb {
		k := mb[i].Key()
		if _, dup := inB[k]; !dup {
			order = append(order, k)
		}
		inB[k] = &mb[i]
	}
	seen := map[string]bool{}
	inA := map[string]bool{}
	for i := range ma {
		inA[ma[i].Key()] = true
	}
	linux := linuxNote(a) != "" || linuxNote(b) != ""
	var centres []centrePair
	add := func(row []string, c centrePair) {
		t.Rows = append(t.Rows, row)
		if c.unit != "" {
			centres = append(centres, c)
		}
	}
	onlyA, onlyB, same, both := 0, 0, 0, 0
	for i := range ma {
		k := ma[i].Key()
		if seen[k] {
			continue
		}
		seen[k] = true
		y := inB[k]
		label := k
		if y == nil && linux {
			// A Linux kernel with PGE maps its entry text global; the
			// image runs some benchmarks with global pages off only.
			// Such rows stand beside their global twin, said so.
			if tk := ma[i].globalTwin(); inB[tk] != nil && !inA[tk] && !seen[tk] {
				y, seen[tk] = inB[tk], true
				label = fmt.Sprintf("%s (B: global=%s)", k, onOff(!ma[i].Global))
			}
		}
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
		add(compareRow(label, a, b, &ma[i], y))
	}
	for _, k := range order {
		if !seen[k] {
			onlyB++
			if all {
				add(compareRow(k, a, b, nil, inB[k]))
			}
		}
	}
	comparable, not, welch := 0, 0, 0
	for _, row := range t.Rows {
		switch {
		case row[6] == "only in A" || row[6] == "only in B": // counted apart below
		case row[4] == "-":
			not++
		case strings.HasPrefix(row[5], "t "):
			welch++
			comparable++
		default:
			comparable++
		}
	}
	t.Rows = append(t.Rows, geomeans(centres)...)
	t.Notes = []string{fmt.Sprintf("%d rows compared, %d not compared (named with the reason)", comparable, not)}
	if comparable > 0 {
		alpha := benchmath.DefaultThresholds.CompareAlpha
		t.Notes = append(t.Notes, fmt.Sprintf("%d comparisons at alpha %.2f (%d by the U-test on the repeats, %d by Welch's t-test on summaries): about %.1f would come out significant by chance alone, with no correction for multiple testing",
			comparable, alpha, comparable-welch, welch, float64(comparable)*alpha))
	}
	if onlyA+onlyB > 0 {
		shown := "not shown: -all lists them"
		if all {
			shown = "listed"
		}
		t.Notes = append(t.Notes, fmt.Sprintf("%s only in A, %d only in B (%s)", configurations(onlyA), onlyB, shown))
	}
	if both > 0 && same == both && comparable == both {
		t.Notes = append(t.Notes, "A and B hold the same figures, every one: a run compared with itself (p = 1 everywhere, nothing to find)")
	}
	if seeds(a) || seeds(b) {
		t.Notes = append(t.Notes, "(the seed tables' cells are the null and sched-messaging rows above, not compared twice)")
	}
	d.Tables = []Table{t}
	return d
}

// compareRow is the row of configuration k: x in run a, y in run b
// (nil: absent).
func compareRow(k string, a, b *Run, x, y *Measurement) ([]string, centrePair) {
	row := []string{k, unitOf(x, y), shown(x), shown(y), "-", "-"}
	why := func(s string) ([]string, centrePair) { return append(row, s), centrePair{} }
	switch {
	case x == nil:
		return why("only in B")
	case y == nil:
		return why("only in A")
	case x.Stats == nil || y.Stats == nil:
		return why(fmt.Sprintf("not compared: %s in A, %s in B", runState(x), runState(y)))
	}
	if wa, wb := workloadOf(x), workloadOf(y); wa != wb {
		return why(fmt.Sprintf("not compared: different workloads (A %s, B %s)", wa, wb))
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
	sx, sy := sideOf(x), sideOf(y)
	var c benchmath.Comparison
	test := ""
	if sx.sample != nil && sy.sample != nil {
		c = benchmath.AssumeNothing.Compare(sx.sample, sy.sample)
		row[2], row[3] = sx.cell(), sy.cell()
	} else {
		// Summaries only: the means, Welch's t-test.
		c = significance(x, y)
		sx, sy = side{centre: sx.mean, unit: sx.unit}, side{centre: sy.mean, unit: sy.unit}
		test = "t "
	}
	row[4] = fmt.Sprintf("%.3f", sy.centre/sx.centre)
	row[5] = test + testString(c)
	change := c.FormatDelta(sx.centre, sy.centre)
	for _, w := range c.Warnings {
		change += " (" + w.Error() + ")"
	}
	return append(row, change), centrePair{unit: sx.unit, a: sx.centre, b: sy.centre}
}

// centrePair is a compared row's unit and its two centres (unit empty: the
// row was not compared).
type centrePair struct {
	unit string
	a, b float64
}

// testString is a comparison's p-value and sizes: "p=0.002 n=10" (or
// n=A+B), the p-value shown even when it rounds to 0.
func testString(c benchmath.Comparison) string {
	if c.N1 == c.N2 {
		return fmt.Sprintf("p=%.3f n=%d", c.P, c.N1)
	}
	return fmt.Sprintf("p=%.3f n=%d+%d", c.P, c.N1, c.N2)
}

// side is a figure in a comparison, in the report's unit (figure):
// its mean, and where its record has repeats, the sample of its
// undisturbed ones, its centre (median) and confidence interval, and how
// many repeats were disturbed.
type side struct {
	unit      string
	mean      float64
	sample    *benchmath.Sample
	centre    float64
	summary   benchmath.Summary
	disturbed int
}

// sideOf is m as a side of a comparison.
func sideOf(m *Measurement) side {
	mean, _, unit := figure(m)
	s := side{unit: unit, mean: mean, centre: mean}
	if len(m.Stats.Repeats) == 0 {
		return s
	}
	scale := mean / m.Stats.Mean
	if m.Stats.Mean == 0 {
		scale = 1
	}
	out := map[int]bool{}
	for _, i := range m.Stats.DisturbedRepeats {
		out[i] = true
	}
	var xs []float64
	for i, v := range m.Stats.Repeats {
		if out[i] {
			s.disturbed++
			continue
		}
		xs = append(xs, v*scale)
	}
	if len(xs) == 0 {
		return s
	}
	th := benchmath.DefaultThresholds
	s.sample = benchmath.NewSample(xs, &th)
	s.summary = benchmath.AssumeNothing.Summary(s.sample, 0.95)
	s.centre = s.summary.Center
	return s
}

// cell is s's figure: its centre ± its confidence interval (benchstat's
// "± 11%"), and the disturbed repeats left out.
func (s side) cell() string {
	c := fmt.Sprintf("%.1f ± %s", s.centre, s.summary.PctRangeString())
	if s.unit == "s" {
		c = fmt.Sprintf("%.4g ± %s", s.centre, s.summary.PctRangeString())
	}
	if s.disturbed > 0 {
		c += fmt.Sprintf(" (%d dist.)", s.disturbed)
	}
	return c
}

// geomeans are a row per unit of the compared rows: the geometric mean
// of A's centres, of B's, their ratio and the change (benchstat's
// geomean row, from the same unrounded centres).
func geomeans(cs []centrePair) [][]string {
	type acc struct {
		n      int
		la, lb float64
	}
	by := map[string]*acc{}
	var units []string
	for _, c := range cs {
		if c.a <= 0 || c.b <= 0 {
			continue
		}
		g := by[c.unit]
		if g == nil {
			g = &acc{}
			by[c.unit] = g
			units = append(units, c.unit)
		}
		g.n++
		g.la += math.Log(c.a)
		g.lb += math.Log(c.b)
	}
	var out [][]string
	for _, u := range units {
		g := by[u]
		ga, gb := math.Exp(g.la/float64(g.n)), math.Exp(g.lb/float64(g.n))
		out = append(out, []string{fmt.Sprintf("geomean of %d rows", g.n), u, fmt.Sprintf("%.4g", ga), fmt.Sprintf("%.4g", gb),
			fmt.Sprintf("%.3f", gb/ga), "", fmt.Sprintf("%+.2f%%", (gb/ga-1)*100)})
	}
	return out
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

// workloadOf is a sched-messaging measurement's shape in perf's terms
// ("-g 2 -l 10, 100-byte messages"), "" for the other benchmarks.
func workloadOf(m *Measurement) string {
	if v, ok := m.Record.Record.(contract.Messaging); ok {
		return fmt.Sprintf("-g %d -l %d, %d-byte messages", v.Groups, v.Loops, v.Size)
	}
	return ""
}

// onOff names a global setting.
func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// seeds reports whether r has seed-table cells (seed records), which
// compare leaves out.
func seeds(r *Run) bool {
	for _, rec := range r.Records {
		switch rec.Record.(type) {
		case contract.Seed, contract.SeedUnsupported:
			return true
		}
	}
	return false
}

// shown is m's figure as the significance note says a row shows it,
// whether or not the row is compared: the median ± its confidence
// interval where its record has repeats, else the mean ± perf's spread.
func shown(m *Measurement) string {
	if m != nil && m.Stats != nil {
		if s := sideOf(m); s.sample != nil {
			return s.cell()
		}
	}
	return cell(m)
}

// runState says what became of a configuration that has a row.
func runState(m *Measurement) string {
	if m.Stats != nil {
		return "measured"
	}
	return m.NotRun
}

// linuxNote names the figures of a `ptilab linux` run: "Linux 6.1.0 (a
// KVMKVMKVM guest)", "Linux 6.1.0 (hardware)"; "" for the image's runs.
func linuxNote(r *Run) string {
	if r.Machine == nil || r.Machine.Board != "linux" {
		return ""
	}
	s := "a Linux run"
	for _, rec := range r.Records {
		if l, ok := rec.Record.(contract.Linux); ok {
			s = "Linux " + l.Release
		}
	}
	if hv := r.Machine.Hypervisor; hv != "" {
		return s + " (a " + hv + " guest)"
	}
	return s + " (hardware)"
}

// emulation says whether a measurement's figures are emulated, and by
// what, in a word or two.
func emulation(r *Run, m *Measurement) string {
	if n := linuxNote(r); n != "" && !m.Emulated {
		return n
	}
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
