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
	assert.Contains(t, out, "\n0                 500.0       1500.0           3.00           - MHz 0           - MHz 0\n")
	assert.Contains(t, out, "\n100               500.0       1000.0           2.00           - MHz 0           - MHz 0\n")
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
	assert.Equal(t, "-", coreShort(nil), "nothing known: an empty cell, which report leaves out")
}

// TestRuns (moved from bench with runs).
func TestRuns(t *testing.T) {
	assert.Equal(t, "10 runs after 2 warm-up runs", runs(10, 2))
	assert.Equal(t, "1 run after 1 warm-up run", runs(1, 1))
	assert.Equal(t, "3 runs after 0 warm-up runs", runs(3, 0))
}

// TestLadderRows: a ladder rung's row is its measurement record and its
// ladder record; a rung that did not run is its unsupported record, with
// the part and what it is over that the record carries.
func TestLadderRows(t *testing.T) {
	sub := func(mitig string) contract.Subject {
		return contract.Subject{Bench: "ladder", Width: 64, Mode: "off", Entry: "syscall", Flavour: "mitigated", Mitigations: mitig}
	}
	inc := 12.0
	out := render(timing,
		contract.Syscall{Subject: sub("none"), N: 100, R: 3, Warmup: 1, Stats: stats(98, 1), NsPerCall: 49},
		contract.Ladder{Subject: sub("none"), Rung: contract.Rung{Part: "none", Over: "linux flavour"}, Unit: "tsc_cycles", Mean: 98, Increment: &inc, Sites: 6},
		contract.Unsupported{Subject: sub("ibrs"), Rung: &contract.Rung{Part: "alone", Over: "none"}, N: 100, R: 3, Warmup: 1,
			Reason: "off/mitigated/ibrs: ibrs: no IA32_SPEC_CTRL: not supported by this CPU"})
	assert.Contains(t, out, "(the 6 disabled sites of the null path")
	assert.Contains(t, out, "\nmode     part     rung                                 +tsc_cycles over ")
	assert.Regexp(t, `(?m)^off      none     none\s+\+12\.0 linux flavour\s+98\.0\s+0\.5%\s+98\.0\s+97\.0\s+49\.0\s+1\.00 `, out)
	assert.Regexp(t, `(?m)^off      alone    ibrs\s+- none\s+unsupported: ibrs: no IA32_SPEC_CTRL: not supported by this CPU$`, out)
	assert.Contains(t, out, "reference (docs/references.md: T-Systems")
}

// TestOracleHeading: the oracle's table is headed by the secret and the
// calibration (the record before its rows).
func TestOracleHeading(t *testing.T) {
	sub := func(mode string) contract.Subject { return contract.Subject{Bench: "oracle", Width: 64, Mode: mode} }
	yes := true
	out := render(timing,
		contract.OracleCalibration{Subject: sub("off"), Samples: 200, Unit: "tsc_cycles", TimedBy: "RDTSCP; LFENCE",
			Hit: contract.OraclePercentiles{P10: 21, P50: 21, P90: 42, Min: 21, Max: 99}, Miss: contract.OraclePercentiles{P10: 21, P50: 21, P90: 42, Min: 1, Max: 99},
			Verdict: "oracle unavailable: cache timing not observable"},
		contract.Oracle{Subject: sub("off"), Secret: "0x1000", Pattern: "PTI:Meltdown/F+R", Bytes: 16, Attempts: 1, Faults: 16, ErrorCode: 5, Present: true,
			AsExpected: &yes, Reason: "oracle unavailable: cache timing not observable", Meltdown: "Vulnerable"},
		contract.Check{Name: "oracle limit", OK: true})
	assert.Contains(t, out, `ring 3 reads a kernel secret, 16 bytes "PTI:Meltdown/F+R" at 0x1000 (a supervisor-only page`)
	assert.Contains(t, out, "\ncalibration: 200 loads of a cached and of a flushed line, timed by RDTSCP; LFENCE, tsc_cycles (p10/p50/p90, min-max): hits 21/21/42 (21-99), misses 21/21/42 (1-99)\n")
	assert.Contains(t, out, "\noff      #PF P=1 (error 0x5)    16       1         not tried: oracle unavailable: cache timing not observable\nexpected on a CPU with Meltdown")
}

