package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"unicode"

	"golang.org/x/perf/benchfmt"
)

// Benchmark units of the benchfmt output (golang.org/x/perf/benchfmt; a
// unit ending in "/op" is per operation): the TSC's ticks, the
// instructions an emulator's TSC counts (declared exact: the repeats of
// such a figure are equal, benchstat then needs no spread), core cycles
// (the TSC's ticks times the repeat's APERF/MPERF) and nanoseconds (from
// the TSC's frequency; only where the TSC measures time).
const (
	UnitTSC   = "tsc-cycles/op"
	UnitInstr = "instr/op"
	UnitCore  = "core-cycles/op"
	UnitNs    = "ns/op"
)

// writeBenchfmt writes the reports' figures in the Go benchmark format,
// for benchstat: per run, its file configuration (cpu, microcode,
// emulated, ptilab, tsc-hz: benchstat tables runs whose configuration
// differs apart, -ignore cpu,... sets them side by side), then one line
// per undisturbed
// repeat of each figure, named Benchmark<Bench> and the figure's
// configuration as name keys (/width=64/mode=on+pcid/flavour=linux/...,
// the model's canonical key: contract.Subject.Key), iterations the
// operations per repeat, and its values in UnitTSC or UnitInstr,
// UnitCore where the core clock is known, UnitNs where the TSC measures
// time. Disturbed repeats are left out and counted in a "#" line after
// the figure's, which benchfmt readers skip; so is a figure whose log
// holds no repeats (written before ptilab recorded them).
func writeBenchfmt(w io.Writer, reps []Report) error {
	bw := benchfmt.NewWriter(w)
	if err := bw.Write(&benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: UnitInstr, Key: "assume"}, OrigUnit: UnitInstr, Value: "exact"}); err != nil {
		return err
	}
	for _, rep := range reps {
		cfg := runConfig(rep)
		for _, f := range rep.Figures {
			if f.Status != "measured" {
				continue
			}
			name := benchName(f)
			if len(f.Repeats) == 0 {
				fmt.Fprintf(w, "# Benchmark%s: no repeats in %s (a log written before ptilab recorded them)\n", name, rep.Source)
				continue
			}
			disturbed := map[int]bool{}
			if f.Core != nil {
				for _, i := range f.Core.DisturbedRepeats {
					disturbed[i] = true
				}
			}
			for i, v := range f.Repeats {
				if disturbed[i] {
					continue
				}
				res := &benchfmt.Result{Config: cfg, Name: benchfmt.Name(name), Iters: max(f.Ops, 1), Values: repeatValues(f, i, v)}
				if err := bw.Write(res); err != nil {
					return err
				}
			}
			if n := len(disturbed); n > 0 {
				fmt.Fprintf(w, "# Benchmark%s: %d of %d repeats disturbed by an SMI or an NMI, left out\n", name, n, len(f.Repeats))
			}
		}
	}
	return nil
}

// repeatValues are repeat i's values (v in f.Unit per operation): the
// TSC's or the emulator's count, core cycles where the repeat's (or the
// figure's) core clock is known, ns where the TSC measures time.
func repeatValues(f Figure, i int, v float64) []benchfmt.Value {
	if f.Unit == "instructions" {
		return []benchfmt.Value{{Value: v, Unit: UnitInstr}}
	}
	vals := []benchfmt.Value{{Value: v, Unit: UnitTSC}}
	if c := f.Core; c != nil && c.CoreMHz != 0 && f.TSCHz != 0 {
		mhz := c.CoreMHz
		if i < len(c.RepeatMHz) && c.RepeatMHz[i] != 0 {
			mhz = c.RepeatMHz[i]
		}
		vals = append(vals, benchfmt.Value{Value: round3(v * mhz * 1e6 / float64(f.TSCHz)), Unit: UnitCore})
	}
	if f.TSCHz != 0 {
		vals = append(vals, benchfmt.Value{Value: round3(v / float64(f.TSCHz) * 1e9), Unit: UnitNs})
	}
	return vals
}

// runConfig is a run's file configuration in benchfmt.
func runConfig(rep Report) []benchfmt.Config {
	var cfg []benchfmt.Config
	add := func(k, v string) {
		if v != "" {
			cfg = append(cfg, benchfmt.Config{Key: k, Value: []byte(v), File: true})
		}
	}
	emulated := "no"
	if m := rep.Records.Machine; m != nil {
		add("cpu", strings.TrimSpace(m.Brand))
		if m.Microcode != nil {
			add("microcode", fmt.Sprintf("%#x", *m.Microcode))
		}
		add("ptilab", m.PtilabCommit)
		if m.Emulator != "" {
			emulated = m.Emulator
		}
	}
	if t := rep.Records.Timing; t != nil {
		add("tsc-hz", fmt.Sprint(t.TSCHz))
		if t.Emulated && emulated == "no" {
			emulated = t.Emulator
		}
		if t.Icount {
			emulated += " (the TSC counts instructions)"
		}
	}
	add("emulated", emulated)
	return cfg
}

// benchName is f's benchmark name without benchfmt's "Benchmark": its
// bench capitalised, and the other pairs of its configuration's key as
// name keys (spaces in a value become hyphens, quotes go).
func benchName(f Figure) string {
	var b strings.Builder
	for i, field := range splitKey(f.Key) {
		k, v, _ := strings.Cut(field, "=")
		v = strings.ReplaceAll(strings.Trim(v, `"`), " ", "-")
		if i == 0 && k == "bench" {
			r := []rune(v)
			if len(r) > 0 {
				r[0] = unicode.ToUpper(r[0])
			}
			b.WriteString(string(r))
			continue
		}
		b.WriteString("/" + k + "=" + v)
	}
	return b.String()
}

// splitKey splits a configuration's key into its pairs: at spaces
// outside double quotes.
func splitKey(k string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range k {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// round3 rounds x to 3 decimals, as the records' figures are.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
