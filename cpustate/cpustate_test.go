package cpustate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/efi"
)

// fakeCPU is a CPU of CPUID leaves (by leaf and subleaf) and an MSR bank:
// an MSR not in the bank raises #GP. The TSC advances by tscStep at each
// read; with clock set, APERF and MPERF are computed from the TSC.
type fakeCPU struct {
	cpuid   map[[2]uint32][4]uint32
	msr     map[uint32]uint64
	writes  []uint32
	tsc     uint64
	tscStep uint64
	clock   func(tsc uint64) (aperf, mperf uint64)
}

func (f *fakeCPU) CPUID(l, s uint32) (uint32, uint32, uint32, uint32) {
	r := f.cpuid[[2]uint32{l, s}]
	return r[0], r[1], r[2], r[3]
}

func (f *fakeCPU) ReadMSR(m uint32) (uint64, bool) {
	v, ok := f.msr[m]
	if ok && f.clock != nil && (m == amd64.MSR_IA32_APERF || m == amd64.MSR_IA32_MPERF) {
		a, mp := f.clock(f.tsc)
		if m == amd64.MSR_IA32_APERF {
			return a, true
		}
		return mp, true
	}
	return v, ok
}

func (f *fakeCPU) WriteMSR(m uint32, v uint64) bool {
	if _, ok := f.msr[m]; !ok {
		return false
	}
	f.msr[m] = v
	f.writes = append(f.writes, m)
	return true
}

func (f *fakeCPU) TSC() uint64 {
	f.tsc += f.tscStep
	return f.tsc
}

// "GenuineIntel" in EBX, EDX, ECX of leaf 0.
const intelB, intelD, intelC = 0x756e6547, 0x49656e69, 0x6c65746e

// Real CPUs: CPUID leaves and MSR values as Linux's cpuid and turbostat
// print them on these parts (the MSRs as a firmware leaves them before an
// OS: the core at its lowest ratio).

// ivyBridge is a Core i7-3770 (06_3A, 3.4 GHz nominal, HT on) with
// microcode that enumerates IA32_SPEC_CTRL, the firmware having left the
// core at ratio 16 (LFM).
func ivyBridge() *fakeCPU {
	return &fakeCPU{
		cpuid: map[[2]uint32][4]uint32{
			{0, 0}:   {0xd, intelB, intelC, intelD},
			{1, 0}:   {0x306a9, 0x3100800, 0x7fbae3ff, 0xbfebfbff},
			{6, 0}:   {0x77, 0x2, 0x9, 0},
			{7, 0}:   {0, 0x281, 0, 0x9c000000},
			{0xb, 0}: {0x1, 0x2, 0x100, 0x3},
		},
		msr: map[uint32]uint64{
			amd64.MSR_PLATFORM_INFO:      0x80838f1012200,
			amd64.MSR_IA32_PERF_STATUS:   0x1c5d00001000,
			amd64.MSR_IA32_PERF_CTL:      0x1000,
			amd64.MSR_IA32_MISC_ENABLE:   0x850089,
			amd64.MSR_SMI_COUNT:          0x2a,
			amd64.MSR_IA32_APERF:         0x1234,
			amd64.MSR_IA32_MPERF:         0x5678,
			amd64.MSR_IA32_SPEC_CTRL:     0,
			amd64.MSR_IA32_PAT:           0x7040600070406,
			amd64.MSR_IA32_MTRR_DEF_TYPE: 0xc00,
		},
	}
}

// skylakeClient is a Core i7-6700K (06_5E, 4.0 GHz nominal) with HWP
// enabled by the firmware and Hyper-Threading disabled in its setup.
func skylakeClient() *fakeCPU {
	return &fakeCPU{
		cpuid: map[[2]uint32][4]uint32{
			{0, 0}:    {0x16, intelB, intelC, intelD},
			{1, 0}:    {0x506e3, 0x100800, 0x7ffafbbf, 0xbfebfbff},
			{6, 0}:    {0x27f7, 0x2, 0x9, 0},
			{7, 0}:    {0, 0x29c6fbf, 0, 0x9c002400},
			{0xb, 0}:  {0x0, 0x1, 0x100, 0x0},
			{0x15, 0}: {0x2, 0x14e, 0x0, 0x0},
			{0x16, 0}: {0xfa0, 0x1068, 0x64, 0x0},
		},
		msr: map[uint32]uint64{
			amd64.MSR_PLATFORM_INFO:         0x80838f3012800,
			amd64.MSR_IA32_PERF_STATUS:      0x2a6000000800,
			amd64.MSR_IA32_PERF_CTL:         0x800,
			amd64.MSR_IA32_MISC_ENABLE:      0x850089,
			amd64.MSR_IA32_PM_ENABLE:        0x1,
			amd64.MSR_IA32_HWP_CAPABILITIES: 0x108282a,
			amd64.MSR_IA32_HWP_REQUEST:      0x80002a08,
			amd64.MSR_SMI_COUNT:             0x5,
			amd64.MSR_IA32_APERF:            0,
			amd64.MSR_IA32_MPERF:            0,
			amd64.MSR_IA32_SPEC_CTRL:        0,
			amd64.MSR_IA32_PAT:              0x7040600070406,
			amd64.MSR_IA32_MTRR_DEF_TYPE:    0xc00,
		},
	}
}