// TestOracleCalibrations: a calibration per mode heads the oracle's
// table, a line of how and a line per mode with its own threshold.
func TestOracleCalibrations(t *testing.T) {
	sub := func(mode string) contract.Subject { return contract.Subject{Bench: "oracle", Width: 64, Mode: mode} }
	cal := func(mode string, missP10, threshold uint64) contract.OracleCalibration {
		return contract.OracleCalibration{Subject: sub(mode), Samples: 1000, Unit: "tsc_cycles", TimedBy: "RDTSCP; LFENCE", After: "getppid",
			Hit: contract.OraclePercentiles{P10: 30, P50: 32, P90: 36, Min: 28, Max: 90}, Miss: contract.OraclePercentiles{P10: missP10, P50: missP10 + 20, P90: missP10 + 60, Min: missP10 - 10, Max: 900},
			Observable: true, Threshold: threshold, Verdict: "cache timing observable"}
	}
	yes, n := true, 16
	out := render(timing, cal("off", 180, 108), cal("on", 400, 218),
		contract.Oracle{Subject: sub("off"), Secret: "0x1000", Bytes: 16, Attempts: 100, Faults: 1600, ErrorCode: 5, Present: true, Tried: true,
			AsExpected: &yes, Recovered: &n, Leaked: "50", Meltdown: "Vulnerable"})
	assert.Contains(t, out, "\ncalibration, in each mode: 1000 loads of a cached and of a flushed line, each after a getppid (its kernel entry and exit, as the reloads follow the fault's), timed by RDTSCP; LFENCE, tsc_cycles: p10/p50/p90 (min-max)\n")
	assert.Contains(t, out, "\ncalibration off: hits 30/32/36 (28-90), misses 180/200/240 (170-900): a load of at most 108 is a hit\n")
	assert.Contains(t, out, "\ncalibration on: hits 30/32/36 (28-90), misses 400/420/460 (390-900): a load of at most 218 is a hit\n")
}

// TestOracleASI: under asi the kernel secret's row faults with P=1 and a
// line under the table says why (nonsensitive kernel data, mapped in ring
// 3's table); the sensitive secret's rows are a table of their own, whose
// lines say from each row's P bit whether it can leak that way.
func TestOracleASI(t *testing.T) {
	sub := func(mode, target string) contract.Subject {
		return contract.Subject{Bench: "oracle", Width: 64, Mode: mode, Target: target}
	}
	yes := true
	row := func(mode, target, secret string, ec uint64) contract.Oracle {
		return contract.Oracle{Subject: sub(mode, target), Secret: secret, Pattern: "PTI:Meltdown/F+R", Bytes: 16, Attempts: 1, Faults: 16, ErrorCode: ec, Present: ec&1 != 0,
			AsExpected: &yes, Reason: "oracle unavailable: cache timing not observable", Meltdown: "Not affected"}
	}
	asiTiming := contract.Timing{TSCHz: 2e9, TSCSource: "test", Modes: []string{"off", "on", "asi", "asi+pcid"}}
	out := render(asiTiming, row("off", "", "0x1000", 5), row("on", "", "0x1000", 4), row("asi", "", "0x1000", 5), row("asi+pcid", "", "0x1000", 5),
		row("asi", "sensitive", "0x4000000", 4),
		contract.Unsupported{Subject: sub("asi+pcid", "sensitive"), Reason: "asi+pcid sensitive: PCID: not supported by this CPU"},
		contract.Check{Name: "oracle limit", OK: true})
	assert.Contains(t, out, "\nasi      #PF P=1 (error 0x5)    16       1         not tried: oracle unavailable: cache timing not observable\n")
	assert.Contains(t, out, "\nasi, asi+pcid: isolated, yet the secret read faults with P=1: the secret is nonsensitive kernel data, which ring 3's table (the nonsensitive one) maps supervisor-only as off's does, so a CPU with Meltdown can leak it as under off\n")
	assert.NotContains(t, out, "on, asi", "on's row faults with P=0")
	assert.Contains(t, out, "\nleak oracle, its sensitive secret: ring 3 reads 16 bytes \"PTI:Meltdown/F+R\" at 0x4000000 (a frame of ASI's sensitive blocks")
	assert.Regexp(t, `(?m)^asi\+pcid unsupported: PCID: not supported by this CPU$`, out)
	assert.Contains(t, out, "\nasi      #PF P=0 (error 0x4)    16       1         not tried: oracle unavailable: cache timing not observable\n")
	assert.Contains(t, out, "\nasi: ring 3's table does not map the secret (P=0): a Meltdown read has no translation to it")
	assert.NotContains(t, out, "maps the secret supervisor-only (P=1)")
	assert.Less(t, strings.Index(out, "leak oracle (Meltdown"), strings.Index(out, "leak oracle, its sensitive secret"), "the kernel secret's table first")

	// A table whose first row did not run names no address.
	out = render(asiTiming, contract.Unsupported{Subject: sub("asi+pcid", "sensitive"), Reason: "asi+pcid sensitive: PCID: not supported by this CPU"})
	assert.Contains(t, out, "\nleak oracle, its sensitive secret: ring 3 reads its bytes (a frame")
}

