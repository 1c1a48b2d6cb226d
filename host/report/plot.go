package report

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/reference"
)

// Plot is a figure of `ptilab plot`: its file name's stem (the run's
// name is put before it), and the plot.
type Plot struct {
	Name   string
	Plot   *plot.Plot
	Series []string // the legend's entries, one per series
}

// plot sizes.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 5 * vg.Inch
	barWidth   = 12 * vg.Millimeter / 3
)

// Plots makes the plots of a run that has their figures: the work curve
// of each world (ns per call against ns of work, a line per mode), the
// null call of each world (ns per call per mode, a bar per flavour, with
// the standard deviation as error bars), and the seed tables (32-bit and
// 64-bit side by side: ratio to off per mode, grouped bars). Every title
// says so when the figures are emulated.
func Plots(r *Run) ([]Plot, error) {
	ms := r.Measurements()
	var makers []func() (*Plot, error)
	for _, width := range []int{64, 32} {
		makers = append(makers, func() (*Plot, error) { return workPlot(r, ms, width) })
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
			return nil, fmt.Errorf("%s: no figures to plot (no work curve, null call, seed or TLB sweep records)", r.Source)
		}
		stem := runStem(r, used)
		for _, p := range ps {
			f := filepath.Join(dir, stem+"-"+p.Name+".svg")
			if err := p.Plot.Save(plotWidth, plotHeight, f); err != nil {
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
	if r.Emulated() {
		how = "EMULATED figures (" + emulatorOf(r) + "), not hardware: " + cpu
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

// workPlot is the work curve of the world of width: ns per call against
// ns of work, a line per mode measured; nil if the run has none.
func workPlot(r *Run, ms []Measurement, width int) (*Plot, error) {
	lines := map[string]plotter.XYs{}
	var modes []string
	for _, m := range ms {
		if !benchOf(m, "work") || m.Width != width || m.WorkNs == nil || m.Stats == nil {
			continue
		}
		if !slices.Contains(modes, m.Mode) {
			modes = append(modes, m.Mode)
		}
		lines[m.Mode] = append(lines[m.Mode], plotter.XY{X: float64(*m.WorkNs), Y: m.Ns})
	}
	if len(modes) == 0 {
		return nil, nil
	}
	p := newPlot(r, fmt.Sprintf("%d-bit system call spending a given time in the kernel:\nns per call by PTI mode", width), "work in the kernel (ns)", "ns per call")
	for i, mode := range modes {
		xys := lines[mode]
		sort.Slice(xys, func(a, b int) bool { return xys[a].X < xys[b].X })
		if err := addLine(p, i, "PTI "+mode, xys); err != nil {
			return nil, err
		}
	}
	p.Y.Min, p.Y.Max = 0, p.Y.Max*1.15 // room for the legend
	return &Plot{Name: fmt.Sprintf("work%d", width), Plot: p, Series: prefixed("PTI ", modes)}, nil
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
	for _, m := range ms {
		if m.Bench != "tlbsweep" || m.Target != kind || m.SweepPages == nil {
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
		name := fmt.Sprintf("PTI %s, global pages %s", m.Mode, map[bool]string{false: "off", true: "on"}[m.Global])
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
		var xys plotter.XYs
		for j, n := range points {
			if v, ok := lines[name][n]; ok {
				xys = append(xys, plotter.XY{X: float64(j), Y: v})
			}
		}
		if err := addLine(p, i, name, xys); err != nil {
			return nil, err
		}
	}
	return &Plot{Name: "tlbsweep-" + strings.ReplaceAll(kind, " ", "-"), Plot: p, Series: series}, nil
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
	k := float64(len(series))
	for j, s := range series {
		x0 := (float64(j) - (k-1)/2) * 0.8 / k
		var vals plotter.Values
		var errs errPoints
		for g := range groups {
			v := 0.0
			if s.has[g] {
				v = s.vals[g]
				if s.err != nil && s.err[g] > 0 {
					errs = append(errs, errPoint{x: float64(g) + x0, y: v, e: s.err[g]})
				}
			}
			vals = append(vals, v)
		}
		b, err := plotter.NewBarChart(vals, barWidth)
		if err != nil {
			return err
		}
		b.XMin = x0
		b.Color = plotutil.Color(j)
		b.LineStyle.Width = 0
		p.Add(b)
		p.Legend.Add(s.name, b)
		if len(errs) > 0 {
			eb, err := plotter.NewYErrorBars(errs)
			if err != nil {
				return err
			}
			eb.Color = color.Black
			p.Add(eb)
		}
	}
	p.NominalX(groups...)
	// Room beside the outer bars, and above the highest for the legend.
	p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
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
// a bar per flavour (the world's default entry, its default pt_regs copy,
// global pages off), the standard deviation as error bars; nil if the
// run has none.
func nullPlot(r *Run, ms []Measurement, width int) (*Plot, error) {
	var modes, flavours []string
	cell := map[[2]string]Measurement{}
	entry, copyMethod := "", ""
	for _, m := range ms {
		if !benchOf(m, "null") || m.Width != width || m.Stamps || m.Global || m.Stats == nil {
			continue
		}
		if entry == "" {
			entry = m.Entry
		}
		if m.Entry != entry {
			continue
		}
		if m.Copy != "" {
			if copyMethod == "" {
				copyMethod = m.Copy
			}
			if m.Copy != copyMethod {
				continue
			}
		}
		if !slices.Contains(modes, m.Mode) {
			modes = append(modes, m.Mode)
		}
		if !slices.Contains(flavours, m.Flavour) {
			flavours = append(flavours, m.Flavour)
		}
		cell[[2]string{m.Mode, m.Flavour}] = m
	}
	if len(modes) == 0 {
		return nil, nil
	}
	var series []bars
	for _, f := range flavours {
		s := bars{name: f + " flavour"}
		for _, mode := range modes {
			m, ok := cell[[2]string{mode, f}]
			s.has = append(s.has, ok)
			if !ok {
				s.vals, s.err = append(s.vals, 0), append(s.err, 0)
				continue
			}
			// The standard deviation in ns: the same share of the mean.
			s.vals = append(s.vals, m.Ns)
			s.err = append(s.err, m.Ns*m.Stats.StddevPct/100)
		}
		series = append(series, s)
	}
	p := newPlot(r, fmt.Sprintf("%d-bit null system call (getppid, %s, global pages off):\nns per call by PTI mode and flavour; error bars: one standard deviation", width, entry),
		"PTI mode", "ns per call")
	if err := groupedBars(p, prefixed("PTI ", modes), series); err != nil {
		return nil, err
	}
	return &Plot{Name: fmt.Sprintf("null%d", width), Plot: p, Series: names(series)}, nil
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
	var modes []string
	var cols []col
	val := map[string]float64{}
	for _, rec := range r.Records {
		s, ok := rec.Record.(contract.Seed)
		if !ok || s.Bench != bench || s.RatioToOff == 0 {
			continue
		}
		c := col{s.Width, s.Flavour}
		if bench == "messaging" {
			c.name = s.Tasks
		}
		if !slices.Contains(modes, s.Mode) {
			modes = append(modes, s.Mode)
		}
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
		val[fmt.Sprint(c, s.Mode)] = s.RatioToOff
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
	title := "null system call, 32-bit PAE (SYSENTER) vs 64-bit (SYSCALL), global pages off:\nratio to the same width's PTI off"
	if bench == "messaging" {
		title = "sched-messaging, 32-bit PAE vs 64-bit: ratio to the same width's PTI off\n(" + reference.SeedMessaging() + ")"
	}
	p := newPlot(r, title, "PTI mode", "ratio to off")
	if err := groupedBars(p, prefixed("PTI ", modes), series); err != nil {
		return nil, err
	}
	return &Plot{Name: "seed-" + bench, Plot: p, Series: names(series)}, nil
}

// addLine adds series i of p: a line with points through xys, in the
// series' color and point shape, named in the legend.
func addLine(p *plot.Plot, i int, name string, xys plotter.XYs) error {
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
	pts.Shape = plotutil.Shape(i)
	p.Add(l, pts)
	p.Legend.Add(name, l, pts)
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
