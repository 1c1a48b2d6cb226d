package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/cpustate/cpustatetest"
)

// fakePMU is the CPU startPMU programs in host tests: CPUID leaves 0, 1
// and 0AH and a bank of MSRs (an MSR not in the bank raises #GP).
type fakePMU = cpustatetest.CPU

// "GenuineIntel", maximum leaf 0DH.
var intelLeaf0 = [4]uint32{0x0d, 0x756e6547, 0x6c65746e, 0x49656e69}

// ivyBridgePMU is an Ivy Bridge (06_3AH stepping 9) with version 3: 4
// programmable counters and 3 fixed ones, 48 bits wide.
func ivyBridgePMU() *fakePMU {
	f := &fakePMU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: intelLeaf0, 1: {0x000306a9}, 0x0a: {0x07300403, 0, 0, 0x603}}), MSRs: map[uint32]uint64{}}
	for _, m := range []uint32{amd64.MSR_IA32_PERF_GLOBAL_CTRL, amd64.MSR_IA32_PERF_GLOBAL_STATUS, amd64.MSR_IA32_PERF_GLOBAL_OVF_CTRL, amd64.MSR_IA32_FIXED_CTR_CTRL} {
		f.MSRs[m] = 0
	}
	for i := uint32(0); i < 4; i++ {
		f.MSRs[amd64.MSR_IA32_PMC0+i], f.MSRs[amd64.MSR_IA32_PERFEVTSEL0+i] = 0, 0
	}
	for j := uint32(0); j < 3; j++ {
		f.MSRs[amd64.MSR_IA32_FIXED_CTR0+j] = 0
	}
	return f
}

// withPMU runs f with the PMU programmed by startPMU on c for plan (the
// PMU line, and all startPMU printed), and leaves it stopped and every
// MSR it wrote restored (RestoreMSRs, whose output it returns).
func withPMU(t *testing.T, plan Plan, c *fakePMU, f func(line, out string)) (restored string) {
	t.Helper()
	require.Empty(t, cpustate.Saved.Entries(), "a test left MSRs saved")
	var out bytes.Buffer
	r := NewReporter(&out)
	startPMU(r, plan, c)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	f(lines[len(lines)-1], out.String())
	stopPMU(c)
	out.Reset()
	RestoreMSRs(r, c)
	return out.String()
}

// TestStartPMUIvyBridge: the fixed counters and the plan's events are
// started (IA32_PERF_GLOBAL_CTRL last), their MSRs named to the sample
// call in slots 0-2 and 3.., and an event beyond the sample's 4
// programmable slots is reported, not dropped.
func TestStartPMUIvyBridge(t *testing.T) {
	c := ivyBridgePMU()
	plan := DefaultPlan()
	plan.PMUEvents = []string{"ITLB_MISSES.WALK_COMPLETED", "DTLB_LOAD_MISSES.WALK_COMPLETED", "DTLB_LOAD_MISSES.STLB_HIT",
		"DTLB_LOAD_MISSES.WALK_DURATION", "ITLB_MISSES.STLB_HIT", "DTLB_LOAD_MISSES.WALK_PENDING"}
	withPMU(t, plan, c, func(line, _ string) {
		assert.True(t, pmuNow.on)
		assert.Equal(t, cpustate.SamplePMCMSRs{0x309, 0x30a, 0x30b, 0xc1, 0xc2, 0xc3, 0xc4}, pmuNow.msrs)
		assert.Equal(t, [cpustate.SamplePMCs]string{"instructions", "core_cycles", "ref_cycles", "ITLB_MISSES.WALK_COMPLETED",
			"DTLB_LOAD_MISSES.WALK_COMPLETED", "DTLB_LOAD_MISSES.STLB_HIT", "DTLB_LOAD_MISSES.WALK_DURATION"}, pmuNow.names)
		assert.Equal(t, []string{"DTLB_LOAD_MISSES.WALK_PENDING: not in the Ivy Bridge table",
			"ITLB_MISSES.STLB_HIT: the sample call reads at most 4 programmable counters"}, pmuNow.skipped)
		assert.Equal(t, uint64(0x7_0000_000f), c.MSRs[amd64.MSR_IA32_PERF_GLOBAL_CTRL], "3 fixed and 4 programmable counters enabled")
		assert.Equal(t, uint64(0x333), c.MSRs[amd64.MSR_IA32_FIXED_CTR_CTRL], "OS and USR")
		assert.Equal(t, uint32(amd64.MSR_IA32_PERF_GLOBAL_CTRL), c.Writes[len(c.Writes)-1].MSR, "global enable last")
		assert.Contains(t, line, "ptilab: PMU: version 3, CPU 06_3AH stepping 9: counting instructions, core_cycles, ref_cycles, ITLB_MISSES.WALK_COMPLETED")
		assert.Contains(t, line, "not counted: DTLB_LOAD_MISSES.WALK_PENDING: not in the Ivy Bridge table")
	})
	assert.Equal(t, uint64(0), c.MSRs[amd64.MSR_IA32_PERF_GLOBAL_CTRL], "the firmware's value back after the run")
	assert.Equal(t, uint64(0), c.MSRs[amd64.MSR_IA32_FIXED_CTR_CTRL], "the firmware's value back after the run")
	for i := uint32(0); i < 4; i++ {
		assert.Equal(t, uint64(0), c.MSRs[amd64.MSR_IA32_PERFEVTSEL0+i], "the firmware's value back after the run")
	}
	assert.False(t, pmuNow.on)
}

