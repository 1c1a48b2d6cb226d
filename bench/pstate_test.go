package bench

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/cpustate/cpustatetest"
)

func TestCPUStateLines(t *testing.T) {
	yes, no := true, false
	s := contract.CPUState{
		CR0: "0x80010033", CR4: "0x668", EFER: "0xd00",
		Selectors: map[string]string{"cs": "0x38", "ss": "0x30", "ds": "0x30", "es": "0x30", "fs": "0x30", "gs": "0x30", "tr": "0x0"},
		IF:        true, MSRs: map[string]string{"MSR_SMI_COUNT": "0x2a", "IA32_MISC_ENABLE": "0x850089"},
		CPUID15H: []uint32{2, 0x14e, 0, 0}, CoreClock: "aperf/mperf", SMICount: "msr", MaxNonTurboRatio: 34, CurrentRatio: 16,
		EIST: &yes, TurboDisabled: &no, FastStrings: &yes, Turbo: true, ERMSB: true, ThreadsPerCore: 2, TopologyLeaf: "0bh", SMT: true,
		SMTSource: cpustate.SMTFromCPUID, CPUIDLimit: &no, MaxLeafAtEntry: 0x15, MaxLeaf: 0x15,
	}
	l := CPUStateLines(s)
	require.Len(t, l, 4)
	assert.Equal(t, "ptilab cpu-state: firmware at entry: CR0 0x80010033 CR4 0x668 EFER 0xd00 | cs 0x38 ss 0x30 ds 0x30 es 0x30 fs 0x30 gs 0x30 tr 0x0 | IF 1", l[0])
	assert.Equal(t, "ptilab cpu-state: core clock aperf/mperf | SMI count msr | max non-turbo ratio 34, current 16 | EIST on | turbo enabled | HWP absent | fast strings on, ERMSB yes | SMT siblings yes (2 threads per core, CPUID 0bh) | FRED no, LASS no", l[1])
	assert.Equal(t, "ptilab cpu-state: MSRs: IA32_MISC_ENABLE 0x850089, MSR_SMI_COUNT 0x2a", l[2])
	assert.Equal(t, "ptilab cpu-state: CPUID max leaf 0x15 (limit IA32_MISC_ENABLE[22] off) | 15H 0x2 0x14e 0x0 0x0 | 16H absent | firmware's XSAVE: CR4.OSXSAVE clear", l[3])
	s.XCR0, s.XStateInit = "0x7", true
	assert.Equal(t, "ptilab cpu-state: CPUID max leaf 0x15 (limit IA32_MISC_ENABLE[22] off) | 15H 0x2 0x14e 0x0 0x0 | 16H absent | firmware's XCR0 0x7, state put in its initial configuration before OSXSAVE was cleared", CPUStateLines(s)[3])
	s.XCR0, s.XStateInit = "0x3", false
	assert.Equal(t, "ptilab cpu-state: CPUID max leaf 0x15 (limit IA32_MISC_ENABLE[22] off) | 15H 0x2 0x14e 0x0 0x0 | 16H absent | firmware's XCR0 0x3, no AVX: nothing to clean", CPUStateLines(s)[3])

	// The firmware's CPUID limit: cleared at boot, left, not read.
	s.CPUIDLimit, s.CPUIDLimitCleared, s.MaxLeafAtEntry = &yes, true, 2
	assert.Contains(t, CPUStateLines(s)[3], "ptilab cpu-state: CPUID max leaf 0x15 (limit IA32_MISC_ENABLE[22] set by the firmware, cleared by ptilab: was 0x2) | 15H ")
	s.CPUIDLimitCleared, s.MaxLeaf = false, 2
	assert.Contains(t, CPUStateLines(s)[3], "ptilab cpu-state: CPUID max leaf 0x2 (limit IA32_MISC_ENABLE[22] set by the firmware and not cleared: the leaves above 2 are hidden) | 15H ")
	s.CPUIDLimit, s.MaxLeaf, s.MaxLeafAtEntry = nil, 0xd, 0xd
	assert.Contains(t, CPUStateLines(s)[3], "ptilab cpu-state: CPUID max leaf 0xd (limit IA32_MISC_ENABLE[22] not read) | 15H ")

	// Turbo disabled in the firmware (IA32_MISC_ENABLE[38], which also
	// clears CPUID.06H:EAX[1]).
	s.TurboDisabled = &yes
	assert.Contains(t, CPUStateLines(s)[1], "| turbo present but disabled (IA32_MISC_ENABLE[38]) |")
	s.Turbo, s.TurboDisabled = false, nil
	assert.Contains(t, CPUStateLines(s)[1], "| turbo absent |")

	// Hyper-Threading off in the firmware: MSR_CORE_THREAD_COUNT says 4
	// threads on 4 cores, CPUID as shipped still 2 per core.
	s.SMT, s.SMTSource, s.ThreadCount, s.CoreCount = false, cpustate.SMTFromMSR, 4, 4
	assert.Contains(t, CPUStateLines(s)[1], "| SMT siblings no (4 threads on 4 cores enabled, MSR_CORE_THREAD_COUNT; as shipped 2 threads per core, CPUID 0bh) |")
	s.TopologyLeaf, s.ThreadsPerCore = "none", 0
	assert.Contains(t, CPUStateLines(s)[1], "| SMT siblings no (4 threads on 4 cores enabled, MSR_CORE_THREAD_COUNT) |")
	s.SMTSource, s.ThreadCount, s.CoreCount = cpustate.SMTUnknown, 0, 0
	assert.Contains(t, CPUStateLines(s)[1], "| SMT siblings unknown (no CPUID leaf 0BH or 1FH, no MSR_CORE_THREAD_COUNT) |")
}

