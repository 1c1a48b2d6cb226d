package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	diskfs "github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/disk"
	"github.com/diskfs/go-diskfs/filesystem"
	"github.com/diskfs/go-diskfs/partition/gpt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/reference"
)

// -update rewrites the golden files under testdata/golden and the
// synthetic fixture from the code.
var update = flag.Bool("update", false, "rewrite the golden files and the synthetic fixture")

// The sample logs: a real QEMU run of the default plan (make qemu's
// build/serial.log), a second one with -cpu Skylake-Client, and the
// synthetic hardware-shaped fixture (fixture_test.go).
const (
	qemuLog    = "testdata/qemu.log"
	skylakeLog = "testdata/qemu-skylake.log"
	// tlbLog is a QEMU TCG run of the README's plan of the TLB
	// benchmarks: retention, flushcost, tlbsweep.
	tlbLog = "testdata/qemu-tlb.log"
	// bochsTLBLog is the same plan under Bochs (PCID, INVPCID; the TSC
	// counts instructions).
	bochsTLBLog   = "testdata/bochs-tlb.log"
	syntheticPath = "testdata/synthetic-hardware.log"
	// isolationLog is a QEMU TCG run (-cpu Skylake-Client) of the probe
	// and the leak oracle under off, on, on+pcid and the deferred modes.
	isolationLog = "testdata/qemu-isolation.log"
)

// golden compares got with testdata/golden/name, or rewrites it with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
		return
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test -update to create it")
	assert.Equal(t, string(want), string(got), "%s differs (go test -update rewrites it)", p)
}

// sameFixture holds the fixture at path equal to got, the output of the
// function that makes it (-update rewrites the fixture), and returns it.
func sameFixture(t *testing.T, path string, got []byte) []byte {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "%s is its function's output (go test -update)", path)
	return want
}

func TestSyntheticFixture(t *testing.T) {
	want := sameFixture(t, syntheticPath, syntheticLog())
	run, err := Parse(syntheticPath, want)
	require.NoError(t, err)
	require.NotNil(t, run.Machine)
	assert.Contains(t, run.Machine.Brand, "SYNTHETIC")
	assert.Empty(t, run.Machine.Emulator)
	assert.False(t, run.Emulated())
	for _, m := range run.Measurements() {
		assert.False(t, m.Emulated, m.Bench)
		if m.Stats != nil {
			assert.Equal(t, "tsc_cycles", m.Stats.Unit)
		}
	}
}

func load1(t *testing.T, p string) *Run {
	t.Helper()
	runs, warnings, err := Load(p)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	require.Len(t, runs, 1)
	return runs[0]
}

func render(t *testing.T, format string, reps ...Report) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteReports(&b, format, DefaultWidth, reps))
	return b.Bytes()
}

// TestReportGolden: the report of each sample log in each format.
func TestReportGolden(t *testing.T) {
	for _, s := range []struct{ name, path string }{{"qemu", qemuLog}, {"synthetic", syntheticPath}, {"qemu-tlb", tlbLog}, {"bochs-tlb", bochsTLBLog}, {"qemu-isolation", isolationLog}, {"synthetic-asi", asiPath}} {
		rep := Build(load1(t, s.path))
		for _, f := range []struct{ format, ext string }{{"text", "txt"}, {"markdown", "md"}, {"csv", "csv"}, {"json", "json"}} {
			golden(t, "report-"+s.name+"."+f.ext, render(t, f.format, rep))
		}
	}
}

// TestReportTLBTables: a run of the TLB benchmarks gets a table per
// sweep kind, the flush costs and the retention answers, and the machine
// line says the answers; every measured sweep row's extra and ratio are
// its record's, and the records add up: extra = mode's mean - off's.
func TestReportTLBTables(t *testing.T) {
	run := load1(t, tlbLog)
	rep := Build(run)
	byName := map[string]Table{}
	for _, tb := range rep.Tables {
		byName[tb.Name] = tb
		assert.NotEmpty(t, tb.Reference, tb.Name)
	}
	assert.Contains(t, rep.Machine, "; TLB retention: pcid-noflush unsupported, global walked again")
	ret := byName["retention"]
	require.Len(t, ret.Rows, 2)
	assert.Equal(t, []string{"pcid-noflush", "on+pcid/nonglobal", "0x7f8000010000", "unsupported: PCID: not supported by this CPU"}, ret.Rows[0])
	assert.Equal(t, "global", ret.Rows[1][0])
	assert.Equal(t, "walked again (frame B)", ret.Rows[1][6])
	fc := byName["flushcost"]
	require.Len(t, fc.Rows, 9, "every operation, measured or not")
	measured := 0
	for _, row := range fc.Rows {
		if !strings.HasPrefix(row[1], "unsupported: ") {
			measured++
		}
	}
	assert.Equal(t, 3, measured, "MOV to CR3 without PCID, INVLPG, the CR4.PGE toggle under TCG")
	sweeps := map[string]contract.TLBSweep{}
	for _, rec := range run.Records {
		if sw, ok := rec.Record.(contract.TLBSweep); ok {
			sweeps[fmt.Sprintf("%s %v %d %s", sw.Target, sw.Global, *sw.SweepPages, sw.Mode)] = sw
		}
	}
	for kind, rows := range map[string]int{"user-4k": 5 * 2 * 3, "user-2m": 5 * 2 * 3, "kernel-4k": 3 * 2 * 3} {
		tb, ok := byName["tlbsweep-"+kind]
		require.True(t, ok, kind)
		require.Len(t, tb.Rows, rows, "%s: points x global settings x modes", kind)
		assert.Contains(t, tb.Heading[0], "all mapped onto 1 frame of ")
		for _, row := range tb.Rows {
			k := fmt.Sprintf("%s %v %s %s", strings.ReplaceAll(kind, "-", " "), row[0] == "yes", row[1], row[2])
			if row[2] == "on+pcid" {
				assert.Equal(t, "unsupported: PCID: not supported by this CPU", row[3], k)
				continue
			}
			sw, ok := sweeps[k]
			require.True(t, ok, k)
			assert.Equal(t, fmt.Sprintf("%.1f", sw.Mean), row[3], k)
			if row[2] == "off" {
				assert.Equal(t, "-", row[8], k)
				assert.Equal(t, "1.00", row[9], k)
				continue
			}
			off := sweeps[strings.TrimSuffix(k, " "+row[2])+" off"]
			require.NotNil(t, sw.ExtraVsOff, k)
			assert.InDelta(t, sw.Mean-off.Mean, *sw.ExtraVsOff, 0.002, k)
			assert.Equal(t, fmt.Sprintf("%+.1f", *sw.ExtraVsOff), row[8], k)
			assert.Equal(t, fmt.Sprintf("%.2f", sw.RatioToOff), row[9], k)
		}
	}
}