// TestStartPMUFirmwareInUse: a firmware that left counters enabled gets a
// warning line and its values in the pmu-firmware record, before the PMU
// line; the run takes the counters, and RestoreMSRs gives each MSR the
// firmware's value back, printed and recorded.
func TestStartPMUFirmwareInUse(t *testing.T) {
	c := ivyBridgePMU()
	c.MSRs[amd64.MSR_IA32_PERF_GLOBAL_CTRL] = 0xf
	c.MSRs[amd64.MSR_IA32_PERFEVTSEL0+1] = 0x53003c
	c.MSRs[amd64.MSR_IA32_FIXED_CTR_CTRL] = 0x30
	c.MSRs[amd64.MSR_IA32_PMC0+1] = 0x1234
	plan := DefaultPlan()
	plan.PMUEvents = []string{"DTLB_LOAD_MISSES.WALK_COMPLETED", "ITLB_MISSES.WALK_COMPLETED"}
	restored := withPMU(t, plan, c, func(line, out string) {
		assert.True(t, pmuNow.on)
		assert.Contains(t, out, "ptilab: PMU: WARNING: the firmware left performance counters enabled (IA32_PERFEVTSEL1 = 0x53003c: counter 1 enabled; "+
			"IA32_FIXED_CTR_CTRL = 0x30: fixed counter 1 enabled): ptilab takes them for the run")
		assert.Contains(t, out, `PTILAB {"kind":"pmu-firmware","msrs":[{"name":"IA32_PERF_GLOBAL_CTRL","msr":"0x38f","value":"0xf"},{"name":"IA32_PMC0","msr":"0xc1","value":"0x0"},`+
			`{"name":"IA32_PMC1","msr":"0xc2","value":"0x1234"},`)
		assert.Contains(t, out, `"in_use":["IA32_PERFEVTSEL1 = 0x53003c: counter 1 enabled","IA32_FIXED_CTR_CTRL = 0x30: fixed counter 1 enabled"]}`)
		assert.True(t, strings.HasPrefix(line, "ptilab: PMU: version 3"), "the PMU line last: %s", line)
		assert.NotEqual(t, uint64(0x53003c), c.MSRs[amd64.MSR_IA32_PERFEVTSEL0+1], "the run's event now")
		assert.Equal(t, uint64(0x333), c.MSRs[amd64.MSR_IA32_FIXED_CTR_CTRL], "the run's fixed counters now")
	})
	assert.Equal(t, uint64(0xf), c.MSRs[amd64.MSR_IA32_PERF_GLOBAL_CTRL])
	assert.Equal(t, uint64(0x53003c), c.MSRs[amd64.MSR_IA32_PERFEVTSEL0+1])
	assert.Equal(t, uint64(0x30), c.MSRs[amd64.MSR_IA32_FIXED_CTR_CTRL])
	assert.Equal(t, uint64(0x1234), c.MSRs[amd64.MSR_IA32_PMC0+1])
	assert.Contains(t, restored, "ptilab: MSRs given back their values from before the run (end): IA32_PERF_GLOBAL_CTRL 0xf, IA32_PMC0 0x0, IA32_PMC1 0x1234,")
	assert.Contains(t, restored, "; each reads back as it was\n")
	assert.Contains(t, restored, `PTILAB {"kind":"msr-restore","at":"end","msrs":[{"name":"IA32_PERF_GLOBAL_CTRL","msr":"0x38f","firmware":"0xf","restored":true,"read_back":"0xf"},`)
}