// TestProbeASI: the probe's and the exposure's tables say under their rows
// what the asi modes' user table is, where they have an asi column or row.
func TestProbeASI(t *testing.T) {
	probe := func(mode, target, addr string, ec uint64) contract.Probe {
		yes := true
		return contract.Probe{Subject: contract.Subject{Bench: "probe", Width: 64, Mode: mode, Entry: "syscall", Target: target}, Address: addr, Faulted: true,
			ProbeFault: &contract.ProbeFault{Vector: 14, ErrorCode: ec, Present: ec&1 != 0, CR2: addr, User: true}, AsExpected: &yes}
	}
	exposure := func(mode string, areas ...contract.ExposureArea) contract.Exposure {
		return contract.Exposure{Subject: contract.Subject{Bench: "probe", Width: 64, Mode: mode}, Areas: areas}
	}
	out := render(timing,
		probe("off", "kernel text", "0x1001000", 5), probe("on", "kernel text", "0x1001000", 4), probe("asi", "kernel text", "0x1001000", 5),
		probe("off", "sensitive page", "0x4000000", 5), probe("on", "sensitive page", "0x4000000", 4), probe("asi", "sensitive page", "0x4000000", 4),
		exposure("on"), exposure("asi", contract.ExposureArea{Name: "the nonsensitive kernel", Holds: "the kernel but the sensitive blocks"}))
	assert.Regexp(t, `(?m)^kernel text\s+0x1001000\s+#PF P=1 \(error 0x5\)\s+#PF P=0 \(error 0x4\)\s+#PF P=1 \(error 0x5\)$`, out)
	assert.Regexp(t, `(?m)^sensitive page\s+0x4000000\s+#PF P=1 \(error 0x5\)\s+#PF P=0 \(error 0x4\)\s+#PF P=0 \(error 0x4\)$`, out)
	assert.Contains(t, out, "\nasi: ring 3 runs on the nonsensitive table, which maps the kernel supervisor-only but the sensitive blocks (user data)")
	assert.Regexp(t, `(?m)^asi\s+the nonsensitive kernel: the kernel but the sensitive blocks$`, out)
	assert.Contains(t, out, "\n(asi: ASI, linuxasi.dev, keeps user data out of the kernel's nonsensitive address space")

	out = render(timing, probe("off", "kernel text", "0x1001000", 5), probe("on", "kernel text", "0x1001000", 4), exposure("on"))
	assert.NotContains(t, out, "nonsensitive", "no asi column, no asi line")
}

