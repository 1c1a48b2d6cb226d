package report

import (
	"bytes"
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
