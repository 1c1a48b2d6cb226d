package contract

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEncodeDecode: every kind encodes as an object with its kind first
// and decodes back to the same value.
func TestEncodeDecode(t *testing.T) {
	ns := int64(2000)
	yes := true
	ucode := uint32(0x28)
	two := 2
	sixteen, extra := 16, 540.5
	inc, paranoid := 54.0, 2
	recs := []Record{
		Syscall{Subject: Subject{Bench: "work", Width: 64, Mode: "on", Entry: "syscall", Flavour: "minimal", WorkNs: &ns, Emulated: true},
			N: 200, R: 10, Stats: Stats{Unit: "tsc_cycles", Mean: 1.5, Median: 1, Min: 1, Max: 2, TSCHz: 2e9, RatioToOff: 3,
				Core: Core{CoreClock: "aperf/mperf", CoreMHz: 3400, CoreMean: 1.2, SMICount: "msr", SMIs: 1, Disturbed: 1, Sampled: "repeat",
					Undisturbed: &Spread{N: 9, Mean: 1.4}, Headline: "undisturbed",
					PMU: &PMUCounts{PerOp: map[string]float64{"instructions": 120, "DTLB_LOAD_MISSES.WALK_COMPLETED": 0.5}, Skipped: []string{"ITLB_MISSES.STLB_HIT: no counter"}}}},
			NsPerCall: 0.75, EmptyLoopCycles: 2, Phases: map[string]float64{"cr3_in": 1}, PhaseCall: 9,
			PMUCheck: &PMUCheck{Status: "mismatch", Expected: 15, Measured: 15.5, Repeats: 9, EmptyRepeats: 10, Warning: "validity warning"}},
		PingPong{Subject: Subject{Bench: "pingpong", Width: 32, Mode: "off", Entry: "int80", Tasks: "threads"}, N: 200, R: 10, RoundTrips: 2400, Switches: 4801,
			Stats: Stats{Core: Core{PMU: &PMUCounts{Unsupported: "not counted in the 32-bit world"}}}},
		Messaging{Subject: Subject{Bench: "messaging", Width: 64, Tasks: "processes"}, Workload: Workload{Groups: 2, Loops: 10, Size: 100, IPC: "pipe"}, R: 10, Warmup: 2, Messages: 8000, ChecksumsOK: true},
		Phases{Subject: Subject{Bench: "messaging", Width: 32, Stamps: true}, Workload: Workload{Groups: 1}, Unit: "instructions", PhasePct: map[string]float64{"dispatch": 50}, EntryPathPct: 30},
		Probe{Subject: Subject{Bench: "probe", Width: 64, Mode: "on", Target: "kernel text"}, Address: "0x1000", Faulted: true,
			ProbeFault: &ProbeFault{Vector: 14, ErrorCode: 4, CR2: "0x1000", User: true}, AsExpected: &yes},
		Probe{Subject: Subject{Bench: "probe", Target: "own page"}, Address: "0x7f8000010000"},
		Exposure{Subject: Subject{Bench: "probe", Width: 64, Mode: "on-noswitch"}, Areas: []ExposureArea{
			{Name: "trampoline stack", Start: "0xffffffffffe0b000", End: "0xffffffffffe0c000", Pages: 1, Holds: "pt_regs"}}},
		Exposure{Subject: Subject{Bench: "probe", Width: 64, Mode: "on"}, Areas: []ExposureArea{}},
		Retention{Subject: Subject{Bench: "retention", Width: 64, Mode: "on+pcid"}, Probe: "pcid-noflush", Address: "0x7f8000010000",
			First: "0x1000801", Away: "0x8000000001000001", Back: "0x8000000001000801", Result: "walked again"},
		FlushCost{Subject: Subject{Bench: "flushcost", Width: 64, Target: "invpcid 2"}, N: 1000, R: 10, Warmup: 2, Unit: "instructions",
			PerOp: Spread{N: 10, Mean: 3, Median: 3, Min: 3, Max: 3}, EmptyLoopCycles: 2, TSCHz: 2e9},
		OracleCalibration{Subject: Subject{Bench: "oracle", Width: 64, Mode: "off"}, Samples: 1000, Unit: "tsc_cycles",
			Hit: OraclePercentiles{P10: 30, P50: 32, P90: 36, Min: 28, Max: 90}, Miss: OraclePercentiles{P10: 180, P50: 200, P90: 240, Min: 170, Max: 900},
			Observable: true, Threshold: 108, Verdict: "cache timing observable"},
		Oracle{Subject: Subject{Bench: "oracle", Width: 64, Mode: "on"}, Secret: "0x10200000", Bytes: 16, Attempts: 1, Faults: 16, ErrorCode: 4,
			AsExpected: &yes, Reason: "oracle unavailable: cache timing not observable", Meltdown: "Not affected"},
		Oracle{Subject: Subject{Bench: "oracle", Width: 64, Mode: "off"}, Secret: "0x10200000", Bytes: 16, Attempts: 100, Faults: 1600, ErrorCode: 5,
			Present: true, AsExpected: &yes, Tried: true, Recovered: &two, Leaked: "5054??", Meltdown: "Mitigation: PTI"},
		TLBSweep{Subject: Subject{Bench: "tlbsweep", Width: 64, Mode: "on", Target: "user 4k", SweepPages: &sixteen}, N: 100, R: 10, Warmup: 2,
			Stats: Stats{Unit: "tsc_cycles", Mean: 900, RatioToOff: 2.5}, NsPerCall: 300, EmptyLoopCycles: 4, ExtraVsOff: &extra,
			Side: "user", Region: "0x7f8040000000", PageBytes: 4096, Stride: 4096, VirtualPages: 4096, Frames: 1, FrameBytes: 4096,
			BytesPerTouch: 1, Offset: "(k*64) mod 4096"},
		Unsupported{Subject: Subject{Bench: "tlbsweep", Mode: "on+pcid", Target: "kernel 4k", SweepPages: &sixteen}, N: 100, R: 10, Reason: "PCID"},
		Seed{Subject: Subject{Bench: "messaging", Width: 32}, Seconds: 0.25},
		Unsupported{Subject: Subject{Bench: "null32", Mode: "on+pcid"}, N: 1000, R: 10, Reason: "not in PAE"},
		Unsupported{Subject: Subject{Bench: "messaging"}, Workload: &Workload{Groups: 2, Loops: 10, Size: 100, IPC: "pipe"}, R: 10, Warmup: 2, Reason: "PCID"},
		SeedUnsupported{Unsupported{Subject: Subject{Bench: "null", Width: 32}, Reason: "not in PAE"}},
		Error{Name: "ring3 setup", Error: "out of memory"},
		Error{Name: "null on/minimal/nonglobal", Error: "fault", Subject: &Subject{Bench: "null", Mode: "on"}, N: 1000, R: 10},
		Check{Name: "sleep", OK: true, Detail: "10 ms", Data: map[string]any{"tsc_ns": json.Number("10000000")}},
		Check{Name: "fmt", Data: map[string]any{}},
		Deadlock{Bench: "deadlock", Provoked: true, Tasks: []DeadlockTask{{Task: 1, Process: 1, State: "blocked", Wait: "read", Pipe: 1, RIP: "0x7f8000001010"}}, TaskCount: 2, States: map[string]int{"blocked": 2}},
		Machine{Vendor: "GenuineIntel", Family: 6, Model: 0x3a, Microcode: &ucode, Board: "pc",
			TSCHPETHz: 3_392_310_000, HPETBase: 0xfed00000, HPETPeriodFs: 69_841_279, HPETStarted: true, HPETRestored: true, TSCHPETvsPMPPM: &ns, TSCPITRetries: &two, TSCPITError: "disturbed"},
		Timing{LFENCE: "yes", TSCHz: 3e9},
		CPUState{CR0: "0x80010033", Selectors: map[string]string{"cs": "0x38"}, IF: true, MSRs: map[string]string{"MSR_SMI_COUNT": "unsupported"},
			CPUID15H: []uint32{2, 0xc8, 0, 0}, CoreClock: "unsupported", SMICount: "unsupported", EIST: &yes, ThreadsPerCore: 2, TopologyLeaf: "0bh", SMT: true},
		PState{Mode: "nominal", MSR: "IA32_PERF_CTL", Value: "0x2200", Firmware: "0x1000", Ratio: 34, Why: "x", Applied: true, Settled: true, SettleMs: 2, CoreMHz: 3400},
		Baseline{Ms: 1000, Reads: 40e6, BaselineSMIs: BaselineSMIs{SMICount: "msr", SMIs: 250, SMIsPerS: 250},
			BaselineGaps: BaselineGaps{GapThresholdUs: 10, Gaps: 250, GapsPerS: 250, GapTotalUs: 12500, MaxGapUs: 61.5},
			CoreClock:    "aperf/mperf", CoreMHz: 3400, Warnings: []string{"250 SMIs a second"}},
		Vulnerabilities{Linux: "6.6", Vendor: "GenuineIntel", Family: 6, Model: 0x3a, Stepping: 9, ArchCapabilities: "unsupported", SMT: true,
			PTINeeded: true, PTIWhy: "affected", BHI: "Not affected", Table: map[string]string{"meltdown": "Mitigation: PTI"}},
		MSRRestore{At: "fault", MSRs: []RestoredMSR{{Name: "IA32_PMC0", MSR: "0xc1", Firmware: "0x0", Via: "0x4c1", Restored: true, ReadBack: "0x0"},
			{Name: "IA32_PERF_CTL", MSR: "0x199", Firmware: "0x1000"}}},
		PMUFirmware{MSRs: []FirmwareMSR{{Name: "IA32_PERF_GLOBAL_CTRL", MSR: "0x38f", Value: "0xf"}}, InUse: []string{"IA32_PERFEVTSEL0 = 0x43003c: counter 0 enabled"}},
		PlanError{Line: 3, Text: "x", Error: "unknown key", Consequence: "using the default"},
		SyscallCounts{Counts: map[string]uint64{"mmap": 3}, Distinct: 1, Total: 3},
		Fault{Vector: 14, Name: "#PF page fault", RIP: "0x1", CR2: "0x10", In: "Go code"},
		OutOfMemory{PoolBytes: 1 << 20, Address: "0x10"},
		End{Status: "ok", Failed: []string{}, PlanErrors: 1, UptimeMs: 5},
		Ladder{Subject: Subject{Bench: "ladder", Width: 64, Mode: "on", Flavour: "mitigated", Mitigations: "verw+bhb"}, Rung: Rung{Part: "stacked", Over: "verw"},
			Unit: "instructions", Mean: 160, Increment: &inc},
		Linux{Release: "6.1.0", Cmdline: "nopti", PTI: "off", PTIWhy: "no pti flag", Global: true, Boost: "unknown", SMT: "notsupported",
			CPUs: 2, Pinned: "none", PerfEventParanoid: &paranoid, Counters: "unsupported: ENOENT", Compat32: "native"},
		PerfBench{Key: "bench=null width=64 mode=off entry=syscall flavour=linux global=on", Command: "perf bench syscall basic --loop 100000",
			Unit: "ns", Rounds: 2, Perf: []float64{70, 71}, Ptilab: []float64{66, 67}, Ratio: 66.5 / 70.5},
	}
	kinds := map[string]bool{}
	for _, r := range recs {
		kinds[r.Kind()] = true
		b, err := Encode(r)
		require.NoError(t, err, r.Kind())
		assert.Regexp(t, `^\{"kind":"`+r.Kind()+`"[,}]`, string(b))
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m), string(b))
		back, err := Decode(r.Kind(), b)
		require.NoError(t, err, string(b))
		assert.Equal(t, r, back, string(b))
	}
	all := Kinds()
	sort.Strings(all)
	for _, k := range all {
		assert.True(t, kinds[k], "kind %s is tested", k)
	}
}