// TestReportBochsTLB: under Bochs every sweep row is measured, on+pcid
// included, in instructions; every flush operation too; the retention
// answers are Bochs's (its TLB ignores NOFLUSH, keeps global entries).
func TestReportBochsTLB(t *testing.T) {
	rep := Build(load1(t, bochsTLBLog))
	assert.Contains(t, rep.Machine, "EMULATED (bochs)")
	assert.Contains(t, rep.Machine, "; TLB retention: pcid-noflush walked again, global kept")
	n := 0
	for _, tb := range rep.Tables {
		if !strings.HasPrefix(tb.Name, "tlbsweep-") && tb.Name != "flushcost" {
			continue
		}
		assert.Contains(t, tb.Heads(), map[string]string{"flushcost": "insns/op"}[tb.Name]+map[bool]string{true: "insns/call"}[tb.Name != "flushcost"], tb.Name)
		for _, row := range tb.Rows {
			n++
			assert.NotContains(t, strings.Join(row, " "), "unsupported", tb.Name)
		}
	}
	assert.Equal(t, (5+5+3)*2*3+9, n, "the sweep's points x global settings x modes, and the 9 flush operations")
}

// TestReportTables: the report holds the tables the issue asks for,
// with the reference figure under each, and says how the run ended.
func TestReportTables(t *testing.T) {
	for _, p := range []string{qemuLog, syntheticPath} {
		rep := Build(load1(t, p))
		byName := map[string]Table{}
		for _, tb := range rep.Tables {
			byName[tb.Name] = tb
		}
		for _, name := range []string{"null64", "null32", "seed-null", "seed-messaging", "lseek64", "lseek32", "work64", "work32", "pingpong64", "pingpong32", "messaging64", "messaging32"} {
			assert.Contains(t, byName, name, p)
		}
		for _, name := range []string{"null64", "lseek64", "work64", "messaging64", "messaging32"} {
			assert.NotEmpty(t, byName[name].Reference, "%s: %s has a reference line", p, name)
		}
		assert.Equal(t, reference.Null(), byName["null64"].Reference[:len(reference.Null())])
		assert.Equal(t, reference.Lseek(), byName["lseek64"].Reference)
		assert.Equal(t, reference.Work(), byName["work64"].Reference)
		assert.False(t, rep.CutShort)
		assert.Contains(t, rep.Status, `PTILAB-END status "ok"`)
		assert.True(t, strings.HasPrefix(rep.Machine, "machine: "))
	}
	assert.Contains(t, Build(load1(t, qemuLog)).Machine, "EMULATED (qemu-tcg)")
	synth := Build(load1(t, syntheticPath))
	assert.Contains(t, synth.Machine, "SYNTHETIC TEST FIXTURE")
	assert.Contains(t, synth.Machine, "; hardware")
	// The synthetic lseek row with global pages under PTI gains the
	// reference's +1.72%: (1/0.983 - 1).
	var gains []string
	for _, tb := range synth.Tables {
		if tb.Name == "lseek64" {
			g := slices.Index(tb.Heads(), "global gain")
			for _, row := range tb.Rows {
				if g < len(row) {
					gains = append(gains, row[g])
				}
			}
		}
	}
	assert.Contains(t, gains, "+1.73%")
}

// TestReferenceLinesAsTheImagePrints: the reference lines under the
// report's tables are the lines the image printed in the QEMU sample log.
func TestReferenceLinesAsTheImagePrints(t *testing.T) {
	data, err := os.ReadFile(qemuLog)
	require.NoError(t, err)
	text := strings.ReplaceAll(string(data), "\r", "")
	lines := append(append(append(append(reference.Null(), reference.Work()...), reference.Lseek()...), reference.Messaging(64, "socket")...), reference.Messaging(32, "socket")...)
	lines = append(lines, reference.MessagingPhases)
	for _, l := range lines {
		assert.Contains(t, text, "\n"+l+"\n")
	}
	assert.Contains(t, text, "ratio to the same width's off; "+reference.SeedMessaging()+"\n")
}