// skylakeServer is a Xeon Gold 6148 (06_55, 2.4 GHz nominal, HT on) whose
// firmware left HWP off (OOB mode), turbo disabled and the core at ratio
// 12; its microcode enumerates IA32_ARCH_CAPABILITIES.
func skylakeServer() *fakeCPU {
	return &fakeCPU{
		cpuid: map[[2]uint32][4]uint32{
			{0, 0}:    {0x16, intelB, intelC, intelD},
			{1, 0}:    {0x50654, 0x400800, 0x7ffefbff, 0xbfebfbff},
			{6, 0}:    {0xef7, 0x2, 0x9, 0}, // hwp, hwp_act_window, hwp_epp, hwp_pkg_req
			{7, 0}:    {0, 0xd39ffffb, 0x8, 0xbc000000},
			{0xb, 0}:  {0x1, 0x2, 0x100, 0x0},
			{0x15, 0}: {0x2, 0xc0, 0x0, 0x0},
			{0x16, 0}: {0x960, 0xe10, 0x64, 0x0},
		},
		msr: map[uint32]uint64{
			amd64.MSR_PLATFORM_INFO:          0x20080c3bf011800,
			amd64.MSR_IA32_PERF_STATUS:       0x1f4100000c00,
			amd64.MSR_IA32_PERF_CTL:          0xc00,
			amd64.MSR_IA32_MISC_ENABLE:       0x4000850089,
			amd64.MSR_IA32_PM_ENABLE:         0x0,
			amd64.MSR_IA32_HWP_CAPABILITIES:  0x70a1821,
			amd64.MSR_IA32_HWP_REQUEST:       0x0,
			amd64.MSR_SMI_COUNT:              0x10,
			amd64.MSR_IA32_APERF:             0,
			amd64.MSR_IA32_MPERF:             0,
			amd64.MSR_IA32_SPEC_CTRL:         0,
			amd64.MSR_IA32_ARCH_CAPABILITIES: 0x2b,
			amd64.MSR_IA32_PAT:               0x7040600070406,
			amd64.MSR_IA32_MTRR_DEF_TYPE:     0xc00,
		},
	}
}

// emulated is QEMU's TCG with -cpu Skylake-Client as ptilab sees it: an
// Intel CPUID without APERF/MPERF or HWP, and none of the MSRs.
func emulated() *fakeCPU {
	return &fakeCPU{
		cpuid: map[[2]uint32][4]uint32{
			{0, 0}: {0xd, intelB, intelC, intelD},
			{1, 0}: {0x506e3, 0x800, 0xfffa3223, 0x0f8bfbff},
			{6, 0}: {0x4, 0, 0, 0},
			{7, 0}: {0, 0x2, 0, 0},
		},
		msr: map[uint32]uint64{amd64.MSR_IA32_PAT: 0x7040600070406},
	}
}

func TestReadPower(t *testing.T) {
	ivb := ReadPower(ivyBridge())
	assert.True(t, ivb.Intel)
	assert.True(t, ivb.APERF)
	assert.False(t, ivb.HWP)
	assert.Equal(t, uint8(34), ivb.MaxNonTurbo())
	assert.Equal(t, uint8(16), ivb.CurrentRatio())
	eist, known := ivb.EIST()
	assert.True(t, eist && known)
	off, _ := ivb.TurboDisabled()
	assert.False(t, off)
	assert.Equal(t, amd64.SampleAPERF|amd64.SampleSMI, ivb.Sources())

	skl := ReadPower(skylakeClient())
	assert.True(t, skl.HWP && skl.HWPEnabled)
	assert.Equal(t, uint8(40), skl.MaxNonTurbo())

	skx := ReadPower(skylakeServer())
	assert.True(t, skx.HWP)
	assert.False(t, skx.HWPEnabled, "PM_ENABLE = 0")
	off, known = skx.TurboDisabled()
	assert.True(t, off && known)
	assert.Equal(t, uint8(24), skx.MaxNonTurbo())

	emu := ReadPower(emulated())
	assert.False(t, emu.APERF)
	assert.False(t, emu.PlatformInfo.OK)
	assert.False(t, emu.SMICount.OK)
	assert.Zero(t, emu.Sources())
}