// TestFlushCostRows: a flush operation's row names it in words, with its
// ± (perf's) and ns; an unsupported one says why.
func TestFlushCostRows(t *testing.T) {
	sub := contract.Subject{Bench: "flushcost", Width: 64}
	pct := 2.7
	a, b := sub, sub
	a.Target, b.Target = "mov cr3", "invpcid 0"
	out := render(timing,
		contract.FlushCost{Subject: a, Operation: "MOV to CR3, no PCID", N: 200, R: 3, Warmup: 1, Unit: "tsc_cycles", PerfPct: &pct,
			PerOp: contract.Spread{N: 3, Mean: 200, Median: 190, Min: 180, Max: 230}, EmptyLoopCycles: 8.6, TSCHz: 2e9},
		contract.Unsupported{Subject: b, Operation: "INVPCID type 0 (one address)", N: 200, R: 3, Warmup: 1, Reason: "no INVPCID (CPUID.(EAX=07H,ECX=0):EBX[10])"})
	assert.Contains(t, out, "3 repeats of 200 operations after 1 warm-up repeat, empty-loop overhead (8.6 per iteration) subtracted")
	assert.Contains(t, out, "\nMOV to CR3, no PCID                           200.0    2.7%      190.0      180.0      100.0\n")
	assert.Contains(t, out, "\nINVPCID type 0 (one address)             unsupported: no INVPCID (CPUID.(EAX=07H,ECX=0):EBX[10])\n")
}

// TestCoreCells (moved from bench with the cells): no core clock, one of
// 4 repeats disturbed; none of 4; the core clock at half the TSC's; the
// PMU's instructions and core cycles per operation; the PMU columns
// only when the counters count; a PMU cross-check's warning under its
// row.
func TestCoreCells(t *testing.T) {
	assert.Equal(t, []string{"-", "-", "1/4"}, coreCells(&contract.Core{CoreClock: "unsupported", Disturbed: 1, Sampled: "repeat"}, 4, pmuCols{}))
	assert.Equal(t, []string{"-", "-", "0/4"}, coreCells(&contract.Core{CoreClock: "unsupported", Sampled: "repeat"}, 4, pmuCols{}))
	assert.Equal(t, []string{"1700", "110.0", "3/5"}, coreCells(&contract.Core{CoreClock: "aperf/mperf", CoreMHz: 1700, CoreMean: 110, Disturbed: 3, Sampled: "repeat"}, 5, pmuCols{}))
	pmu := &contract.PMUCounts{PerOp: map[string]float64{"instructions": 100, "core_cycles": 200}}
	assert.Equal(t, []string{"-", "-", "0/2", "100.0", "200.0"}, coreCells(&contract.Core{Sampled: "repeat", PMU: pmu}, 2, pmuCols{on: true}))
	assert.Equal(t, []string{"core MHz", "core/op", "dist rep", "inst/op", "pmu cyc/op"}, (&Table{Columns: coreCols(pmuCols{on: true})}).Heads())
	r := New(Text{W: &bytes.Buffer{}})
	r.core = &contract.Core{PMU: &contract.PMUCounts{Unsupported: "AMD"}}
	assert.False(t, r.pmuOn().on, "no columns without counts")

	// The model's events: a column each, walks before STLB hits before
	// walk cycles, whatever the map's order; the fixed counters have none.
	events := map[string]float64{"instructions": 100, "core_cycles": 200, "ref_cycles": 190,
		"DTLB_LOAD_MISSES.WALK_DURATION": 30, "DTLB_LOAD_MISSES.STLB_HIT": 2, "ITLB_MISSES.WALK_COMPLETED": 0.5, "DTLB_LOAD_MISSES.WALK_COMPLETED": 1.25}
	r.core = &contract.Core{PMU: &contract.PMUCounts{PerOp: events}}
	cols := r.pmuOn()
	assert.Equal(t, pmuCols{on: true, events: []string{"DTLB_LOAD_MISSES.WALK_COMPLETED", "ITLB_MISSES.WALK_COMPLETED", "DTLB_LOAD_MISSES.STLB_HIT", "DTLB_LOAD_MISSES.WALK_DURATION"}}, cols)
	assert.Equal(t, []string{"core MHz", "core/op", "dist rep", "inst/op", "pmu cyc/op", "dTLB walk/op", "iTLB walk/op", "dSTLB hit/op", "dwalk cyc/op"}, (&Table{Columns: coreCols(cols)}).Heads())
	assert.Equal(t, []string{"-", "-", "0/2", "100.0", "200.0", "1.2", "0.5", "2.0", "30.0"}, coreCells(&contract.Core{Sampled: "repeat", PMU: r.core.PMU}, 2, cols))
	assert.Equal(t, "ok", checkCell(&contract.PMUCheck{Status: "ok"}))
	assert.Equal(t, "MISMATCH", checkCell(&contract.PMUCheck{Status: "mismatch"}))
	assert.Equal(t, "-", checkCell(&contract.PMUCheck{Status: "not available: AMD"}))
	assert.Equal(t, "-", checkCell(nil))
	assert.Nil(t, checkNotes(contract.Syscall{PMUCheck: &contract.PMUCheck{Status: "ok"}}))
	assert.Equal(t, []string{"  ! PMU cross-check mismatch: w"}, checkNotes(contract.Syscall{PMUCheck: &contract.PMUCheck{Status: "mismatch", Warning: "w"}}))
}