// TestCutShort: a log cut in the middle of a record is reported as cut
// short, with what it holds.
func TestCutShort(t *testing.T) {
	data, err := os.ReadFile(qemuLog)
	require.NoError(t, err)
	cut := data[:bytes.Index(data, []byte(`"kind":"syscall","bench":"lseek"`))+20]
	p := filepath.Join(t.TempDir(), "cut.log")
	require.NoError(t, os.WriteFile(p, cut, 0o644))
	runs, warnings, err := Load(p)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	run := runs[0]
	assert.True(t, run.CutShort())
	assert.Equal(t, []string{fmt.Sprintf("%s: cut short: no PTILAB-END line after its %d lines (the tables hold what it printed)", p, run.Lines)}, warnings,
		"a cut-short run is partial input: the commands warn and exit 3")
	rep := Build(run)
	rep.Source = "testdata/qemu.log cut in the first lseek record"
	assert.True(t, rep.CutShort)
	assert.Regexp(t, `^CUT SHORT: no PTILAB-END line; the log holds \d+ lines, \d+ records`, rep.Status)
	golden(t, "report-cut.txt", render(t, "text", rep))
	names := map[string]bool{}
	for _, tb := range rep.Tables {
		names[tb.Name] = true
	}
	assert.True(t, names["null64"] && names["work64"], "what the cut log holds is reported")
	assert.False(t, names["lseek64"], "nothing after the cut")
	ps, err := Plots(run)
	require.NoError(t, err)
	require.NotEmpty(t, ps)
	for _, p := range ps {
		assert.Contains(t, p.Plot.Title.Text, "CUT SHORT run (no PTILAB-END)", p.Name)
	}
}

func TestCompareGolden(t *testing.T) {
	q, sky, synth := load1(t, qemuLog), load1(t, skylakeLog), load1(t, syntheticPath)
	for _, c := range []struct {
		name string
		a, b *Run
	}{{"qemu-skylake", q, sky}, {"qemu-synthetic", q, synth}, {"repeats", load1(t, repeatsA), load1(t, repeatsB)}} {
		var b bytes.Buffer
		require.NoError(t, Write(&b, "text", DefaultWidth, Compare(c.a, c.b, false)))
		golden(t, "compare-"+c.name+".txt", b.Bytes())
	}
}

// rows returns a comparison's rows by configuration.
func rows(d Document) map[string][]string {
	out := map[string][]string{}
	for _, r := range d.Tables[0].Rows {
		out[r[0]] = r
	}
	return out
}

// TestCompareRows: comparable rows carry B/A and a test; the others name
// their reason: emulated against hardware, units, core clocks, absent.
func TestCompareRows(t *testing.T) {
	q, sky, synth := load1(t, qemuLog), load1(t, skylakeLog), load1(t, syntheticPath)
	r := rows(Compare(q, sky, false))
	row := r["bench=null width=64 mode=on entry=syscall flavour=minimal global=off"]
	require.NotNil(t, row)
	assert.Regexp(t, `^t p=0\.\d{3} n=10$`, row[5], "logs without repeats: Welch's t-test on the summaries")
	assert.NotEqual(t, "-", row[4])

	d := Compare(q, synth, false)
	r = rows(d)
	assert.Equal(t, "not compared: A emulated (qemu-tcg), B hardware", r["bench=null width=64 mode=off entry=syscall flavour=minimal global=off"][6])
	assert.Equal(t, "not compared: unsupported in A, measured in B", r["bench=null width=64 mode=on+pcid entry=syscall flavour=minimal global=off"][6], "synthetic has on+pcid figures, QEMU none")
	probe := `bench=probe width=64 mode=on+pcid entry=syscall flavour=minimal global=off target="kernel text"`
	assert.NotContains(t, r, probe, "only in A: counted, not listed")
	assert.Regexp(t, `^\d+ configurations only in A, \d+ only in B \(not shown: -all lists them\)$`, d.Tables[0].Notes[1])
	r = rows(Compare(q, synth, true))
	assert.Equal(t, "only in A", r[probe][6])
	assert.Equal(t, "-", r[probe][1], "no figure, no unit")
	for k, row := range r {
		if row[2] != "absent" && !strings.HasPrefix(row[2], "unsupported") && !strings.HasPrefix(row[2], "FAILED") || row[3] != "absent" && !strings.HasPrefix(row[3], "unsupported") && !strings.HasPrefix(row[3], "FAILED") {
			assert.NotEqual(t, "-", row[1], "%s: a figure has its unit", k)
		}
		if strings.HasPrefix(k, "bench=messaging ") && row[1] != "-" {
			assert.Equal(t, "s", row[1], "%s: sched-messaging in seconds, as report", k)
		}
	}

	// The synthetic run against itself: identical figures, no difference,
	// and a note that says so.
	d = Compare(synth, synth, false)
	assert.Contains(t, d.Tables[0].Notes, "A and B hold the same figures, every one: a run compared with itself (p = 1 everywhere, nothing to find)")
	assert.NotContains(t, strings.Join(Compare(q, sky, false).Tables[0].Notes, "\n"), "the same figures")
	r = rows(d)
	assert.Equal(t, "~", r["bench=null width=64 mode=off entry=syscall flavour=minimal global=off"][6])
	assert.Equal(t, "1.000", r["bench=null width=64 mode=off entry=syscall flavour=minimal global=off"][4])

	// Instructions against TSC cycles.
	icount := withLines(t, syntheticPath, func(l string) string {
		return strings.ReplaceAll(l, `"unit":"tsc_cycles"`, `"unit":"instructions"`)
	})
	r = rows(Compare(synth, icount, false))
	assert.Equal(t, "not compared: different units (A tsc_cycles, B instructions)", r["bench=null width=64 mode=off entry=syscall flavour=minimal global=off"][6])

	// Core clocks, as the figures' records carry them.
	clocked := func(mhz string) *Run {
		return withLines(t, syntheticPath, func(l string) string {
			return strings.ReplaceAll(l, `"`+CoreClockKey+`":3700,`, `"`+CoreClockKey+`":`+mhz+`,`)
		})
	}
	slow := Compare(clocked("3700"), clocked("1200"), false)
	r = rows(slow)
	assert.Equal(t, "not compared: core clocks differ (A 3.700 GHz, B 1.200 GHz)", r["bench=null width=64 mode=off entry=syscall flavour=minimal global=off"][6])
	assert.NotContains(t, strings.Join(slow.Tables[0].Notes, "\n"), "the same figures", "same figures, but at other clocks: not a run compared with itself")
	r = rows(Compare(clocked("3700"), clocked("3710"), false))
	assert.Equal(t, "~", r["bench=null width=64 mode=off entry=syscall flavour=minimal global=off"][6])
}