// TestStartPMUFreezeWhileSMM: where IA32_PERF_CAPABILITIES[12] says so,
// startPMU sets IA32_DEBUGCTL.FREEZE_WHILE_SMM and says so; the restore
// gives IA32_DEBUGCTL back its value.
func TestStartPMUFreezeWhileSMM(t *testing.T) {
	c := ivyBridgePMU()
	c.Leaves[[2]uint32{1, 0}] = [4]uint32{0x000306a9, 0, amd64.CPUID_01_ECX_PDCM, 0}
	c.MSRs[amd64.MSR_IA32_PERF_CAPABILITIES] = amd64.PERF_CAPABILITIES_FREEZE_WHILE_SMM | 0x2c3
	c.MSRs[amd64.MSR_IA32_DEBUGCTL] = 1 // LBR
	withPMU(t, DefaultPlan(), c, func(line, _ string) {
		assert.Contains(t, line, "; frozen in SMM (IA32_DEBUGCTL.FREEZE_WHILE_SMM)")
		assert.Equal(t, uint64(1|amd64.DEBUGCTL_FREEZE_WHILE_SMM), c.MSRs[amd64.MSR_IA32_DEBUGCTL])
	})
	assert.Equal(t, uint64(1), c.MSRs[amd64.MSR_IA32_DEBUGCTL], "restored after the run")
	withPMU(t, DefaultPlan(), ivyBridgePMU(), func(line, _ string) {
		assert.Contains(t, line, "; not frozen in SMM: CPUID.01H:ECX[15] (PDCM) is clear: no IA32_PERF_CAPABILITIES")
	})
}

// TestPMUPerOp: per-repeat deltas of the counters, masked to their 48
// bits (a counter that wrapped), summed over the measured repeats and
// divided by their operations, by name.
func TestPMUPerOp(t *testing.T) {
	c := ivyBridgePMU()
	withPMU(t, DefaultPlan(), c, func(string, string) {
		const top = 1<<48 - 100 // the fixed counter 0 wraps in the second repeat
		samples := []cpustate.Sample{
			{PMC: [7]uint64{top - 5000, 0, 0, 0}},         // warm-up
			{PMC: [7]uint64{top - 1000, 10, 20, 1}},       // measured 1 starts
			{PMC: [7]uint64{top, 2010, 1020, 3, 8}},       // measured 2 starts
			{PMC: [7]uint64{900, 4010, 2020, 5, 8, 1, 2}}, // after the last
		}
		d := DisturbOf([]float64{1, 1}, samples, 2, 1, 10)
		require.NotNil(t, d.PMU)
		assert.Empty(t, d.PMU.Unsupported)
		assert.Equal(t, map[string]float64{
			"instructions": 100, "core_cycles": 200, "ref_cycles": 100,
			"DTLB_LOAD_MISSES.WALK_COMPLETED": 0.2, "ITLB_MISSES.WALK_COMPLETED": 0.4,
			"DTLB_LOAD_MISSES.STLB_HIT": 0.05, "DTLB_LOAD_MISSES.WALK_DURATION": 0.1,
		}, d.PMU.PerOp)
		// Sampled around the whole run: no per-repeat counts.
		assert.Equal(t, "not sampled around every repeat", DisturbDeltas([]float64{1}, []cpustate.Sample{cpustate.Delta(samples[0], samples[3])}, sampledRun, 10).PMU.Unsupported)
	})
}

// TestStartPMUUnsupported: QEMU TCG's and Bochs' CPUID.0AH (0), an AMD
// CPU, pmu = off: nothing is programmed and every 64-bit figure says why.
func TestStartPMUUnsupported(t *testing.T) {
	tcg := &fakePMU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: intelLeaf0, 1: {0x000306a9}}), MSRs: map[uint32]uint64{}}
	amd := &fakePMU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: {0x10, 0x68747541, 0x444d4163, 0x69746e65}}), MSRs: map[uint32]uint64{}}
	bochs := ivyBridgePMU()
	bochs.MSRs = map[uint32]uint64{} // CPUID.0AH lists counters, no MSR exists
	off := DefaultPlan()
	off.PMU = false
	for _, tt := range []struct {
		name   string
		plan   Plan
		c      *fakePMU
		reason string
	}{
		{"no architectural PMU", DefaultPlan(), tcg, "no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)"},
		{"AMD", DefaultPlan(), amd, "AMD: its core performance counters (AMD APM Vol. 2, 13.2) are not programmed by ptilab"},
		{"plan off", off, ivyBridgePMU(), "off in the plan (pmu = off)"},
		{"leaf 0AH without MSRs (Bochs)", DefaultPlan(), bochs, "CPUID.0AH lists architectural performance monitoring version 3, but RDMSR 0x38f raised #GP"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			withPMU(t, tt.plan, tt.c, func(line, _ string) {
				assert.Equal(t, "ptilab: PMU: unsupported: "+tt.reason, line)
				assert.Empty(t, tt.c.Writes, "nothing programmed")
				assert.Empty(t, cpustate.Saved.Entries(), "nothing saved")
				d := DisturbDeltas([]float64{1}, []cpustate.Sample{{}}, SampledRepeat, 10)
				assert.Equal(t, &contract.PMUCounts{Unsupported: tt.reason}, d.PMU)
				assert.Equal(t, d.PMU, d.CoreRecord(1e9).PMU)
			})
		})
	}
}

// The engine tests run RunPlan on the host: the PMU there is a CPU
// without one (no WRMSR on the host).
func init() {
	PMUCPU = &fakePMU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: intelLeaf0}), MSRs: map[uint32]uint64{}}
}