// pstateCPU returns a CPU whose MSRs are IA32_PERF_CTL = perfCtl, APERF
// and MPERF (any other raises #GP), whose TSC advances 1 ms per read at 1
// GHz and whose core runs at the TSC's rate.
func pstateCPU(perfCtl uint64) *cpustatetest.CPU {
	return &cpustatetest.CPU{
		MSRs:    map[uint32]uint64{amd64.MSR_IA32_PERF_CTL: perfCtl, amd64.MSR_IA32_APERF: 0, amd64.MSR_IA32_MPERF: 0},
		TSCStep: 1e6,
		Clock:   func(tsc uint64) (uint64, uint64) { return tsc, tsc },
	}
}

// TestSetPState: an Ivy Bridge left at ratio 16 gets 34 through
// IA32_PERF_CTL, waits for the clock, and has 16 back at the end (the
// registry of saved MSRs: RestoreMSRs); every step printed and recorded.
func TestSetPState(t *testing.T) {
	cpu := pstateCPU(0x1000)
	p := cpustate.Power{Intel: true, Family: 6, APERF: true,
		PlatformInfo: cpustate.MSR{Value: 0x80838f1012200, OK: true}, PerfCtl: cpustate.MSR{Value: 0x1000, OK: true},
		MiscEnable: cpustate.MSR{Value: 0x850089, OK: true}}
	var out bytes.Buffer
	r := NewReporter(&out)
	SetPState(r, cpustate.PStateNominal, p, cpu, 1e9)
	assert.Equal(t, uint64(0x2200), cpu.MSRs[amd64.MSR_IA32_PERF_CTL])
	RestoreMSRs(r, cpu)
	assert.Equal(t, uint64(0x1000), cpu.MSRs[amd64.MSR_IA32_PERF_CTL])
	assert.Contains(t, out.String(), "ptilab pstate: nominal: IA32_PERF_CTL ratio 34 (maximum non-turbo); the core clock settled at 1000 MHz after 4.0 ms; MPERF ticks at the TSC's rate (dMPERF/dTSC 1.000000)")
	assert.Contains(t, out.String(), `PTILAB {"kind":"pstate","mode":"nominal","msr":"IA32_PERF_CTL","value":"0x2200","firmware":"0x1000","ratio":34,`)
	assert.Contains(t, out.String(), "ptilab: MSRs given back their values from before the run (end): IA32_PERF_CTL 0x1000; each reads back as it was")
	assert.Contains(t, out.String(), `PTILAB {"kind":"msr-restore","at":"end","msrs":[{"name":"IA32_PERF_CTL","msr":"0x199","firmware":"0x1000","restored":true,"read_back":"0x1000"}]}`)

	// leave touches nothing, and has nothing to restore.
	cpu = pstateCPU(0x1000)
	out.Reset()
	SetPState(r, cpustate.PStateLeave, p, cpu, 1e9)
	RestoreMSRs(r, cpu)
	assert.Empty(t, cpu.Writes)
	assert.NotContains(t, out.String(), "msr-restore")
	assert.Contains(t, out.String(), `"kind":"pstate","mode":"leave"`)
}

// TestSetPStateMPERFRate: where MPERF counts slower than the TSC (a
// Skylake client: 2900 MHz base, 2904 MHz TSC), SetPState records the
// rate and every figure's core clock and core cycles are scaled by it:
// the core at its base clock reads 2900 MHz, not 2904; with pstate =
// leave the rate comes from a busy interval of its own.
func TestSetPStateMPERFRate(t *testing.T) {
	t.Cleanup(func() { mperfScale = 1 })
	const hz = 2_904_000_000
	for _, mode := range []string{cpustate.PStateNominal, cpustate.PStateLeave} {
		cpu := pstateCPU(0x1000)
		cpu.TSCStep = hz / 1000
		cpu.Clock = func(tsc uint64) (uint64, uint64) { m := tsc * 2900 / 2904; return m, m }
		p := cpustate.Power{Intel: true, Family: 6, APERF: true,
			PlatformInfo: cpustate.MSR{Value: 0x1d00, OK: true}, PerfCtl: cpustate.MSR{Value: 0x1000, OK: true}}
		var out bytes.Buffer
		r := NewReporter(&out)
		SetPState(r, mode, p, cpu, hz)
		RestoreMSRs(r, cpu)
		assert.Contains(t, out.String(), "MPERF ticks at 0.998623 of the TSC's rate: every core clock and core cycle count is scaled by it", mode)
		assert.Contains(t, out.String(), `"mperf_per_tsc":0.998623,"mperf_scaled":true}`, mode)
		if mode == cpustate.PStateNominal {
			assert.Contains(t, out.String(), `"core_mhz":2900,`, "the settled clock, scaled")
		}
		assert.InDelta(t, 2900.0/2904, mperfScale, 1e-6)

		// A figure: 1000 TSC cycles per call with the core at the base
		// clock (dAPERF = dMPERF) is 1000*2900/2904 core cycles.
		SetCounters(cpustate.SampleAPERF)
		d := DisturbDeltas([]float64{1000}, []cpustate.Sample{{APERF: 2900, MPERF: 2900}}, SampledRepeat, 1)
		c := d.CoreRecord(hz)
		assert.InDelta(t, 2900, c.CoreMHz, 0.001)
		assert.InDelta(t, 1000*2900.0/2904, c.CoreMean, 0.001)
		SetCounters(0)
	}
}