// TestSignificance: the t-test from summaries finds a clear difference
// and none between close figures; figures without spread compare exactly.
func TestSignificance(t *testing.T) {
	m := func(mean, sd float64, r int) *Measurement {
		return &Measurement{Stats: &contract.Stats{Mean: mean, Stddev: sd}, R: r}
	}
	c := significance(m(100, 1, 10), m(110, 1, 10))
	assert.Less(t, c.P, 0.001)
	assert.Equal(t, "+10.00%", c.FormatDelta(100, 110))
	c = significance(m(100, 5, 10), m(101, 5, 10))
	assert.Greater(t, c.P, 0.05)
	assert.Equal(t, "~", c.FormatDelta(100, 101))
	c = significance(m(100, 0, 10), m(101, 0, 10))
	assert.Less(t, c.P, 0.05, "10 exact repeats on each side, all apart")
	c = significance(m(100, 0, 10), m(100, 0, 10))
	assert.Equal(t, "~", c.FormatDelta(100, 100))
	c = significance(m(100, 1, 1), m(110, 1, 10))
	assert.Equal(t, "~", c.FormatDelta(100, 110))
	assert.NotEmpty(t, c.Warnings)
}

// withLines loads the log at p with each line changed by f.
func withLines(t *testing.T, p string, f func(string) string) *Run {
	t.Helper()
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	for i := range lines {
		lines[i] = f(lines[i])
	}
	run, err := Parse(p+" (changed)", []byte(strings.Join(lines, "\n")))
	require.NoError(t, err)
	return run
}

// svgTexts parses an SVG file with encoding/xml and returns its root
// element's name and the text of its <text> elements.
func svgTexts(t *testing.T, p string) (root string, texts []string, paths int) {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	dec := xml.NewDecoder(f)
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, p)
		switch e := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = e.Name.Local
			}
			inText = e.Name.Local == "text"
			if e.Name.Local == "path" {
				paths++
			}
		case xml.CharData:
			if inText {
				texts = append(texts, string(e))
			}
		case xml.EndElement:
			inText = false
		}
	}
	return root, texts, paths
}

// TestSweepPlots: a run of the TLB sweep gets a plot per kind, a line per
// isolated mode and global setting that measured (QEMU: on only; Bochs:
// on and on+pcid), labelled emulated.
func TestSweepPlots(t *testing.T) {
	for _, c := range []struct {
		path, emulator string
		modes          []string
	}{{tlbLog, "qemu-tcg", []string{"on"}}, {bochsTLBLog, "bochs", []string{"on", "on+pcid"}}} {
		run := load1(t, c.path)
		files, err := WritePlots(t.TempDir(), []*Run{run})
		require.NoError(t, err)
		ps, err := Plots(run)
		require.NoError(t, err)
		require.Len(t, files, 4, c.path)
		assert.Equal(t, "flushcost", ps[3].Name, "the flush costs' plot after the sweeps'")
		ps, files = ps[:3], files[:3]
		var want []string
		for _, g := range []string{"off", "on"} {
			for _, m := range c.modes {
				want = append(want, "PTI "+m+", global pages "+g)
			}
		}
		for i, p := range ps {
			assert.Equal(t, []string{"tlbsweep-user-4k", "tlbsweep-user-2m", "tlbsweep-kernel-4k"}[i], p.Name)
			assert.ElementsMatch(t, want, p.Series, p.Name)
			_, texts, _ := svgTexts(t, files[i])
			all := strings.Join(texts, "\n")
			assert.Contains(t, all, "EMULATED figures ("+c.emulator+"), not hardware", files[i])
			for _, s := range p.Series {
				assert.Contains(t, texts, s, files[i])
			}
		}
	}
}