// TestPhaseStamps: the phase breakdown takes the stamps' calibrated cost
// out of the phases and shows it in a column of its own; a log from
// before the calibration says its stamps are inside the phases.
func TestPhaseStamps(t *testing.T) {
	sub := contract.Subject{Bench: "null32", Width: 32, Mode: "on", Entry: "sysenter", Flavour: "linux", Copy: "movsl", Stamps: true}
	phases := map[string]float64{"cr3_in": 10, "copy_in": 20, "dispatch": 30, "copy_out": 20, "cr3_out": 10}
	cost := map[string]float64{"cr3_in": 4, "copy_in": 8, "dispatch": 8, "copy_out": 8, "cr3_out": 8}
	rec := contract.Syscall{Subject: sub, N: 100, R: 5, Stats: stats(200, 0), Phases: phases, StampCost: cost, PhaseCall: 200}
	out := render(timing, rec)
	assert.Contains(t, out, "MFENCE;LFENCE;RDTSC at each boundary, their own cost (calibrated in the run) taken out of the phases")
	// 200 = 90 in the phases + 36 in the stamps + 74 in the rest.
	assert.Regexp(t, `(?m)^on\s+movsl\s+10\.0\s+5\.0%\s+20\.0\s+10\.0%\s+30\.0\s+15\.0%\s+20\.0\s+10\.0%\s+10\.0\s+5\.0%\s+36\.0\s+18\.0%\s+74\.0\s+37\.0%\s+200\.0`, out)

	rec.StampCost = nil
	out = render(timing, rec)
	assert.Contains(t, out, "RDTSC at each boundary, its own cost inside the phases")
	assert.Regexp(t, `(?m)^on\s+movsl\s+10\.0\s+5\.0%.*\s+-\s+110\.0\s+55\.0%\s+200\.0`, out)
}