func TestPlanPState(t *testing.T) {
	r := PlanPState(ReadPower(ivyBridge()), PStateNominal)
	assert.Equal(t, uint32(amd64.MSR_IA32_PERF_CTL), r.MSR)
	assert.Equal(t, uint64(0x2200), r.Value, "ratio 34 in [15:8]")
	assert.Equal(t, uint64(0x1000), r.Restore)
	assert.Equal(t, uint8(34), r.Ratio)

	r = PlanPState(ReadPower(skylakeClient()), PStateNominal)
	assert.Equal(t, uint32(amd64.MSR_IA32_HWP_REQUEST), r.MSR, "HWP enabled: PERF_CTL is ignored")
	assert.Equal(t, uint64(0x80282828), r.Value, "min = max = desired = 40, EPP 0x80 kept")
	assert.Equal(t, uint64(0x80002a08), r.Restore)

	r = PlanPState(ReadPower(skylakeServer()), PStateNominal)
	assert.Equal(t, uint32(amd64.MSR_IA32_PERF_CTL), r.MSR, "HWP present but not enabled")
	assert.Equal(t, uint64(0x1800), r.Value)

	r = PlanPState(ReadPower(ivyBridge()), PStateLeave)
	assert.Zero(t, r.MSR)
	assert.Contains(t, r.Why, "leave")

	noEIST := ivyBridge()
	noEIST.msr[amd64.MSR_IA32_MISC_ENABLE] &^= amd64.MISC_ENABLE_EIST
	r = PlanPState(ReadPower(noEIST), PStateNominal)
	assert.Zero(t, r.MSR)
	assert.Contains(t, r.Why, "EIST is disabled")

	r = PlanPState(ReadPower(emulated()), PStateNominal)
	assert.Zero(t, r.MSR)
	assert.Contains(t, r.Why, "unsupported")

	// A firmware that requested through the package MSR: the core's own
	// request is made to count.
	pkg := skylakeClient()
	pkg.msr[amd64.MSR_IA32_HWP_REQUEST] |= 1 << 42
	r = PlanPState(ReadPower(pkg), PStateNominal)
	assert.Equal(t, uint64(0x80282828), r.Value, "Package_Control cleared")
	assert.Equal(t, uint64(0x40080002a08), r.Restore)

	// HWP's lowest and highest bound the request.
	low := skylakeClient()
	low.msr[amd64.MSR_IA32_HWP_CAPABILITIES] = 0x1082024 // highest 0x24
	r = PlanPState(ReadPower(low), PStateNominal)
	assert.Equal(t, uint8(0x24), r.Ratio)
}

func TestApplyUndo(t *testing.T) {
	cpu := skylakeClient()
	r := PlanPState(ReadPower(cpu), PStateNominal)
	require.True(t, r.Apply(cpu))
	assert.Equal(t, uint64(0x80282828), cpu.msr[amd64.MSR_IA32_HWP_REQUEST])
	require.True(t, r.Undo(cpu))
	assert.Equal(t, uint64(0x80002a08), cpu.msr[amd64.MSR_IA32_HWP_REQUEST])
	assert.Equal(t, []uint32{amd64.MSR_IA32_HWP_REQUEST, amd64.MSR_IA32_HWP_REQUEST}, cpu.writes)

	emu := emulated()
	r = PlanPState(ReadPower(emu), PStateNominal)
	assert.True(t, r.Apply(emu), "nothing to write")
	assert.True(t, r.Undo(emu))
	assert.Empty(t, emu.writes)
}

func TestClockArithmetic(t *testing.T) {
	// Ivy Bridge, TSC 3.4 GHz, the core at LFM (1.6 GHz) over 1 ms.
	a := amd64.Sample{APERF: 1_000_000, MPERF: 9_000_000, SMI: 0x2a}
	b := amd64.Sample{APERF: 1_000_000 + 1_600_000, MPERF: 9_000_000 + 3_400_000, SMI: 0x2b}
	d := Delta(a, b)
	assert.Equal(t, amd64.Sample{APERF: 1_600_000, MPERF: 3_400_000, SMI: 1}, d)
	assert.InDelta(t, 1600, MHz(3_400_000_000, d), 1e-9)
	// MSR_SMI_COUNT wraps at 32 bits.
	assert.Equal(t, uint64(2), Delta(amd64.Sample{SMI: 0xffffffff}, amd64.Sample{SMI: 1}).SMI)
	_, ok := Ratio(amd64.Sample{})
	assert.False(t, ok, "MPERF did not move")
	assert.Zero(t, MHz(3_400_000_000, amd64.Sample{}))
}