// TestPlots: each plot's SVG parses, holds its series in the legend and
// says on its face whether the figures are emulated.
func TestPlots(t *testing.T) {
	for _, c := range []struct {
		path     string
		emulated bool
	}{{qemuLog, true}, {syntheticPath, false}} {
		run := load1(t, c.path)
		dir := t.TempDir()
		files, err := WritePlots(dir, []*Run{run})
		require.NoError(t, err)
		ps, err := Plots(run)
		require.NoError(t, err)
		require.Len(t, files, len(ps))
		var names []string
		for i, p := range ps {
			names = append(names, p.Name)
			root, texts, paths := svgTexts(t, files[i])
			assert.Equal(t, "svg", root)
			all := strings.Join(texts, "\n")
			for _, s := range p.Series {
				assert.Contains(t, texts, s, "%s: series %q in the legend", files[i], s)
			}
			assert.GreaterOrEqual(t, paths, len(p.Series), files[i])
			if c.emulated {
				assert.Contains(t, all, "EMULATED figures (qemu-tcg), not hardware", files[i])
			} else {
				assert.NotContains(t, all, "EMULATED", files[i])
				assert.Contains(t, all, "hardware: SYNTHETIC TEST FIXTURE", files[i])
			}
		}
		assert.Equal(t, []string{"work64", "work32", "overhead64", "overhead32", "null64", "null32", "seed-null", "seed-messaging"}, names, c.path)
		series, miss := map[string][]string{}, map[string][]string{}
		for _, p := range ps {
			series[p.Name], miss[p.Name] = p.Series, p.Missing
		}
		if c.emulated {
			assert.Equal(t, []string{"minimal flavour, global pages off", "minimal flavour, global pages on", "linux flavour, global pages off", "linux flavour, global pages on"}, series["null64"])
			assert.Equal(t, []string{"on+pcid: unsupported (PCID: not supported by this CPU)"}, miss["null64"], "a mode of the data that did not run is named")
			assert.Equal(t, []string{"PTI on vs off", "Linux, a 2 µs call under PTI (docs/references.md)"}, series["overhead64"])
			_, texts, _ := svgTexts(t, files[slices.Index(names, "null64")])
			assert.Contains(t, texts, "not plotted: on+pcid: unsupported (PCID: not supported by this CPU)")
		} else {
			assert.Equal(t, []string{"minimal flavour, global pages off", "linux flavour, global pages off"}, series["null64"])
			assert.Empty(t, miss["null64"])
			assert.Equal(t, []string{"PTI on vs off", "PTI on+pcid vs off", "Linux, a 2 µs call under PTI (docs/references.md)"}, series["overhead64"])
		}
		assert.Equal(t, []string{"32-bit processes", "32-bit threads", "64-bit processes", "64-bit threads"}, series["seed-messaging"])
		if c.emulated {
			assert.Equal(t, []string{"PTI off", "PTI on"}, series["work64"], "QEMU has no PCID")
		} else {
			assert.Equal(t, []string{"PTI off", "PTI on", "PTI on+pcid"}, series["work64"])
		}
	}
}

// TestJSONReport: the json format decodes, with the records it names.
func TestJSONReport(t *testing.T) {
	var reps []Report
	require.NoError(t, json.Unmarshal(render(t, "json", Build(load1(t, qemuLog))), &reps))
	require.Len(t, reps, 1)
	assert.Equal(t, "qemu-tcg", reps[0].Records.Machine.Emulator)
	assert.Equal(t, "ok", reps[0].Records.End.Status)
	assert.NotEmpty(t, reps[0].Tables)
}

// writeImage writes a GPT disk image to p with one partition of type
// typ, formatted as fsType, holding files (path -> content).
func writeImage(t *testing.T, p string, typ gpt.Type, fsType filesystem.Type, files map[string][]byte) {
	t.Helper()
	const size = 80 << 20
	d, err := diskfs.Create(p, size, diskfs.SectorSize512)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Partition(&gpt.Table{Partitions: []*gpt.Partition{
		{Index: 1, Start: 2048, End: size/512 - 2048, Type: typ, Name: "ESP"},
	}}))
	fs, err := d.CreateFilesystem(disk.FilesystemSpec{Partition: 1, FSType: fsType, VolumeLabel: "PTILAB"})
	require.NoError(t, err)
	for name, data := range files {
		if dir := filepath.Dir(name); dir != "/" {
			require.NoError(t, fs.Mkdir(dir))
		}
		f, err := fs.OpenFile(name, os.O_CREATE|os.O_RDWR)
		require.NoError(t, err)
		_, err = f.Write(data)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
}

// TestLoadDevice: a file that is neither a regular file nor a disk
// image (a character device here; a stick's block device is told by its
// first sectors, never read whole) is refused, not read to its end.
func TestLoadDevice(t *testing.T) {
	_, _, err := Load("/dev/zero")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/dev/zero: not a serial log or results file, and no disk image")
}

