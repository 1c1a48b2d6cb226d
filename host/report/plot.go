package report

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/reference"
)

// Plot is a figure of `ptilab plot`: its file name's stem (the run's
// name is put before it), and the plot.
type Plot struct {
	Name   string
	Plot   *plot.Plot
	Series []string // the legend's entries, one per series
	// Missing are the configurations of the plot's figures that are not
	// in it, each "mode: why" (unsupported, failed); the plot's title
	// names them.
	Missing []string
	// Width and Height are its size; zero: plotWidth by plotHeight.
	Width, Height vg.Length
}

// Save writes p to file f, in the format of f's extension (.svg, .png).
func (p Plot) Save(f string) error {
	w, h := p.Width, p.Height
	if w == 0 {
		w = plotWidth
	}
	if h == 0 {
		h = plotHeight
	}
	return p.Plot.Save(w, h, f)
}

// plot sizes.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 5 * vg.Inch
	barWidth   = 12 * vg.Millimeter / 3
	// A horizontal bar chart's groups are hgroup apart, its bars
	// hbarWidth wide (two series fill 80% of a group).
	hgroup    = 5 * vg.Millimeter
	hbarWidth = hgroup * 0.8 / 2
)

// Plots makes the plots of a run that has their figures: the work curve
// of each world (ns per call against ns of work, a line per mode) and its
// overhead (each mode's ratio to off against ns of work), the null call
// of each world (ns per call per mode, a bar per flavour and global-page
// setting), the seed tables (32-bit and 64-bit side by side: ratio to off
// per mode, grouped bars), the TLB sweep of each kind, the flush costs
// and the mitigation ladders (the null call's and the ping-pong's, each
// world's). Error bars are
// the tables' ± (perf stat --repeat's: the standard deviation of the
// mean). Every title says so when the figures are emulated or the run
// was cut short, and names the modes of its figures that did not run.
func Plots(r *Run) ([]Plot, error) {
	ms := r.Measurements()
	var makers []func() (*Plot, error)
	for _, width := range []int{64, 32} {
		makers = append(makers, func() (*Plot, error) { return workPlot(r, ms, width) })
	}
	for _, width := range []int{64, 32} {
		makers = append(makers, func() (*Plot, error) { return overheadPlot(r, ms, width) })
	}
	for _, width := range []int{64, 32} {
		makers = append(makers, func() (*Plot, error) { return nullPlot(r, ms, width) })
	}
	for _, bench := range []string{"null", "messaging"} {
		makers = append(makers, func() (*Plot, error) { return seedPlot(r, bench) })
	}
	for _, kind := range sweepKinds(ms) {
		makers = append(makers, func() (*Plot, error) { return sweepPlot(r, ms, kind) })
	}
	makers = append(makers, func() (*Plot, error) { return flushPlot(r, ms) })
	for _, bench := range []string{"ladder", "ladder32"} {
		makers = append(makers, func() (*Plot, error) { return ladderPlot(r, ms, bench) })
	}
	var out []Plot
	for _, mk := range makers {
		p, err := mk()
		if err != nil {
			return nil, err
		}
		if p != nil {
			out = append(out, *p)
		}
	}
	return out, nil
}

// WritePlots writes each plot of runs as an SVG file in dir, named after
// its run's source and the plot; it returns the files written.
func WritePlots(dir string, runs []*Run) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	used := map[string]bool{}
	for _, r := range runs {
		ps, err := Plots(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Source, err)
		}
		if len(ps) == 0 {
			return nil, fmt.Errorf("%s: no figures to plot (no work curve, null call, seed, TLB sweep, flush-cost or ladder records)", r.Source)
		}
		stem := runStem(r, used)
		for _, p := range ps {
			f := filepath.Join(dir, stem+"-"+p.Name+".svg")
			if err := p.Save(f); err != nil {
				return nil, err
			}
			files = append(files, f)
		}
	}
	return files, nil
}

// runStem is a name for a run's files, unique among used: its source's
// file name without the extension.
func runStem(r *Run, used map[string]bool) string {
	base := filepath.Base(r.Source)
	base = base[:len(base)-len(filepath.Ext(base))]
	stem := base
	for i := 2; used[stem]; i++ {
		stem = fmt.Sprintf("%s-%d", base, i)
	}
	used[stem] = true
	return stem
}

