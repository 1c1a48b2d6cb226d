package report

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchproc"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
)

// The runs with repeats that the benchfmt and compare tests read: the
// same plan (null, lseek, ping-pong; R = 10) under QEMU's default CPU and
// under -cpu Skylake-Client.
const (
	repeatsA = "testdata/qemu-repeats-a.log"
	repeatsB = "testdata/qemu-repeats-b.log"
)

// TestBenchfmt: -format benchfmt is read back by benchfmt.Reader as a
// result per undisturbed repeat, named by the figure's configuration,
// in the figure's units; grouped by benchproc and summarised by
// benchmath, each figure's centre is its record's median.
func TestBenchfmt(t *testing.T) {
	run := load1(t, repeatsA)
	out := render(t, "benchfmt", Build(run))
	r := benchfmt.NewReader(bytes.NewReader(out), repeatsA)
	var parser benchproc.ProjectionParser
	byName, err := parser.Parse(".fullname", nil)
	require.NoError(t, err)
	samples := map[string][]float64{}
	exact := false
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Fatalf("syntax error: %v", rec)
		case *benchfmt.UnitMetadata:
			exact = exact || rec.Unit == UnitInstr && rec.Key == "assume" && rec.Value == "exact"
		case *benchfmt.Result:
			assert.Equal(t, "qemu-tcg", rec.GetConfig("emulated"))
			assert.NotEmpty(t, rec.GetConfig("cpu"))
			v, ok := rec.Value(UnitTSC)
			require.True(t, ok, "%s", rec.Name)
			_, ok = rec.Value("sec/op")
			assert.True(t, ok, "ns where the TSC measures time")
			k := byName.Project(rec).Get(byName.Fields()[0])
			samples[k] = append(samples[k], v)
		}
	}
	require.NoError(t, r.Err())
	assert.True(t, exact, "instr/op declared exact")
	figs := 0
	for _, f := range run.Figures() {
		if f.Status != "measured" {
			continue
		}
		figs++
		xs := samples[benchName(f)]
		require.Len(t, xs, f.N, "%s: a line per repeat (none disturbed)", benchName(f))
		assert.Equal(t, f.Repeats, xs)
		s := benchmath.AssumeNothing.Summary(benchmath.NewSample(xs, &benchmath.DefaultThresholds), 0.95)
		assert.InDelta(t, f.Median, s.Center, 1e-6, "%s: benchmath's centre is the record's median", benchName(f))
	}
	assert.Equal(t, figs, len(samples))
	assert.Equal(t, 16, figs)
}

// TestBenchfmtDisturbedAndOld: a disturbed repeat is left out and counted
// on a "#" line; a log without repeats gives "#" lines only.
func TestBenchfmtDisturbedAndOld(t *testing.T) {
	rep := Report{Source: "x", Figures: []Figure{{
		Key: "bench=null width=64 mode=on", Subject: contract.Subject{Bench: "null"}, Status: "measured",
		Unit: "tsc_cycles", TSCHz: 1e9, Ops: 100, Repeats: []float64{10, 900, 11},
		Core: &contract.Core{DisturbedRepeats: []int{1}},
	}}}
	out := string(render(t, "benchfmt", rep))
	assert.Contains(t, out, "BenchmarkNull/width=64/mode=on 100 10 tsc-cycles/op 10 ns/op\n")
	assert.Contains(t, out, "BenchmarkNull/width=64/mode=on 100 11 tsc-cycles/op 11 ns/op\n")
	assert.NotContains(t, out, " 900 ")
	assert.Contains(t, out, "# BenchmarkNull/width=64/mode=on: 1 of 3 repeats disturbed by an SMI or an NMI, left out\n")

	old := string(render(t, "benchfmt", Build(load1(t, qemuLog))))
	assert.NotContains(t, old, "\nBenchmark", "no repeats, no results")
	assert.Contains(t, old, "# BenchmarkNull/width=64/mode=off/entry=syscall/flavour=minimal/global=off: no repeats in testdata/qemu.log")
}

// TestBenchstat: benchstat itself (go run golang.org/x/perf/cmd/benchstat,
// the version go.mod pins) reads two runs' benchfmt and compares them;
// ptilab compare gives every row the same centres (to benchstat's four
// digits), p-value and verdict (~ or the change).
func TestBenchstat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds benchstat")
	}
	dir := t.TempDir()
	var files []string
	for _, p := range []string{repeatsA, repeatsB} {
		f := filepath.Join(dir, filepath.Base(p)+".bench")
		require.NoError(t, os.WriteFile(f, render(t, "benchfmt", Build(load1(t, p))), 0o644))
		files = append(files, f)
	}
	cmd := exec.Command("go", append([]string{"run", "golang.org/x/perf/cmd/benchstat", "-ignore", "cpu,microcode,tsc-hz,ptilab"}, files...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	stat := benchstatRows(t, string(out), UnitTSC)
	require.Len(t, stat, 16, "%s", out)

	mine := rows(Compare(load1(t, repeatsA), load1(t, repeatsB), false))
	for _, f := range load1(t, repeatsA).Figures() {
		if f.Status != "measured" {
			continue
		}
		b, ok := stat[benchName(f)]
		require.True(t, ok, benchName(f))
		row := mine[f.Key]
		require.NotNil(t, row, f.Key)
		for i, c := range []string{row[2], row[3]} {
			v, err := strconv.ParseFloat(strings.Fields(c)[0], 64)
			require.NoError(t, err)
			assert.InEpsilon(t, b.centre[i], v, 0.0006, "%s: centre %d: ours %s, benchstat's %v", f.Key, i, c, b.centre[i])
		}
		assert.Equal(t, b.test, row[5], f.Key)
		assert.Equal(t, b.verdict, strings.Fields(row[6])[0], f.Key)
	}
}

// benchstatRow is a row of benchstat's table: the two centres, the test
// ("p=0.971 n=10") and the verdict ("~" or "+30.90%").
type benchstatRow struct {
	centre        [2]float64
	test, verdict string
}

// benchstatRows parses the rows of benchstat's table of unit in out.
func benchstatRows(t *testing.T, out, unit string) map[string]benchstatRow {
	rows := map[string]benchstatRow{}
	row := regexp.MustCompile(`^(\S+)\s+([0-9.]+[kMG]?) ± +\S+\s+([0-9.]+[kMG]?) ± +\S+\s+(~|[+-][0-9.]+%) \((p=[0-9.]+ n=\d+)\)$`)
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, "│") && strings.Contains(l, unit):
			in = true
		case strings.Contains(l, "│") && strings.Contains(l, "/op"):
			in = false
		case in:
			if m := row.FindStringSubmatch(l); m != nil {
				rows[m[1]] = benchstatRow{centre: [2]float64{siValue(t, m[2]), siValue(t, m[3])}, test: m[5], verdict: m[4]}
			}
		}
	}
	return rows
}

// siValue reads benchstat's number with an SI suffix ("22.59k").
func siValue(t *testing.T, s string) float64 {
	scale := map[byte]float64{'k': 1e3, 'M': 1e6, 'G': 1e9}[s[len(s)-1]]
	if scale != 0 {
		s = s[:len(s)-1]
	} else {
		scale = 1
	}
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v * scale
}