// TestLoadImage: the results files in a GPT image's ESP (FAT32 and
// FAT16) are read as the same runs as the files themselves.
func TestLoadImage(t *testing.T) {
	q, err := os.ReadFile(qemuLog)
	require.NoError(t, err)
	s, err := os.ReadFile(syntheticPath)
	require.NoError(t, err)
	for _, fsType := range []filesystem.Type{filesystem.TypeFat32, filesystem.TypeFat16} {
		img := filepath.Join(t.TempDir(), "ptilab.img")
		writeImage(t, img, gpt.EFISystemPartition, fsType, map[string][]byte{
			"/ptilab-results/20261201-120000-qemu.log":  q,
			"/ptilab-results/20261201-130000-synth.log": s,
			"/EFI/BOOT/BOOTX64.EFI":                     []byte("not an image"),
		})
		runs, warnings, err := Load(img)
		require.NoError(t, err)
		assert.Empty(t, warnings)
		require.Len(t, runs, 2)
		assert.Equal(t, img+":/ptilab-results/20261201-120000-qemu.log", runs[0].Source)
		want := Build(load1(t, qemuLog))
		got := Build(runs[0])
		assert.Equal(t, want.Tables, got.Tables)
		assert.Equal(t, want.Machine, got.Machine)
		assert.Contains(t, runs[1].Machine.Brand, "SYNTHETIC")
	}
}

// TestLoadDir: a stick's root or its ptilab-results directory.
func TestLoadDir(t *testing.T) {
	root := t.TempDir()
	res := filepath.Join(root, ResultsDir)
	require.NoError(t, os.Mkdir(res, 0o755))
	for _, f := range []string{qemuLog, syntheticPath} {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(res, filepath.Base(f)), data, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "ptilab.plan"), []byte("modes = off\n"), 0o644))
	for _, p := range []string{root, res} {
		runs, warnings, err := Load(p)
		require.NoError(t, err, p)
		assert.Empty(t, warnings)
		require.Len(t, runs, 2)
		assert.Equal(t, filepath.Join(res, "qemu.log"), runs[0].Source)
		assert.Equal(t, filepath.Join(res, "synthetic-hardware.log"), runs[1].Source)
	}
}

// TestBadInput: each bad input is one line naming the path.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	noESP := filepath.Join(dir, "noesp.img")
	writeImage(t, noESP, gpt.LinuxFilesystem, filesystem.TypeFat32, nil)
	noResults := filepath.Join(dir, "noresults.img")
	writeImage(t, noResults, gpt.EFISystemPartition, filesystem.TypeFat32, map[string][]byte{"/EFI/BOOT/BOOTX64.EFI": []byte("x")})
	empty := filepath.Join(dir, "emptydir")
	require.NoError(t, os.Mkdir(empty, 0o755))
	for _, c := range []struct{ path, want string }{
		{write("empty.log", nil), "empty.log: empty file"},
		{write("blank.log", []byte("\n\n  \n")), "blank.log: empty file"},
		{write("notalog.txt", []byte("hello\nworld\n")), "notalog.txt: not a ptilab log (no PTILAB record lines)"},
		{write("bad.log", []byte("PTILAB {\"kind\":\"syscall\",\"N\":\"many\"}\nPTILAB-END {\"status\":\"ok\"}\n")), "bad.log: no record could be read: serial line 1: contract: a syscall record"},
		{write("garbled.log", []byte("PTILAB {not json\nmore\nPTILAB {\"kind\nPTILAB {\n")), "garbled.log: no record could be read: serial line 1: malformed record: invalid character 'n' looking for beginning of object key string (and 2 more damaged lines)"},
		{empty, "emptydir: no results files (ptilab-results/*.log) in it"},
		{noESP, "noesp.img: disk image without an EFI System Partition"},
		{noResults, "noresults.img: no results: the EFI System Partition has no /ptilab-results directory"},
		{filepath.Join(dir, "missing.log"), "missing.log: no such file or directory"},
	} {
		_, _, err := Load(c.path)
		require.Error(t, err, c.path)
		assert.Contains(t, err.Error(), c.want)
		assert.NotContains(t, err.Error(), "\n")
	}
}

// TestLoadSkipsDamage: a results folder with an empty file (a run that
// hung before its first flush) and a log with a damaged record in the
// middle (a USB-serial overrun) gives every run that can be read, the
// damaged one less its bad line, and a warning naming each file and line.
func TestLoadSkipsDamage(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(qemuLog)
	require.NoError(t, err)
	lines := strings.Split(string(good), "\n")
	damagedAt := -1
	for i, l := range lines {
		if strings.HasPrefix(l, `PTILAB {"kind":"syscall"`) {
			lines[i] = l[:len(l)/2] // cut in the middle: no closing brace
			damagedAt = i + 1
			break
		}
	}
	require.Positive(t, damagedAt)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a-empty.log"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b-damaged.log"), []byte(strings.Join(lines, "\n")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c-good.log"), good, 0o644))

	runs, warnings, err := Load(dir, filepath.Join(dir, "missing.log"))
	require.NoError(t, err)
	require.Len(t, runs, 2)
	assert.Equal(t, filepath.Join(dir, "b-damaged.log"), runs[0].Source)
	assert.Equal(t, filepath.Join(dir, "c-good.log"), runs[1].Source)
	assert.Len(t, runs[0].Records, len(load1(t, qemuLog).Records)-1, "the damaged record alone is lost")
	assert.NotNil(t, runs[0].End)
	assert.Equal(t, []string{
		filepath.Join(dir, "a-empty.log") + ": empty file (skipped)",
		"stat " + filepath.Join(dir, "missing.log") + ": no such file or directory (skipped)",
		fmt.Sprintf("%s: serial line %d: malformed record: unexpected EOF (record skipped)", filepath.Join(dir, "b-damaged.log"), damagedAt),
	}, warnings)
}