// newPlot is a plot titled title, with a second line saying whether the
// figures are emulated and the machine's CPU.
func newPlot(r *Run, title, x, y string) *plot.Plot {
	p := plot.New()
	cpu := "unknown machine"
	if r.Machine != nil {
		cpu = r.Machine.Brand
	}
	how := "hardware: " + cpu
	if n := linuxNote(r); n != "" {
		how = n + ": " + cpu
	}
	if r.Emulated() {
		how = "EMULATED figures (" + emulatorOf(r) + "), not hardware: " + cpu
	}
	if r.CutShort() {
		how += "; CUT SHORT run (no PTILAB-END): what it measured before the cut"
	}
	p.Title.Text = title + "\n" + how
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

// emulatorOf names the run's emulator.
func emulatorOf(r *Run) string {
	if r.Machine != nil && r.Machine.Emulator != "" {
		return r.Machine.Emulator
	}
	if r.Timing != nil && r.Timing.Emulator != "" {
		return r.Timing.Emulator
	}
	return "an emulator"
}

// missing is why m did not run, named label, for a plot's title: "on+pcid:
// unsupported (reason)" or "on: failed (error)".
func missing(label string, m Measurement) string {
	return fmt.Sprintf("%s: %s (%s)", label, strings.ToLower(m.NotRun), withoutKey(reasonOf(m)))
}

// figureGrid collects a plot's figures by series (rows, first seen
// first) and point or group (cols), and names those that did not run.
type figureGrid[R, C comparable] struct {
	rows   []R
	cols   []C
	at     map[R]map[C]Measurement
	notRun []string
}

// add files m under row and col, or, when it did not run, its missing
// line named label.
func (g *figureGrid[R, C]) add(m Measurement, row R, col C, label string) {
	if m.Stats == nil {
		if s := missing(label, m); !slices.Contains(g.notRun, s) {
			g.notRun = append(g.notRun, s)
		}
		return
	}
	if g.at == nil {
		g.at = map[R]map[C]Measurement{}
	}
	if g.at[row] == nil {
		g.rows = append(g.rows, row)
		g.at[row] = map[C]Measurement{}
	}
	g.at[row][col] = m
	if !slices.Contains(g.cols, col) {
		g.cols = append(g.cols, col)
	}
}

// series are g's rows as bars over its cols: each figure's mean (value
// maps it to the plot's unit; nil: as recorded) with the tables' ± as
// its error, named by name.
func (g *figureGrid[R, C]) series(name func(R) string, value func(Measurement) float64) []bars {
	var out []bars
	for _, row := range g.rows {
		s := bars{name: name(row)}
		for _, col := range g.cols {
			m, ok := g.at[row][col]
			v := 0.0
			if ok {
				v = m.Stats.Mean
				if value != nil {
					v = value(m)
				}
			}
			s.has, s.vals = append(s.has, ok), append(s.vals, v)
			if ok {
				s.err = append(s.err, v*m.Stats.PerfPct/100)
			} else {
				s.err = append(s.err, 0)
			}
		}
		out = append(out, s)
	}
	return out
}

// withoutKey is a reason without the configuration's key the image puts
// before it ("width=64 mode=on+pcid ...: PCID: not supported",
// "off/mitigated/nonglobal/ibrs: ibrs: no IA32_SPEC_CTRL ...").
func withoutKey(why string) string {
	if i := strings.Index(why, ": "); i >= 0 && strings.ContainsAny(why[:i], "=/") {
		return why[i+2:]
	}
	return why
}

// addMissing names in p's title the configurations of its figures that
// did not run, and returns them.
func addMissing(p *plot.Plot, ms []string) []string {
	if len(ms) > 0 {
		p.Title.Text += "\n" + strings.Join(wrap("not plotted: "+strings.Join(ms, "; "), plotTitleWidth), "\n")
	}
	return ms
}

// plotTitleWidth is how many characters a line of a plot's title holds.
const plotTitleWidth = 95

// workPoints are the work curve of the world of width: per mode (rows,
// in output order), the measured points by work in ns (cols, sorted),
// and what did not run.
func workPoints(ms []Measurement, width int) figureGrid[string, int64] {
	var g figureGrid[string, int64]
	for _, m := range ms {
		if benchOf(m, "work") && m.Width == width && m.WorkNs != nil {
			g.add(m, m.ModeName(), *m.WorkNs, m.ModeName())
		}
	}
	slices.Sort(g.cols)
	return g
}

// nominalWork names the work points on p's X axis, evenly spaced (the
// default plan's 0, 100, 500, 2000 and 5000 ns crowd a linear axis).
func nominalWork(p *plot.Plot, works []int64) {
	labels := make([]string, len(works))
	for i, w := range works {
		labels[i] = fmt.Sprint(w)
	}
	p.NominalX(labels...)
}

// workPlot is the work curve of the world of width: ns per call against
// ns of work (the measured points, evenly spaced), a line per mode
// measured with the tables' ± as error bars; nil if the run has none.
func workPlot(r *Run, ms []Measurement, width int) (*Plot, error) {
	g := workPoints(ms, width)
	modes, works, at, notRun := g.rows, g.cols, g.at, g.notRun
	if len(modes) == 0 {
		return nil, nil
	}
	p := newPlot(r, fmt.Sprintf("%d-bit system call spending a given time in the kernel:\nns per call by PTI mode; error bars: the tables' ± (standard deviation of the mean)", width),
		"work in the kernel (ns; the measured points, evenly spaced)", "ns per call")
	nominalWork(p, works)
	for i, mode := range modes {
		var pts errPoints
		for j, w := range works {
			if m, ok := at[mode][w]; ok {
				pts = append(pts, errPoint{x: float64(j), y: m.Ns, e: m.Ns * m.Stats.PerfPct / 100})
			}
		}
		if err := addLine(p, i, "PTI "+mode, pts); err != nil {
			return nil, err
		}
	}
	p.Y.Min, p.Y.Max = 0, p.Y.Max*1.15 // room for the legend
	return &Plot{Name: fmt.Sprintf("work%d", width), Plot: p, Series: prefixed("PTI ", modes), Missing: addMissing(p, notRun)}, nil
}

// overheadPlot is the work curve's overhead in the world of width: each
// isolated mode's ratio to off at the same work against ns of work, with
// the 64-bit reference's 2 µs call (Linux: about 1.06) where the plan
// measured 2000 ns; nil if no mode but off measured.
func overheadPlot(r *Run, ms []Measurement, width int) (*Plot, error) {
	g := workPoints(ms, width)
	modes, works, at, notRun := g.rows, g.cols, g.at, g.notRun
	var series []string
	for _, mode := range modes {
		if mode != "off" {
			series = append(series, "PTI "+mode+" vs off")
		}
	}
	if len(series) == 0 {
		return nil, nil
	}
	p := newPlot(r, fmt.Sprintf("%d-bit system call spending a given time in the kernel:\nwhat isolation costs as the call does more work (ratio to PTI off)", width),
		"work in the kernel (ns; the measured points, evenly spaced)", "ratio to off (1: no cost)")
	nominalWork(p, works)
	i := 0
	for _, mode := range modes {
		if mode == "off" {
			continue
		}
		var pts errPoints
		for j, w := range works {
			if m, ok := at[mode][w]; ok && m.Stats.RatioToOff != 0 {
				pts = append(pts, errPoint{x: float64(j), y: m.Stats.RatioToOff})
			}
		}
		if err := addLine(p, i, series[i], pts); err != nil {
			return nil, err
		}
		i++
	}
	if j := slices.Index(works, 2000); j >= 0 && width == 64 {
		ref, err := plotter.NewScatter(plotter.XYs{{X: float64(j), Y: 1 + float64(reference.Work2usPctPTI)/100}})
		if err != nil {
			return nil, err
		}
		ref.Shape = draw.CrossGlyph{}
		ref.Radius = vg.Points(6)
		name := "Linux, a 2 µs call under PTI (docs/references.md)"
		p.Add(ref)
		p.Legend.Add(name, ref)
		series = append(series, name)
	}
	p.Y.Min, p.Y.Max = 0, p.Y.Max*1.15
	return &Plot{Name: fmt.Sprintf("overhead%d", width), Plot: p, Series: series, Missing: addMissing(p, notRun)}, nil
}

// sweepPlot is the TLB sweep of kind: each isolated mode's extra over off
// at the same point (units per call) against the pages touched per call
// (the points, evenly spaced), a line per mode and global setting; nil if
// no mode but off measured.
func sweepPlot(r *Run, ms []Measurement, kind string) (*Plot, error) {
	var points []int
	lines := map[string]map[int]float64{}
	var series []string
	unit := ""
	var notRun []string
	for _, m := range ms {
		if m.Bench != "tlbsweep" || m.Target != kind || m.SweepPages == nil {
			continue
		}
		if m.Stats == nil {
			if s := missing(m.ModeName(), m); !slices.Contains(notRun, s) {
				notRun = append(notRun, s)
			}
			continue
		}
		if !slices.Contains(points, *m.SweepPages) {
			points = append(points, *m.SweepPages)
		}
		sw, ok := m.Record.Record.(contract.TLBSweep)
		if !ok || sw.ExtraVsOff == nil {
			continue
		}
		unit = sw.Unit
		name := fmt.Sprintf("PTI %s, global pages %s", m.ModeName(), map[bool]string{false: "off", true: "on"}[m.Global])
		if lines[name] == nil {
			lines[name] = map[int]float64{}
			series = append(series, name)
		}
		lines[name][*m.SweepPages] = *sw.ExtraVsOff
	}
	if len(series) == 0 {
		return nil, nil
	}
	slices.Sort(points)
	labels := make([]string, len(points))
	for i, n := range points {
		labels[i] = fmt.Sprint(n)
	}
	p := newPlot(r, fmt.Sprintf("TLB working-set sweep, %s: what isolation adds to a call\nplus its touches of N distinct pages, over PTI off", kind),
		"pages touched per call (N)", fmt.Sprintf("extra %s per call over off", unitName(unit)))
	p.NominalX(labels...)
	for i, name := range series {
		var pts errPoints
		for j, n := range points {
			if v, ok := lines[name][n]; ok {
				pts = append(pts, errPoint{x: float64(j), y: v})
			}
		}
		if err := addLine(p, i, name, pts); err != nil {
			return nil, err
		}
	}
	return &Plot{Name: "tlbsweep-" + strings.ReplaceAll(kind, " ", "-"), Plot: p, Series: series, Missing: addMissing(p, notRun)}, nil
}

func prefixed(pre string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = pre + s
	}
	return out
}