// TestWaitSettled: the clock ramps from LFM to nominal over 5 ms after the
// request; WaitSettled waits for it and reports the nominal clock.
func TestWaitSettled(t *testing.T) {
	const hz = 3_400_000_000
	cpu := ivyBridge()
	cpu.tscStep = hz / 100_000 // 10 µs per read
	ramp := uint64(hz / 200)   // 5 ms
	cpu.clock = func(tsc uint64) (uint64, uint64) {
		// APERF integrates a ratio going from 16/34 to 1 over the ramp.
		if tsc < ramp {
			x := float64(tsc) / float64(ramp)
			return uint64(float64(tsc) * (16.0/34 + (1-16.0/34)*x/2)), tsc
		}
		atRamp := float64(ramp) * (16.0/34 + (1-16.0/34)/2)
		return uint64(atRamp) + tsc - ramp, tsc
	}
	s := WaitSettled(cpu, hz, 1, 500)
	assert.True(t, s.Settled)
	assert.Greater(t, s.Ms, 5.0)
	assert.Less(t, s.Ms, 10.0)
	assert.InDelta(t, 3400, s.MHz, 3400*SettleTolerance)

	// A clock that never settles: bounded by the TSC.
	cpu = ivyBridge()
	cpu.tscStep = hz / 100_000
	cpu.clock = func(tsc uint64) (uint64, uint64) {
		ms := tsc / (hz / 1000)
		return tsc/2 + (ms%2)*(hz/1000)/3*ms, tsc
	}
	s = WaitSettled(cpu, hz, 1, 50)
	assert.False(t, s.Settled)
	assert.LessOrEqual(t, float64(cpu.tsc), float64(hz)*0.051, "gave up at the bound")
}

func TestState(t *testing.T) {
	entry := efi.EntryState{CR0: 0x80010033, CR4: 0x668, EFER: 0xd01, CS: 0x38, SS: 0x30, DS: 0x30, ES: 0x30, FS: 0x30, GS: 0x30, RFLAGS: 0x246}

	cpu := ivyBridge()
	s := State(cpu, entry, ReadPower(cpu))
	assert.Equal(t, "0x80010033", s.CR0)
	assert.Equal(t, "0x38", s.Selectors["cs"])
	assert.Equal(t, "0x30", s.Selectors["fs"])
	assert.True(t, s.IF)
	assert.Equal(t, ClockAPERF, s.CoreClock)
	assert.Equal(t, SMIFromMSR, s.SMICount)
	assert.Equal(t, 34, s.MaxNonTurboRatio)
	assert.Equal(t, 16, s.CurrentRatio)
	assert.Equal(t, "0x0", s.MSRs["IA32_SPEC_CTRL"])
	assert.Equal(t, Unsupported, s.MSRs["IA32_ARCH_CAPABILITIES"], "CPUID.07H:EDX[29] clear")
	assert.Equal(t, Unsupported, s.MSRs["IA32_HWP_REQUEST"])
	assert.Equal(t, "0x850089", s.MSRs["IA32_MISC_ENABLE"])
	assert.Equal(t, "0xc00", s.MSRs["IA32_MTRR_DEF_TYPE"])
	require.NotNil(t, s.FastStrings)
	assert.True(t, *s.FastStrings)
	assert.True(t, s.ERMSB)
	assert.Nil(t, s.CPUID15H, "max leaf 0DH")
	assert.Equal(t, 2, s.ThreadsPerCore)
	assert.Equal(t, "0bh", s.TopologyLeaf)
	assert.True(t, s.SMT)

	cpu = skylakeClient()
	s = State(cpu, entry, ReadPower(cpu))
	assert.Equal(t, []uint32{0x2, 0x14e, 0, 0}, s.CPUID15H)
	assert.Equal(t, []uint32{0xfa0, 0x1068, 0x64, 0}, s.CPUID16H)
	assert.True(t, s.HWPEnabled)
	assert.Equal(t, "0x80002a08", s.MSRs["IA32_HWP_REQUEST"])
	assert.False(t, s.SMT, "Hyper-Threading off in the firmware")

	cpu = skylakeServer()
	s = State(cpu, entry, ReadPower(cpu))
	assert.Equal(t, "0x2b", s.MSRs["IA32_ARCH_CAPABILITIES"])
	require.NotNil(t, s.TurboDisabled)
	assert.True(t, *s.TurboDisabled)
	assert.True(t, s.SMT)

	cpu = emulated()
	s = State(cpu, efi.EntryState{}, ReadPower(cpu))
	assert.Equal(t, Unsupported, s.CoreClock)
	assert.Equal(t, Unsupported, s.SMICount)
	assert.Nil(t, s.EIST)
	assert.Equal(t, Unsupported, s.MSRs["MSR_PLATFORM_INFO"])
	assert.Equal(t, "0x7040600070406", s.MSRs["IA32_PAT"])
	assert.Equal(t, "none", s.TopologyLeaf)
}