// TestCheckDataCannotReplace: a check's own fields win over Data's.
func TestCheckDataCannotReplace(t *testing.T) {
	b, err := Encode(Check{Name: "sleep", OK: false, Detail: "d", Data: map[string]any{"ok": true, "name": "x", "n": 1}})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, map[string]any{"kind": "check", "name": "sleep", "ok": false, "detail": "d", "n": float64(1)}, m)
}

func TestDecodeErrors(t *testing.T) {
	_, err := Decode("bogus", []byte(`{}`))
	assert.ErrorContains(t, err, `unknown record kind "bogus"`)
	_, err = Decode("syscall", []byte(`{"N":"many"}`))
	assert.ErrorContains(t, err, "a syscall record")
	_, err = Decode("end", []byte(`[1]`))
	assert.Error(t, err)
}

// TestRetentionSummary: the answers of a run's retention records and
// unsupported ones, in the probes' order, others after.
func TestRetentionSummary(t *testing.T) {
	recs := []Record{
		Retention{Probe: "global", Result: "kept"},
		Unsupported{Subject: Subject{Bench: "flushcost", Target: "invpcid 0"}, Reason: "no INVPCID"},
		Unsupported{Subject: Subject{Bench: "retention", Target: "pcid-noflush"}, Reason: "PCID"},
		Syscall{Subject: Subject{Bench: "null"}},
	}
	a := RetentionAnswers(recs)
	assert.Equal(t, map[string]string{"global": "kept", "pcid-noflush": "unsupported"}, a)
	assert.Equal(t, "pcid-noflush unsupported, global kept", RetentionSummary(a))
	a["zeta"], a["alpha"] = "kept", "walked again"
	assert.Equal(t, "pcid-noflush unsupported, global kept, alpha walked again, zeta kept", RetentionSummary(a))
	assert.Empty(t, RetentionAnswers(recs[3:]))
	assert.Equal(t, "", RetentionSummary(nil))
}