// TestASITransitions: in a plan with asi modes the 64-bit syscall and
// tasks tables have a column of ASI transitions per operation beside
// the figures: the record's transitions over the timed loop's calls
// (warm-up included), the run's round trips, the last run's messages;
// "-" in the other modes' rows. The 32-bit world, which has no asi
// mode, keeps its tables.
func TestASITransitions(t *testing.T) {
	asiTiming := contract.Timing{TSCHz: 2e9, TSCSource: "test", Modes: []string{"off", "on", "asi", "asi+pcid"}}
	count := func(n uint64) *uint64 { return &n }
	call := func(bench, mode string, width int, transitions *uint64) contract.Syscall {
		entry, flavour := "syscall", "minimal"
		if width == 32 {
			entry = "sysenter"
		}
		if bench == "lseek" {
			flavour = "linux"
		}
		return contract.Syscall{Subject: contract.Subject{Bench: bench, Width: width, Mode: mode, Entry: entry, Flavour: flavour},
			N: 1000, R: 10, Warmup: 2, Stats: stats(100, 1), NsPerCall: 50, ASITransitions: transitions}
	}
	out := render(asiTiming,
		call("null", "off", 64, nil), call("null", "asi", 64, count(3000)), // 3000 over 12000 calls
		call("lseek", "off", 64, nil), call("lseek", "asi", 64, count(0)),
		call("null32", "off", 32, nil), call("null32", "on", 32, nil))
	assert.Contains(t, out, "\nmode     flavour  global     tsc/call      ±%       median          min    ns/call  vs off asi/call core MHz    core/op dist rep\n")
	assert.Regexp(t, `(?m)^off      minimal  no     .* 1\.00        - +- +- +0/10$`, out)
	assert.Regexp(t, `(?m)^asi      minimal  no     .* 1\.00     0\.25 +- +- +0/10$`, out)
	assert.Regexp(t, `(?m)^mode     global +tsc/call +±% +ns/call +ops/s +vs off +global gain asi/call core MHz`, out)
	assert.Regexp(t, `(?m)^asi      no .* 1\.00 +- +0\.00 +- +- +0/10$`, out)
	assert.Contains(t, out, "\nmode     entry    flavour  global     tsc/call      ±%       median          min    ns/call  vs off core MHz    core/op dist rep\n",
		"the 32-bit null table without the column")

	ping := func(mode, tasks string, transitions *uint64) contract.PingPong {
		p := pp(mode, tasks, 1000, 1)
		p.ASITransitions = transitions
		return p
	}
	msg := func(mode, tasks string, transitions *uint64) contract.Messaging {
		return contract.Messaging{Subject: contract.Subject{Bench: "messaging", Width: 64, Mode: mode, Entry: "syscall", Flavour: "linux", Tasks: tasks},
			Workload: contract.Workload{Groups: 1, Loops: 2, Size: 100, IPC: "pipe"}, R: 10, Warmup: 2, Stats: stats(2e6, 1),
			Seconds: 0.001, Messages: 800, PerMessage: 2500, ASITransitions: transitions}
	}
	out = render(asiTiming,
		ping("off", "processes", nil), ping("off", "threads", nil),
		ping("asi", "processes", count(9600)), ping("asi", "threads", count(9720)), // over 2400 round trips
		msg("off", "processes", nil), msg("off", "threads", nil),
		msg("asi", "processes", count(1682)), msg("asi", "threads", count(1600))) // over 800 messages
	assert.Regexp(t, `(?m)^mode     \|    processes      ±%        ns  vs off  CR3/rt  asi/rt core MHz .* \|      threads      ±%        ns  vs off  CR3/rt  asi/rt core MHz`, out)
	assert.Regexp(t, `(?m)^off      \| .* 2\.00       - +- +- +0/10 \| .* 2\.00       - +- +- +0/10$`, out)
	assert.Regexp(t, `(?m)^asi      \| .* 2\.00    4\.00 +- +- +0/10 \| .* 2\.00    4\.05 +- +- +0/10$`, out)
	assert.Regexp(t, `(?m)^mode     \|  processes s      ±%    tsc/msg  vs off asi/msg core MHz .* \|    threads s      ±%    tsc/msg  vs off asi/msg core MHz`, out)
	assert.Regexp(t, `(?m)^off      \| .* 1\.00       - +- +- +0/10 \| .* 1\.00       - +- +- +0/10$`, out)
	assert.Regexp(t, `(?m)^asi      \| .* 1\.00    2\.10 +- +- +0/10 \| .* 1\.00    2\.00 +- +- +0/10$`, out)

	// A plan whose asi modes run only with asi actions: its timing
	// record's modes are the labelled ones (asi[verw]), which name the
	// rows too.
	verw := call("null", "asi", 64, count(3000))
	verw.ASIActions = "verw"
	out = render(contract.Timing{TSCHz: 2e9, TSCSource: "test", Modes: []string{"off", "asi[verw]"}}, call("null", "off", 64, nil), verw)
	assert.Regexp(t, `(?m)^asi\[verw\] minimal  no     .* 1\.00     0\.25 +- +- +0/10$`, out)
}
