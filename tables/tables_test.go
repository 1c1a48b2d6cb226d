package tables

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/contract"
)

func stats(mean, ratio float64) contract.Stats {
	return contract.Stats{Unit: "tsc_cycles", Mean: mean, Median: mean, Min: mean - 1, PerfPct: 0.5, RatioToOff: ratio,
		Core: contract.Core{CoreClock: "unsupported", SMICount: "unsupported", Sampled: "repeat"}}
}

func pp(mode, tasks string, mean, ratio float64) contract.PingPong {
	return contract.PingPong{Subject: contract.Subject{Bench: "pingpong", Width: 64, Mode: mode, Entry: "syscall", Flavour: "linux", Tasks: tasks},
		N: 200, R: 10, Warmup: 2, Stats: stats(mean, ratio), NsPerRoundTrip: mean / 2, RoundTrips: 2400, CR3Loads: 4800}
}

func render(recs ...contract.Record) string {
	var b bytes.Buffer
	r := New(Text{W: &b})
	for _, rec := range recs {
		r.Add(rec)
	}
	r.Close()
	return b.String()
}

var timing = contract.Timing{TSCHz: 2e9, TSCSource: "test", Modes: []string{"off", "on", "on+pcid"}}

// TestNullTable: a null-call table from records: its heading once, a row
// per record, an unsupported one's reason across the figures, and the
// reference lines under it.
func TestNullTable(t *testing.T) {
	sub := func(mode string) contract.Subject {
		return contract.Subject{Bench: "null", Width: 64, Mode: mode, Entry: "syscall", Flavour: "minimal"}
	}
	out := render(timing,
		contract.Syscall{Subject: sub("off"), N: 1000, R: 10, Warmup: 2, Stats: stats(100, 1), NsPerCall: 50},
		contract.Syscall{Subject: sub("on"), N: 1000, R: 10, Warmup: 2, Stats: stats(250, 2.5), NsPerCall: 125},
		contract.Unsupported{Subject: sub("on+pcid"), N: 1000, R: 10, Warmup: 2, Reason: "on+pcid/minimal/nonglobal: PCID: not supported by this CPU"},
		contract.Check{Name: "after"})
	lines := strings.Split(out, "\n")
	assert.Equal(t, "null system call (getppid), per call: 10 repeats of 1000 calls after 2 warm-up repeats, empty-loop overhead subtracted;", lines[1])
	assert.Contains(t, out, "\nmode     flavour  global     tsc/call      ±%       median          min    ns/call  vs off core MHz    core/op dist rep\n")
	assert.Contains(t, out, "\noff      minimal  no            100.0    0.5%        100.0         99.0       50.0    1.00        -          -     0/10\n")
	assert.Contains(t, out, "\non       minimal  no            250.0    0.5%        250.0        249.0      125.0    2.50        -          -     0/10\n")
	assert.Contains(t, out, "\non+pcid  minimal  no     unsupported: PCID: not supported by this CPU\n")
	assert.Contains(t, out, "reference (docs/references.md: Linux 5.10 getppid loop")
	assert.Equal(t, 1, strings.Count(out, "\nmode "), "one heading")
}

// TestCutShort: a run cut short in the middle of a ping-pong row: the
// image's console has shown every complete row as its records came; the
// last row, half measured, is written by Close (the report of the log)
// with its missing half "not measured".
func TestCutShort(t *testing.T) {
	var b bytes.Buffer
	r := New(Text{W: &b})
	for _, rec := range []contract.Record{timing, pp("off", "processes", 1000, 1), pp("off", "threads", 500, 1), pp("on", "processes", 3000, 3)} {
		r.Add(rec)
	}
	console := b.String()
	assert.Contains(t, console, "ping-pong: a 1-byte token through two pipes")
	assert.Regexp(t, `(?m)^off      \|\s+1000\.0 .* \|\s+500\.0 `, console, "the complete row as its second record came")
	assert.NotContains(t, console, "\non ", "the half row waits for its other half")
	r.Close()
	assert.Regexp(t, `(?m)^on       \|\s+3000\.0 .* \| not measured$`, b.String())
}

// TestGrid: the work curve's columns are the modes of its first row; its
// heading waits for that row to be complete.
func TestGrid(t *testing.T) {
	ns := func(n int64) *int64 { return &n }
	w := func(mode string, point int64, ratio float64) contract.Record {
		return contract.Syscall{Subject: contract.Subject{Bench: "work", Width: 64, Mode: mode, Entry: "syscall", Flavour: "minimal", WorkNs: ns(point)},
			N: 200, R: 10, Warmup: 2, Stats: stats(1000*ratio, ratio), NsPerCall: 500 * ratio}
	}
	out := render(timing, w("off", 0, 1), w("on", 0, 3), w("off", 100, 1), w("on", 100, 2))
	assert.Contains(t, out, "\nwork (ns)           off           on      on vs off     off MHz, dist      on MHz, dist\n")
	assert.Contains(t, out, "\n0                 500.0       1500.0        +200.0%           - MHz 0           - MHz 0\n")
	assert.Contains(t, out, "\n100               500.0       1000.0        +100.0%           - MHz 0           - MHz 0\n")
}

// TestFormatRow: cells padded to their columns, a long cell spanning the
// empty ones after it up to a bar.
func TestFormatRow(t *testing.T) {
	cols := []Column{left("mode", 4), right("a", 3), right("b", 3), {Head: "c", Width: 3, Bar: true}, right("d", 3)}
	assert.Equal(t, "off    1   2 |   3   4", FormatRow(cols, []string{"off", "1", "2", "3", "4"}))
	assert.Equal(t, "on   unsupported |   3   4", FormatRow(cols, []string{"on", "unsupported", "", "3", "4"}))
	assert.Equal(t, "on     x", FormatRow(cols, []string{"on", "x"}))
}

// TestCoreShort: a seed or work cell's core clock and disturbed repeats
// (moved from bench's TestDisturbDeltasNMIOnly with the code): one of 4
// repeats disturbed by an NMI, no core clock; none disturbed.
func TestCoreShort(t *testing.T) {
	one := contract.Core{CoreClock: "unsupported", SMICount: "unsupported", NMIs: 2, Disturbed: 1, Sampled: "repeat",
		Undisturbed: &contract.Spread{N: 3, Mean: 100, Median: 100, Min: 100, Max: 100}, Headline: "undisturbed"}
	assert.Equal(t, "    - MHz 1/4", coreShort(&one))
	calm := contract.Core{CoreClock: "unsupported", SMICount: "unsupported", Sampled: "repeat",
		Undisturbed: &contract.Spread{N: 4}, Headline: "all"}
	assert.Equal(t, "    - MHz 0", coreShort(&calm))
	assert.Equal(t, "    - MHz -", coreShort(nil))
}

// TestRuns (moved from bench with runs).
func TestRuns(t *testing.T) {
	assert.Equal(t, "10 runs after 2 warm-up runs", runs(10, 2))
	assert.Equal(t, "1 run after 1 warm-up run", runs(1, 1))
	assert.Equal(t, "3 runs after 0 warm-up runs", runs(3, 0))
}