// TestTSCEvidence: the machine line's account of the TSC's references,
// from the record alone.
func TestTSCEvidence(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	zero, one, two := 0, 1, 2
	for _, tc := range []struct {
		name string
		m    Machine
		want string
	}{
		{"a record from before the evidence", Machine{TSCHz: 2e9, TSCSource: "cpuid-15h"}, ""},
		{"QEMU q35: PM timer and HPET over one window",
			Machine{TSCSource: "acpi-pm-timer", TSCMeasuredHz: 2_095_999_435, TSCMeasuredBy: "acpi-pm-timer",
				TSCHPETHz: 2_096_001_532, HPETPeriodFs: 10_000_000, HPETStarted: true, HPETRestored: true, TSCHPETvsPMPPM: i64(1)},
			"CPUID none, measured 2.095999 GHz (acpi-pm-timer), HPET 2.096002 GHz (+1 ppm)"},
		{"an HPET not put back",
			Machine{TSCSource: "acpi-pm-timer", TSCMeasuredHz: 2_095_999_435, TSCMeasuredBy: "acpi-pm-timer",
				TSCHPETHz: 2_096_001_532, HPETPeriodFs: 10_000_000, HPETStarted: true, TSCHPETvsPMPPM: i64(1)},
			"CPUID none, measured 2.095999 GHz (acpi-pm-timer), HPET 2.096002 GHz (+1 ppm) (started for the calibration, and its configuration or count did not read back as found after)"},
		{"no HPET",
			Machine{TSCSource: "acpi-pm-timer", TSCMeasuredHz: 999_999_939, TSCMeasuredBy: "acpi-pm-timer", TSCHPETError: "no HPET table"},
			"CPUID none, measured 1.000000 GHz (acpi-pm-timer), HPET: no HPET table"},
		{"Skylake: CPUID checked against the HPET, no PM timer",
			Machine{TSCSource: "cpuid-15h-model", TSCCPUIDHz: 1_896_000_000, TSCCPUIDSource: "cpuid-15h-model",
				TSCMeasuredHz: 1_896_003_000, TSCMeasuredBy: "hpet", TSCHPETHz: 1_896_003_000, TSCPPM: i64(-1), TSCPMTimerError: "not present"},
			"CPUID 1.896000 GHz (cpuid-15h-model), measured 1.896003 GHz (hpet), ACPI PM timer: not present, -1 ppm apart"},
		{"Bochs: the PIT after two retries",
			Machine{TSCSource: "pit", TSCMeasuredHz: 100_000_527, TSCMeasuredBy: "pit", TSCPMTimerError: "not present",
				TSCHPETError: "no HPET table", TSCPITRetries: &two},
			"CPUID none, measured 0.100001 GHz (pit), ACPI PM timer: not present, HPET: no HPET table, PIT after 2 retries"},
		{"nothing measured, CPUID's figure alone",
			Machine{TSCSource: "cpuid-15h", TSCCPUIDHz: 3e9, TSCCPUIDSource: "cpuid-15h", TSCPMTimerError: "not present",
				TSCHPETError: "above 4 GiB", TSCPITRetries: &two, TSCPITError: "disturbed"},
			"CPUID 3.000000 GHz (cpuid-15h), measured none, ACPI PM timer: not present, HPET: above 4 GiB, PIT: disturbed (2 retries)"},
		{"CPUID and the measurement disagree",
			Machine{TSCSource: "acpi-pm-timer", TSCCPUIDHz: 1_896_000_000, TSCCPUIDSource: "cpuid-15h-model", TSCMeasuredHz: 1_899_800_000,
				TSCMeasuredBy: "acpi-pm-timer", TSCPPM: i64(-2000), TSCHPETError: "did not advance", TSCPITRetries: nil},
			"CPUID 1.896000 GHz (cpuid-15h-model), measured 1.899800 GHz (acpi-pm-timer), HPET: did not advance, -2000 ppm apart: the measured figure is used"},
		{"PIT at the second attempt",
			Machine{TSCSource: "pit", TSCMeasuredHz: 100_000_527, TSCMeasuredBy: "pit", TSCPMTimerError: "not present", TSCPITRetries: &one},
			"CPUID none, measured 0.100001 GHz (pit), ACPI PM timer: not present, PIT after 1 retry"},
		{"PIT at the first attempt",
			Machine{TSCSource: "pit", TSCMeasuredHz: 100_000_527, TSCMeasuredBy: "pit", TSCPMTimerError: "not present", TSCPITRetries: &zero},
			"CPUID none, measured 0.100001 GHz (pit), ACPI PM timer: not present"},
	} {
		assert.Equal(t, tc.want, tc.m.TSCEvidence(), tc.name)
	}
}