// TestReportIsolationTables: a run of the probe and the oracle gets the
// probe's table (a column per mode, the deferred area P=1 only under the
// deferred modes), the exposure lists (pages per mode beyond on's) and
// the oracle's rows (each mode's fault, nothing tried where the
// calibration saw no cache timing), the calibration and the CPU's
// meltdown line in its heading.
func TestReportIsolationTables(t *testing.T) {
	rep := Build(load1(t, isolationLog))
	byName := map[string]Table{}
	for _, tb := range rep.Tables {
		byName[tb.Name] = tb
	}
	probe := byName["probe64"]
	assert.Equal(t, []string{"target", "address", "off", "on", "on+pcid", "on-defer", "on-noswitch"}, probe.Heads())
	require.Len(t, probe.Rows, 4)
	assert.Equal(t, []string{"defer area", "0xffffffffffe0b000", "#PF P=0 (error 0x4)", "#PF P=0 (error 0x4)", "unsupported", "#PF P=1 (error 0x5)", "#PF P=1 (error 0x5)"}, probe.Rows[3])
	pages := map[string]int{}
	mode := ""
	for _, row := range byName["exposure64"].Rows {
		if row[0] != "" {
			mode = row[0]
			pages[mode] += 0
		}
		if m := regexp.MustCompile(`\) (\d+) page\(s\)`).FindStringSubmatch(row[1]); m != nil {
			n, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			pages[mode] += n
		}
	}
	assert.Equal(t, map[string]int{"off": 0, "on": 0, "on+pcid": 0, "on-defer": 2, "on-noswitch": 3}, pages)
	oracle := byName["oracle"]
	require.Len(t, oracle.Rows, 5)
	assert.Equal(t, []string{"off", "#PF P=1 (error 0x5)", "16", "1", "not tried: oracle unavailable: cache timing not observable"}, oracle.Rows[0])
	assert.Equal(t, "#PF P=0 (error 0x4)", oracle.Rows[1][1])
	assert.Equal(t, []string{"on+pcid", "unsupported: PCID: not supported by this CPU"}, oracle.Rows[2])
	assert.Contains(t, oracle.Heading[1], "misses 21/21/42 (1-23499)")
	assert.Contains(t, oracle.Heading[2], "calibration: oracle unavailable: cache timing not observable")
	assert.Equal(t, "each read a page fault the kernel recovers; vulnerability table, meltdown: Mitigation: PTI", oracle.Heading[0])
}

// ladderTables are the tables of a ladder log by name.
func ladderTables(t *testing.T, p string) map[string]Table {
	t.Helper()
	out := map[string]Table{}
	for _, tb := range Build(load1(t, p)).Tables {
		out[tb.Name] = tb
	}
	return out
}