// bars is a series of a grouped bar chart: a value per group and its
// error (0: none).
type bars struct {
	name      string
	vals, err []float64
	has       []bool
}

// groupedBars adds to p a bar per series in each group, the series side
// by side, with error bars where a series has errors, and names the
// groups on the X axis.
func groupedBars(p *plot.Plot, groups []string, series []bars) error {
	return addBars(p, groups, series, false)
}

// addBars is groupedBars, horizontal (groups on the Y axis, from the top)
// or vertical.
func addBars(p *plot.Plot, groups []string, series []bars, horizontal bool) error {
	k := float64(len(series))
	n := len(groups)
	at := func(g int) float64 {
		if horizontal {
			return float64(n - 1 - g) // the first group at the top
		}
		return float64(g)
	}
	for j, s := range series {
		x0 := (float64(j) - (k-1)/2) * 0.8 / k
		if horizontal {
			x0 = -x0 // the first series on top within its group
		}
		vals := make(plotter.Values, n)
		var errs errPoints
		for g := range groups {
			if s.has[g] {
				vals[int(at(g))] = s.vals[g]
				if s.err != nil && s.err[g] > 0 {
					errs = append(errs, errPoint{x: at(g) + x0, y: s.vals[g], e: s.err[g]})
				}
			}
		}
		w := barWidth
		if horizontal {
			w = hbarWidth
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		b.XMin = x0
		b.Horizontal = horizontal
		b.Color = plotutil.Color(j)
		b.LineStyle.Width = 0
		p.Add(b)
		p.Legend.Add(s.name, b)
		if len(errs) > 0 && !horizontal {
			eb, err := plotter.NewYErrorBars(errs)
			if err != nil {
				return err
			}
			eb.Color = color.Black
			p.Add(eb)
		}
	}
	if horizontal {
		labels := slices.Clone(groups)
		slices.Reverse(labels)
		p.NominalY(labels...)
		p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
		p.X.Min = 0
		return nil
	}
	p.NominalX(groups...)
	// Room beside the outer bars, and above the highest for the legend.
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Min, p.Y.Max = 0, p.Y.Max*1.25
	return nil
}

// errPoint is a bar's top and its error (one standard deviation).
type errPoint struct{ x, y, e float64 }

// errPoints implement plotter.XYer and plotter.YErrorer.
type errPoints []errPoint

func (e errPoints) Len() int                        { return len(e) }
func (e errPoints) XY(i int) (float64, float64)     { return e[i].x, e[i].y }
func (e errPoints) YError(i int) (float64, float64) { return e[i].e, e[i].e }

// nullPlot is the null call of the world of width: ns per call per mode,
// a bar per flavour and global-page setting (the world's default entry
// and pt_regs copy, the first the run measured), the tables' ± as error
// bars; nil if the run has none.
func nullPlot(r *Run, ms []Measurement, width int) (*Plot, error) {
	type key struct {
		flavour string
		global  bool
	}
	var g figureGrid[key, string] // a series per flavour and global setting, a group per mode
	entry, copyMethod := "", ""
	for _, m := range ms {
		if !benchOf(m, "null") || m.Width != width || m.Stamps || m.Mitigations != "" {
			continue
		}
		if entry == "" {
			entry = m.Entry
		}
		if m.Copy != "" && copyMethod == "" {
			copyMethod = m.Copy
		}
		if m.Entry == entry && (m.Copy == "" || m.Copy == copyMethod) {
			g.add(m, key{m.Flavour, m.Global}, m.ModeName(), m.ModeName())
		}
	}
	if len(g.cols) == 0 {
		return nil, nil
	}
	series := g.series(func(k key) string {
		return fmt.Sprintf("%s flavour, global pages %s", k.flavour, map[bool]string{false: "off", true: "on"}[k.global])
	}, func(m Measurement) float64 { return m.Ns })
	world := fmt.Sprintf("%d-bit", width)
	if width == 32 && linuxNote(r) != "" {
		world = "32-bit programs on the 64-bit kernel:"
	}
	p := newPlot(r, fmt.Sprintf("%s null system call (getppid, %s):\nns per call by PTI mode, flavour and global pages; error bars: the tables' ± (standard deviation of the mean)", world, entry),
		"PTI mode", "ns per call")
	if err := groupedBars(p, prefixed("PTI ", g.cols), series); err != nil {
		return nil, err
	}
	return &Plot{Name: fmt.Sprintf("null%d", width), Plot: p, Series: names(series), Missing: addMissing(p, g.notRun)}, nil
}

func names(series []bars) []string {
	var out []string
	for _, s := range series {
		out = append(out, s.name)
	}
	return out
}

// seedPlot is a seed table as grouped bars: the ratio to the same
// width's off per mode, a bar per width and column (flavour or task
// kind); nil if the run has no seed records of bench.
func seedPlot(r *Run, bench string) (*Plot, error) {
	type col struct {
		width int
		name  string
	}
	var modes, notRun []string
	var cols []col
	val := map[string]float64{}
	for _, rec := range r.Records {
		if u, ok := rec.Record.(contract.SeedUnsupported); ok && u.Bench == bench {
			why := fmt.Sprintf("%d-bit %s: unsupported (%s)", u.Width, u.ModeName(), withoutKey(u.Reason))
			if !slices.Contains(notRun, why) {
				notRun = append(notRun, why)
			}
			continue
		}
		s, ok := rec.Record.(contract.Seed)
		if !ok || s.Bench != bench || s.RatioToOff == 0 {
			continue
		}
		c := col{s.Width, s.Flavour}
		if bench == "messaging" {
			c.name = s.Tasks
		}
		if !slices.Contains(modes, s.ModeName()) {
			modes = append(modes, s.ModeName())
		}
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
		val[fmt.Sprint(c, s.ModeName())] = s.RatioToOff
	}
	if len(modes) == 0 {
		return nil, nil
	}
	var series []bars
	for _, c := range cols {
		s := bars{name: fmt.Sprintf("%d-bit %s", c.width, c.name)}
		for _, mode := range modes {
			v, ok := val[fmt.Sprint(c, mode)]
			s.vals, s.has = append(s.vals, v), append(s.has, ok)
		}
		series = append(series, s)
	}
	title := "null system call, 32-bit PAE (SYSENTER) vs 64-bit (SYSCALL), global pages off:\nratio to the same width's PTI off (no error bars: ratios)"
	if bench == "messaging" {
		title = "sched-messaging, 32-bit PAE vs 64-bit: ratio to the same width's PTI off (no error bars: ratios)\n(" + reference.SeedMessaging() + ")"
	}
	p := newPlot(r, title, "PTI mode", "ratio to off")
	if err := groupedBars(p, prefixed("PTI ", modes), series); err != nil {
		return nil, err
	}
	return &Plot{Name: "seed-" + bench, Plot: p, Series: names(series), Missing: addMissing(p, notRun)}, nil
}

// addLine adds series i of p: a line with points through pts, in the
// series' color and point shape, named in the legend, with error bars
// where a point has an error. Series past the palette's seven colors
// (a plan of more than seven modes: the last, asi, would take the first
// modes' colors) are dashed, a dash pattern per round of the colors.
func addLine(p *plot.Plot, i int, name string, pts errPoints) error {
	xys := make(plotter.XYs, len(pts))
	var errs errPoints
	for k, e := range pts {
		xys[k] = plotter.XY{X: e.x, Y: e.y}
		if e.e > 0 {
			errs = append(errs, e)
		}
	}
	l, dots, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, dots.Color = plotutil.Color(i), plotutil.Color(i)
	if round := i / len(plotutil.DefaultColors); round > 0 {
		l.Dashes = plotutil.Dashes(round)
	}
	dots.Shape = plotutil.Shape(i)
	p.Add(l, dots)
	p.Legend.Add(name, l, dots)
	if len(errs) > 0 {
		eb, err := plotter.NewYErrorBars(errs)
		if err != nil {
			return err
		}
		eb.Color = plotutil.Color(i)
		p.Add(eb)
	}
	return nil
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

// ComparePlot sets two runs' PTI costs side by side: for each
// configuration both measured with a ratio to their own PTI off (every
// isolated mode's figure), that ratio in A and in B, horizontal bars a
// configuration each; nil when they have none in common. Its file name's
// stem is "compare".
func ComparePlot(a, b *Run) (*Plot, error) {
	inB := map[string]Measurement{}
	for _, m := range b.Measurements() {
		if m.Stats != nil && m.Stats.RatioToOff != 0 && m.Mode != "off" {
			inB[m.Subject.Key()] = m
		}
	}
	var groups []string
	sa := bars{name: "A: " + runLabel(a)}
	sb := bars{name: "B: " + runLabel(b)}
	seen := map[string]bool{}
	for _, x := range a.Measurements() {
		k := x.Subject.Key()
		y, ok := inB[k]
		if !ok || seen[k] || x.Stats == nil || x.Stats.RatioToOff == 0 {
			continue
		}
		seen[k] = true
		groups = append(groups, shortKey(k))
		sa.vals, sa.has = append(sa.vals, x.Stats.RatioToOff), append(sa.has, true)
		sb.vals, sb.has = append(sb.vals, y.Stats.RatioToOff), append(sb.has, true)
	}
	if len(groups) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "PTI's cost in A and in B: each configuration's ratio to its own run's PTI off (1: no cost; no error bars: ratios)"
	for _, r := range []*Run{a, b} {
		if r.Emulated() {
			p.Title.Text += "\n" + map[bool]string{true: "A", false: "B"}[r == a] + ": EMULATED figures (" + emulatorOf(r) + "), not hardware"
		}
		if r.CutShort() {
			p.Title.Text += "\n" + map[bool]string{true: "A", false: "B"}[r == a] + ": CUT SHORT run (no PTILAB-END)"
		}
	}
	p.X.Label.Text = "ratio to off"
	p.Legend.Top = false // bottom right: the last groups (sched-messaging) have the shortest bars
	p.Add(plotter.NewGrid())
	if err := addBars(p, groups, []bars{sa, sb}, true); err != nil {
		return nil, err
	}
	p.X.Max *= 1.2
	return &Plot{Name: "compare", Plot: p, Series: []string{sa.name, sb.name},
		Width: plotWidth + 2*vg.Inch, Height: max(plotHeight, vg.Length(len(groups))*hgroup+40*vg.Millimeter)}, nil
}

// WriteComparePlot writes ComparePlot(a, b) as an SVG file f.
func WriteComparePlot(f string, a, b *Run) error {
	p, err := ComparePlot(a, b)
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("no configuration with a ratio to off in both runs: nothing to plot")
	}
	return p.Save(f)
}

// runLabel names a run in a legend: its source's file name and its CPU.
func runLabel(r *Run) string {
	l := filepath.Base(r.Source)
	if r.Machine != nil {
		l += " (" + strings.TrimSpace(r.Machine.Brand) + ")"
	}
	return l
}

// shortKey is a configuration's key for a plot's label: the values of
// bench, width, mode, entry, flavour, copy, tasks, IPC and target, the
// other pairs as key=value; global off, and a width the bench's name
// ends with, left out.
func shortKey(k string) string {
	var out []string
	bench := ""
	for _, f := range strings.Fields(k) {
		name, v, ok := strings.Cut(f, "=")
		if name == "bench" {
			bench = v
		}
		switch {
		case !ok:
			out = append(out, f)
		case name == "global" && v == "off", name == "width" && strings.HasSuffix(bench, v):
		case slices.Contains([]string{"bench", "width", "mode", "entry", "flavour", "copy", "tasks", "ipc", "target"}, name):
			out = append(out, strings.Trim(v, `"`))
		default:
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}

// flushPlot is the flush costs: a bar per operation, its units per
// operation with the tables' ± as error bars; nil if the run has none.
func flushPlot(r *Run, ms []Measurement) (*Plot, error) {
	var ops, notRun []string
	s := bars{name: "per operation"}
	unit := ""
	for _, m := range ms {
		if m.Bench != "flushcost" {
			continue
		}
		if m.Stats == nil {
			notRun = append(notRun, missing(m.Target, m))
			continue
		}
		ops = append(ops, m.Target)
		unit = m.Stats.Unit
		s.vals, s.has = append(s.vals, m.Stats.Mean), append(s.has, true)
		s.err = append(s.err, m.Stats.Mean*m.Stats.PerfPct/100)
	}
	if len(ops) == 0 {
		return nil, nil
	}
	s.name = unitName(unit) + " per operation"
	p := newPlot(r, "TLB flush costs in ring 0, interrupts masked, per operation (empty loop subtracted);\nerror bars: the tables' ± (standard deviation of the mean)",
		"operation", unitName(unit)+" per operation")
	if err := groupedBars(p, ops, []bars{s}); err != nil {
		return nil, err
	}
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = -1, -0.5
	return &Plot{Name: "flushcost", Plot: p, Series: []string{s.name}, Missing: addMissing(p, notRun)}, nil
}

// reasonOf is why a configuration that did not run did not.
func reasonOf(m Measurement) string {
	switch v := m.Record.Record.(type) {
	case contract.Unsupported:
		return v.Reason
	case contract.Error:
		return v.Error
	}
	return ""
}

// ladderPlot is a mitigation ladder (bench "ladder" or "ladder32"): a
// bar per rung (its knobs, in the order measured) and mode, the rung's
// figure per operation with the tables' ± as error bars; the null call's
// and the ping-pong's rungs apart (their figures differ by orders of
// magnitude); nil if the run has none.
func ladderPlot(r *Run, ms []Measurement, bench string) (*Plot, error) {
	var g figureGrid[string, string] // a series per mode, a group per rung
	unit := ""
	for _, m := range ms {
		if m.Bench != bench || m.Tasks != "" {
			continue // the null call's ladder; the ping-pong's (Tasks) apart
		}
		rung := m.Mitigations
		if rung == "" {
			rung = m.Flavour + " flavour"
		}
		g.add(m, m.Mode, rung, m.Mode+" "+rung)
		if m.Stats != nil {
			unit = m.Stats.Unit
		}
	}
	if len(g.cols) == 0 {
		return nil, nil
	}
	rungs, modes, notRun := g.cols, g.rows, g.notRun
	series := g.series(func(mode string) string { return "PTI " + mode }, nil)
	world := "64-bit"
	if bench == "ladder32" {
		world = "32-bit PAE"
	}
	p := newPlot(r, fmt.Sprintf("mitigation ladder, %s null system call: %s per call by rung and PTI mode;\nerror bars: the tables' ± (standard deviation of the mean)", world, unitName(unit)),
		unitName(unit)+" per call", "rung (the knobs enabled)")
	p.Legend.Top, p.Legend.Left = false, false // bottom right, beside the last rungs' shorter bars
	if err := addBars(p, rungs, series, true); err != nil {
		return nil, err
	}
	p.X.Max *= 1.15
	return &Plot{Name: bench, Plot: p, Series: names(series), Missing: addMissing(p, notRun),
		Width: plotWidth, Height: max(plotHeight, vg.Length(len(rungs))*hgroup*vg.Length(max(len(modes), 2))/2+40*vg.Millimeter)}, nil
}