// notRunCells are the last cells of the rows that did not run.
func notRunCells(tb Table) []string {
	var out []string
	for _, row := range tb.Rows {
		if c := row[len(row)-1]; strings.HasPrefix(c, "unsupported: ") && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// TestLadderTable: the mitigation ladder's tables, from a real QEMU
// -icount run of `benchmarks = ladder` under off and on: a row per rung
// as the image measured it, with its increment and what it is over; ibrs
// and ibpb unsupported (TCG has neither MSR), with their reasons in their
// rows (the part and what it is over are "-": the log was written before
// unsupported records carried them); the reference line as the image
// printed it.
func TestLadderTable(t *testing.T) {
	const ladderLog = "testdata/qemu-ladder.log"
	ts := ladderTables(t, ladderLog)
	null, pp := ts["ladder64"], ts["ladder-pingpong64"]
	assert.Equal(t, reference.Ladder(), null.Reference)
	// Per mode: the null call's 11 rungs (ibpb and rsb act only in the
	// ping-pong), the ping-pong's 14.
	assert.Len(t, null.Rows, 2*11)
	assert.Len(t, pp.Rows, 2*14)
	assert.Equal(t, []string{"off", "none", "none", "+12.0", "linux flavour", "98.0"}, null.Rows[1][:6])
	assert.Equal(t, []string{"off", "-", "ibrs", "-", "-", "unsupported: ibrs: no IA32_SPEC_CTRL (CPUID.(EAX=07H,ECX=0):EDX[26]): not supported by this CPU"}, null.Rows[3])
	assert.Equal(t, []string{"on", "alone", "rsb", "+220.0", "none", "2354.4"}, pp.Rows[14+5][:6])
	assert.Equal(t, []string{
		"unsupported: ibrs: no IA32_SPEC_CTRL (CPUID.(EAX=07H,ECX=0):EDX[26]): not supported by this CPU",
		"unsupported: ibpb: no IA32_PRED_CMD (CPUID.(EAX=07H,ECX=0):EDX[26]): not supported by this CPU",
	}, notRunCells(pp))
	data, err := os.ReadFile(ladderLog)
	require.NoError(t, err)
	for _, l := range reference.Ladder() {
		assert.Contains(t, strings.ReplaceAll(string(data), "\r", ""), "\n"+l+"\n")
	}
}

// TestLadder32Table: the 32-bit ladder's tables, from a real QEMU -icount
// run of `benchmarks = ladder32` under off and on, apart from the 64-bit
// ones: ibrs, bhb and lfence unsupported as not in 32-bit Linux's entry,
// ibpb as TCG's; no reference line (the reference figures are 64-bit).
func TestLadder32Table(t *testing.T) {
	ts := ladderTables(t, "testdata/qemu-ladder32.log")
	assert.NotContains(t, ts, "ladder64", "no 64-bit ladder ran")
	null, pp := ts["ladder32"], ts["ladder-pingpong32"]
	assert.Empty(t, null.Reference)
	assert.True(t, strings.HasPrefix(null.Title, "32-bit PAE kernel: "), null.Title)
	// Per mode: the null call's 9 rungs, the ping-pong's 12.
	assert.Len(t, null.Rows, 2*9)
	assert.Len(t, pp.Rows, 2*12)
	assert.Equal(t, []string{"off", "none", "none", "+8.0", "linux flavour", "77.0"}, null.Rows[1][:6])
	assert.Equal(t, []string{"off", "-", "ibrs", "-", "-", "unsupported: ibrs: not in 32-bit Linux's entry"}, null.Rows[3])
	assert.Equal(t, []string{
		"unsupported: ibrs: not in 32-bit Linux's entry",
		"unsupported: ibpb: no IA32_PRED_CMD (CPUID.(EAX=07H,ECX=0):EDX[26]): not supported by this CPU",
		"unsupported: bhb: not in 32-bit Linux's entry",
		"unsupported: lfence: not in 32-bit Linux's entry",
	}, notRunCells(pp))
}

// TestConsoleAndReportTablesAgree: the image's console (bench's Reporter,
// fed a log's records as the image emits them) and `ptilab report` of the
// same records print the same table text, line for line.
func TestConsoleAndReportTablesAgree(t *testing.T) {
	for _, p := range []string{qemuLog, syntheticPath, isolationLog, "testdata/qemu-skylake.log", tlbLog, bochsTLBLog,
		"testdata/qemu-ladder.log", "testdata/qemu-ladder32.log", asiPath} {
		run := load1(t, p)
		var console bytes.Buffer
		rep := bench.NewReporter(&console)
		for _, rec := range run.Records {
			rep.Record(rec.Record)
		}
		rep.End(contract.End{})
		var shown []string
		for _, l := range strings.Split(console.String(), "\n") {
			if !strings.HasPrefix(l, contract.RecordTag+" ") && !strings.HasPrefix(l, contract.EndTag+" ") {
				shown = append(shown, l)
			}
		}
		var report []string
		for _, tb := range Build(run).Tables {
			if len(tb.Text) > 0 {
				report = append(append(report, ""), tb.Text...)
			}
		}
		require.NotEmpty(t, report, p)
		assert.Equal(t, strings.Join(report, "\n")+"\n", strings.Join(shown, "\n"), p)
	}
}

// TestMachineLineCommit: the machine line ends with the ptilab commit the
// image recorded; a record without one (an older image) says nothing.
func TestMachineLineCommit(t *testing.T) {
	r := withLines(t, syntheticPath, func(l string) string {
		return strings.Replace(l, `{"kind":"machine",`, `{"kind":"machine","ptilab_commit":"0123456789ab+dirty",`, 1)
	})
	assert.True(t, strings.HasSuffix(MachineLine(r), "; ptilab 0123456789ab+dirty"), MachineLine(r))
	assert.NotContains(t, MachineLine(load1(t, syntheticPath)), "; ptilab ")
}

// TestLadderAndFlushPlots: a ladder run gets its world's ladder plot (a
// bar per rung and mode, the rungs that did not run named), a TLB run
// its flush costs (the operations the CPU lacks named).
func TestLadderAndFlushPlots(t *testing.T) {
	for _, c := range []struct {
		path, name string
		series     []string
		missing    string
	}{
		{"testdata/qemu-ladder.log", "ladder", []string{"PTI off", "PTI on"}, "off ibrs: unsupported (ibrs: no IA32_SPEC_CTRL"},
		{"testdata/qemu-ladder32.log", "ladder32", []string{"PTI off", "PTI on"}, "off ibrs: unsupported (ibrs: not in 32-bit Linux's entry)"},
		{tlbLog, "flushcost", []string{"TSC cycles per operation"}, "invpcid 0: unsupported (no INVPCID"},
	} {
		ps, err := Plots(load1(t, c.path))
		require.NoError(t, err)
		i := slices.IndexFunc(ps, func(p Plot) bool { return p.Name == c.name })
		require.GreaterOrEqual(t, i, 0, c.path)
		assert.Equal(t, c.series, ps[i].Series, c.path)
		assert.Contains(t, strings.Join(ps[i].Missing, "; "), c.missing, c.path)
		assert.Contains(t, ps[i].Plot.Title.Text, "not plotted: ")
	}
}
