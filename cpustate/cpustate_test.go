package cpustate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate/cpustatetest"
	"github.com/ptilab/ptilab/efi"
)

// fakeCPU is the test processor: CPUID leaves by leaf and subleaf, an MSR
// bank (an MSR not in it raises #GP), a TSC that advances by TSCStep at
// each read, and APERF and MPERF from Clock when it is set.
type fakeCPU = cpustatetest.CPU

// "GenuineIntel" in EBX, EDX, ECX of leaf 0.
const intelB, intelD, intelC = 0x756e6547, 0x49656e69, 0x6c65746e

// Real CPUs: CPUID leaves and MSR values as public dumps of these parts
// show them, each with its source. The dumps were taken under a running
// OS (macOS, Linux), not at firmware hand-off, so the P-state MSRs hold
// that OS's request. A value no dump of the machine (or of another of the
// same model) shows is marked "constructed", with why.

// ivyBridge is a Core i7-3770K (06_3AH stepping 9, 3.5 GHz nominal, HT on),
// overclocked to ratio 45 when the MSRs were read.
//
// CPUID: AIDA64 v2.60 dump of an i7-3770K, logical CPU #0,
// github.com/InstLatx64/InstLatx64 GenuineIntel/GenuineIntel00306A9_IvyBridge_CPUID.txt;
// its microcode predates IA32_SPEC_CTRL (07H:EDX = 0).
// MSRs: AppleIntelInfo.kext v1.2 output of another i7-3770K under macOS,
// posted by schteeben95 on 2017-09-16 in Piker-Alpha/ssdtPRGen.sh issue 381
// ("i7-3770K SSDT Turbo not working",
// https://github.com/Piker-Alpha/ssdtPRGen.sh/issues/381): PLATFORM_INFO,
// PERF_STATUS, PERF_CTL, MISC_ENABLE, APERF, MPERF.
// Constructed: MSR_SMI_COUNT (no dump shows 34H), IA32_MTRR_DEF_TYPE
// (0xc00: MTRRs enabled, default type UC); IA32_PAT is its power-up value
// (SDM Vol. 3A, 13.12.4).
func ivyBridge() *fakeCPU {
	return &fakeCPU{
		Leaves: map[[2]uint32][4]uint32{
			{0, 0}:   {0xd, intelB, intelC, intelD},
			{1, 0}:   {0x306a9, 0x00100800, 0x7f9ae3bf, 0xbfebfbff},
			{6, 0}:   {0x77, 0x2, 0x9, 0},
			{7, 0}:   {0, 0x281, 0, 0},
			{0xb, 0}: {0x1, 0x2, 0x100, 0},
		},
		MSRs: map[uint32]uint64{
			amd64.MSR_PLATFORM_INFO:      0x81010f0012300, // max non-turbo 35 [15:8], max efficiency 16 [47:40]
			amd64.MSR_IA32_PERF_STATUS:   0x273b00002d00,  // ratio 45
			amd64.MSR_IA32_PERF_CTL:      0x2d00,
			amd64.MSR_IA32_MISC_ENABLE:   0x850089,
			amd64.MSR_SMI_COUNT:          0x2a, // constructed
			amd64.MSR_IA32_APERF:         ivbAPERF,
			amd64.MSR_IA32_MPERF:         ivbMPERF,
			amd64.MSR_IA32_PAT:           0x7040600070406,
			amd64.MSR_IA32_MTRR_DEF_TYPE: 0xc00, // constructed
		},
	}
}

// IA32_APERF and IA32_MPERF as read on the i7-3770K of ssdtPRGen.sh issue 381.
const ivbAPERF, ivbMPERF = 0x29267e8b80, 0x234d2909f9

// skylakeClient is the Kaby Lake (a Skylake-family client part, 06_8EH
// stepping 9, HT on) of a Dell XPS 13 9360 under Linux 6.17-rc2,
// intel_pstate active with HWP: by its TDP-nominal ratio 27 and 3.5 GHz
// turbo an i7-7500U, its maximum non-turbo ratio 29 being the cTDP-up
// level.
//
// MSRs and CPUID leaves 0 (max leaf 16H), 1:EAX (806E9H), 15H and 16H:
// `turbostat` output posted by Paul Menzel to linux-pm on 2025-08-24
// ("Pkg%pcX values do not add up to 100",
// <774d9a96-0120-4009-8fd7-78387267b194@molgen.mpg.de>): PLATFORM_INFO,
// MISC_ENABLE, PM_ENABLE, HWP_CAPABILITIES, HWP_REQUEST (intel_pstate's
// powersave request, min = max = 4, EPP C0H).
// CPUID 1:EBX-EDX, 06H, 07H and 0BH are those of another 06_8EH part, the
// i5-8350U (stepping 10) of a Dell XPS 13 9370 (`cpuid -1 --raw` posted by
// Paul Menzel to LKML on 2022-08-23, "Re: WARNING: CPU: 1 PID: 83 at
// arch/x86/kernel/cpu/sgx/main.c:446", board/calibrate_test.go's skylakeClient);
// its 06H agrees with the decode turbostat printed for the 9360 (HWP,
// notify, window, EPP, no package request; APERF, EPB).
// Constructed: IA32_PERF_STATUS and IA32_PERF_CTL (turbostat does not
// print 198H/199H; with HWP enabled PERF_CTL is ignored and no test reads
// them: STATUS holds ratio 4, what HWP_REQUEST's maximum allowed),
// MSR_SMI_COUNT (turbostat printed only its delta: 0 SMIs), IA32_SPEC_CTRL
// (0), IA32_MTRR_DEF_TYPE. IA32_ARCH_CAPABILITIES, which the 8350U's 07H:EDX
// enumerates, is in no dump: the fake raises #GP for it.
func skylakeClient() *fakeCPU {
	return &fakeCPU{
		Leaves: map[[2]uint32][4]uint32{
			{0, 0}:    {0x16, intelB, intelC, intelD},
			{1, 0}:    {0x806e9, 0x00100800, 0x7ffafbff, 0xbfebfbff},
			{6, 0}:    {0x27f7, 0x2, 0x9, 0},
			{7, 0}:    {0, 0x029c67af, 0, 0xbc002e00},
			{0xb, 0}:  {0x1, 0x2, 0x100, 0},
			{0x15, 0}: {0x2, 0xf2, 0, 0},       // 24 MHz * 242 / 2 = 2904 MHz
			{0x16, 0}: {0xb54, 0xdac, 0x64, 0}, // 2900, 3500, 100 MHz
		},
		MSRs: map[uint32]uint64{
			amd64.MSR_PLATFORM_INFO:         0x4043df1011d00, // max non-turbo 29
			amd64.MSR_IA32_PERF_STATUS:      0x400,           // constructed
			amd64.MSR_IA32_PERF_CTL:         0x1d00,          // constructed
			amd64.MSR_IA32_MISC_ENABLE:      0x850089,
			amd64.MSR_IA32_PM_ENABLE:        0x1,
			amd64.MSR_IA32_HWP_CAPABILITIES: 0x01081b23, // highest 35, guaranteed 27, efficient 8, lowest 1
			amd64.MSR_IA32_HWP_REQUEST:      0xc0000404, // min 4, max 4, desired 0, EPP C0H
			amd64.MSR_SMI_COUNT:             0x5,        // constructed
			amd64.MSR_IA32_APERF:            0,
			amd64.MSR_IA32_MPERF:            0,
			amd64.MSR_IA32_SPEC_CTRL:        0, // constructed
			amd64.MSR_IA32_PAT:              0x7040600070406,
			amd64.MSR_IA32_MTRR_DEF_TYPE:    0xc00, // constructed
		},
	}
}

// skylakeServer is the Xeon Gold 6130 (Skylake-SP, 06_55H stepping 4,
// 2.1 GHz nominal, HT on) of Julia Lawall's yeti-2 under Linux 5.15-rc,
// HWP enabled.
//
// HWP MSRs: `turbostat` lines in Julia Lawall's message to linux-pm of
// 2021-10-28 ("Re: problem in changing from active to passive mode",
// <alpine.DEB.2.22.394.2110282112060.9518@hadrien>, the yeti-2 6130 named
// in her first message of 2021-10-24):
// PM_ENABLE, HWP_CAPABILITIES (highest 37, guaranteed 21 = the 6130's
// 2.1 GHz base, which tells it from her other machine, a 5218), and
// HWP_REQUEST with the desired-performance field 10 the thread is about.
// CPUID 0, 1, 07H and 0BH: AIDA64 dump of an i9-7900X, the same 06_55H
// stepping-4 die (github.com/InstLatx64/InstLatx64
// GenuineIntel/GenuineIntel0050654_SkylakeX_CPUID.txt, logical CPU #0);
// its microcode predates IA32_SPEC_CTRL and IA32_ARCH_CAPABILITIES.
// Constructed: CPUID 06H:EAX, the 7900X's 77H (whose firmware hides HWP)
// with HWP [7], activity window [9], EPP [10] and package request [11]:
// Julia Lawall's turbostat printed MSR_HWP_REQUEST_PKG (package request
// enumerated) and no MSR_HWP_INTERRUPT (notification [8] not), [9] and
// [10] are assumed. 15H and 16H: the 6130's 2.1 GHz by the 25 MHz crystal
// (2 * 2100 / 25 = 168) and its published base and turbo 2100/3700 MHz.
// MSR_PLATFORM_INFO: only the maximum non-turbo ratio 21 (the guaranteed
// performance above) in [15:8]. MISC_ENABLE 850089H as every client dump
// here shows; PERF_STATUS, PERF_CTL, SMI_COUNT, MTRR_DEF_TYPE.
func skylakeServer() *fakeCPU {
	return &fakeCPU{
		Leaves: map[[2]uint32][4]uint32{
			{0, 0}:    {0x16, intelB, intelC, intelD},
			{1, 0}:    {0x50654, 0x00200800, 0x7ffefbbf, 0xbfebfbff},
			{6, 0}:    {0xef7, 0x2, 0x9, 0}, // constructed EAX, see above
			{7, 0}:    {0, 0xd39ffffb, 0, 0},
			{0xb, 0}:  {0x1, 0x2, 0x100, 0},
			{0x15, 0}: {0x2, 0xa8, 0, 0},       // constructed
			{0x16, 0}: {0x834, 0xe74, 0x64, 0}, // constructed: 2100, 3700, 100 MHz
		},
		MSRs: map[uint32]uint64{
			amd64.MSR_PLATFORM_INFO:         0x1500,   // constructed
			amd64.MSR_IA32_PERF_STATUS:      0x1500,   // constructed
			amd64.MSR_IA32_PERF_CTL:         0,        // constructed
			amd64.MSR_IA32_MISC_ENABLE:      0x850089, // constructed
			amd64.MSR_IA32_PM_ENABLE:        0x1,
			amd64.MSR_IA32_HWP_CAPABILITIES: 0x070a1525, // highest 37, guaranteed 21, efficient 10, lowest 7
			amd64.MSR_IA32_HWP_REQUEST:      0x000a2525, // min 37, max 37, desired 10, EPP 0
			amd64.MSR_SMI_COUNT:             0x10,       // constructed
			amd64.MSR_IA32_APERF:            0,
			amd64.MSR_IA32_MPERF:            0,
			amd64.MSR_IA32_PAT:              0x7040600070406,
			amd64.MSR_IA32_MTRR_DEF_TYPE:    0xc00, // constructed
		},
	}
}

// emulated is QEMU's TCG with -cpu Skylake-Client as ptilab sees it: an
// Intel CPUID without APERF/MPERF or HWP, and none of the MSRs.
func emulated() *fakeCPU {
	return &fakeCPU{
		Leaves: map[[2]uint32][4]uint32{
			{0, 0}: {0xd, intelB, intelC, intelD},
			{1, 0}: {0x506e3, 0x800, 0xfffa3223, 0x0f8bfbff},
			{6, 0}: {0x4, 0, 0, 0},
			{7, 0}: {0, 0x2, 0, 0},
		},
		MSRs: map[uint32]uint64{amd64.MSR_IA32_PAT: 0x7040600070406},
	}
}

func TestReadPower(t *testing.T) {
	ivb := ReadPower(ivyBridge())
	assert.True(t, ivb.Intel)
	assert.Equal(t, uint32(6), ivb.Family)
	assert.True(t, ivb.APERF)
	assert.False(t, ivb.HWP)
	assert.True(t, ivb.Turbo)
	assert.Equal(t, uint8(35), ivb.MaxNonTurbo(), "PLATFORM_INFO 0x81010f0012300 [15:8]")
	assert.Equal(t, uint8(45), ivb.CurrentRatio(), "PERF_STATUS 0x273b00002d00 [15:8]: overclocked turbo")
	eist, known := ivb.EIST()
	assert.True(t, eist && known)
	off, _ := ivb.TurboDisabled()
	assert.False(t, off)
	assert.Equal(t, SampleAPERF|SampleSMI, ivb.Sources())

	skl := ReadPower(skylakeClient())
	assert.True(t, skl.HWP && skl.HWPEnabled)
	assert.Equal(t, uint8(29), skl.MaxNonTurbo(), "PLATFORM_INFO 0x4043df1011d00 [15:8]")

	skx := ReadPower(skylakeServer())
	assert.True(t, skx.HWP && skx.HWPEnabled)
	assert.Equal(t, uint8(21), skx.MaxNonTurbo())

	hwpOff := skylakeServer()
	hwpOff.MSRs[amd64.MSR_IA32_PM_ENABLE] = 0 // HWP enumerated, left disabled
	p := ReadPower(hwpOff)
	assert.True(t, p.HWP)
	assert.False(t, p.HWPEnabled, "PM_ENABLE = 0")

	// Turbo disabled in the firmware: IA32_MISC_ENABLE[38] set clears
	// CPUID.06H:EAX[1] (SDM Vol. 4, Table 2-2); present all the same.
	noTurbo := skylakeServer()
	noTurbo.MSRs[amd64.MSR_IA32_MISC_ENABLE] |= amd64.MISC_ENABLE_TURBO_DISABLE
	l6 := noTurbo.Leaves[[2]uint32{6, 0}]
	l6[0] &^= amd64.CPUID06_EAX_TURBO
	noTurbo.Leaves[[2]uint32{6, 0}] = l6
	p = ReadPower(noTurbo)
	off, known = p.TurboDisabled()
	assert.True(t, off && known)
	assert.True(t, p.Turbo, "present, from IA32_MISC_ENABLE[38]")
	s := State(noTurbo, efi.EntryState{}, p)
	assert.True(t, s.Turbo)
	require.NotNil(t, s.TurboDisabled)
	assert.True(t, *s.TurboDisabled)
	// Neither bit: absent.
	noTurbo.MSRs[amd64.MSR_IA32_MISC_ENABLE] &^= amd64.MISC_ENABLE_TURBO_DISABLE
	assert.False(t, ReadPower(noTurbo).Turbo)

	emu := ReadPower(emulated())
	assert.False(t, emu.APERF)
	assert.False(t, emu.PlatformInfo.OK)
	assert.False(t, emu.SMICount.OK)
	assert.Zero(t, emu.Sources())
}

func TestPlanPState(t *testing.T) {
	r := PlanPState(ReadPower(ivyBridge()), PStateNominal)
	assert.Equal(t, uint32(amd64.MSR_IA32_PERF_CTL), r.MSR)
	assert.Equal(t, uint64(0x2300), r.Value, "ratio 35 in [15:8] replaces the 45 macOS left")
	assert.Equal(t, uint64(0x2d00), r.Restore)
	assert.Equal(t, uint8(35), r.Ratio)

	r = PlanPState(ReadPower(skylakeClient()), PStateNominal)
	assert.Equal(t, uint32(amd64.MSR_IA32_HWP_REQUEST), r.MSR, "HWP enabled: PERF_CTL is ignored")
	assert.Equal(t, uint64(0xc01d1d1d), r.Value, "min = max = desired = 29, EPP 0xc0 kept")
	assert.Equal(t, uint64(0xc0000404), r.Restore)
	assert.Equal(t, uint8(29), r.Ratio)

	r = PlanPState(ReadPower(skylakeServer()), PStateNominal)
	assert.Equal(t, uint32(amd64.MSR_IA32_HWP_REQUEST), r.MSR)
	assert.Equal(t, uint64(0x00151515), r.Value, "min = max = desired = 21: the leftover desired 10 replaced")
	assert.Equal(t, uint64(0x000a2525), r.Restore)

	hwpOff := skylakeServer()
	hwpOff.MSRs[amd64.MSR_IA32_PM_ENABLE] = 0
	r = PlanPState(ReadPower(hwpOff), PStateNominal)
	assert.Equal(t, uint32(amd64.MSR_IA32_PERF_CTL), r.MSR, "HWP present but not enabled")
	assert.Equal(t, uint64(0x1500), r.Value)

	r = PlanPState(ReadPower(ivyBridge()), PStateLeave)
	assert.Zero(t, r.MSR)
	assert.Contains(t, r.Why, "leave")

	noEIST := ivyBridge()
	noEIST.MSRs[amd64.MSR_IA32_MISC_ENABLE] &^= amd64.MISC_ENABLE_EIST
	r = PlanPState(ReadPower(noEIST), PStateNominal)
	assert.Zero(t, r.MSR)
	assert.Contains(t, r.Why, "EIST is disabled")

	r = PlanPState(ReadPower(emulated()), PStateNominal)
	assert.Zero(t, r.MSR)
	assert.Contains(t, r.Why, "unsupported")

	// A firmware that requested through the package MSR: the core's own
	// request is made to count.
	pkg := skylakeClient()
	pkg.MSRs[amd64.MSR_IA32_HWP_REQUEST] |= 1 << 42
	r = PlanPState(ReadPower(pkg), PStateNominal)
	assert.Equal(t, uint64(0xc01d1d1d), r.Value, "Package_Control cleared")
	assert.Equal(t, uint64(0x400c0000404), r.Restore)

	// HWP's highest and lowest bound the request: the client's highest
	// lowered to its guaranteed 27, the server's lowest 7 raised above 21.
	low := skylakeClient()
	low.MSRs[amd64.MSR_IA32_HWP_CAPABILITIES] = 0x01081b1b
	r = PlanPState(ReadPower(low), PStateNominal)
	assert.Equal(t, uint8(27), r.Ratio)
	assert.Equal(t, uint64(0xc01b1b1b), r.Value)
	high := skylakeServer()
	high.MSRs[amd64.MSR_IA32_HWP_CAPABILITIES] = 0x180a1525 // lowest 24
	r = PlanPState(ReadPower(high), PStateNominal)
	assert.Equal(t, uint8(24), r.Ratio)
}

// TestNominalRatio: the ratio pstate = nominal asks for, decided as
// intel_pstate's core_get_max_pstate does. The skylakeClient's
// MSR_PLATFORM_INFO lists 2 configurable TDP levels; the MSRs of the
// levels are constructed as an i7-7500U's (nominal 27, level 1 8, level
// 2 29: its cTDP-down 0.8 GHz and cTDP-up 2.9 GHz), the turbo activation
// ratio too.
func TestNominalRatio(t *testing.T) {
	ctdp := func(control, tar uint64, hwp bool) *fakeCPU {
		c := skylakeClient()
		c.MSRs[amd64.MSR_CONFIG_TDP_NOMINAL] = 0x1b
		c.MSRs[amd64.MSR_CONFIG_TDP_LEVEL1] = 0x080000 | 0x4b // [23:16] ratio 8, [14:0] power
		c.MSRs[amd64.MSR_CONFIG_TDP_LEVEL2] = 0x1d0000 | 0x7d // [23:16] ratio 29
		c.MSRs[amd64.MSR_CONFIG_TDP_CONTROL] = control
		c.MSRs[amd64.MSR_TURBO_ACTIVATION_RATIO] = tar
		if !hwp {
			c.MSRs[amd64.MSR_IA32_PM_ENABLE] = 0
		}
		return c
	}
	for _, tt := range []struct {
		name  string
		c     *fakeCPU
		ratio uint8
		from  string
	}{
		{"no configurable TDP", ivyBridge(), 35, "maximum non-turbo"},
		{"HWP, nominal level", ctdp(0, 0, true), 27, "configurable TDP level 0, MSR_CONFIG_TDP_NOMINAL ratio 27, HWP enabled"},
		{"HWP, level 1", ctdp(1, 0, true), 8, "configurable TDP level 1, MSR_CONFIG_TDP_LEVEL1 ratio 8, HWP enabled"},
		{"HWP, level 2", ctdp(2|1<<31, 0, true), 29, "configurable TDP level 2, MSR_CONFIG_TDP_LEVEL2 ratio 29, HWP enabled"},
		{"no HWP, turbo activation one below", ctdp(0, 26, false), 26, "configurable TDP level 0, MSR_CONFIG_TDP_NOMINAL ratio 27, MSR_TURBO_ACTIVATION_RATIO 26"},
		{"no HWP, turbo activation not set", ctdp(0, 0, false), 29,
			"maximum non-turbo; configurable TDP level 0, MSR_CONFIG_TDP_NOMINAL ratio 27, MSR_TURBO_ACTIVATION_RATIO 0 is not one below it"},
		{"level 3 is reserved", ctdp(3, 0, true), 29, "maximum non-turbo; MSR_CONFIG_TDP_CONTROL selects level 3 (reserved)"},
		{"no MSR_CONFIG_TDP_CONTROL", skylakeClient(), 29, "maximum non-turbo; MSR_CONFIG_TDP_CONTROL unreadable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ratio, from := ReadPower(tt.c).NominalRatio()
			assert.Equal(t, tt.ratio, ratio)
			assert.Equal(t, tt.from, from)
		})
	}
	noTAR := ctdp(0, 0, false)
	delete(noTAR.MSRs, amd64.MSR_TURBO_ACTIVATION_RATIO)
	ratio, from := ReadPower(noTAR).NominalRatio()
	assert.Equal(t, uint8(29), ratio)
	assert.Equal(t, "maximum non-turbo; configurable TDP level 0, MSR_CONFIG_TDP_NOMINAL ratio 27, MSR_TURBO_ACTIVATION_RATIO unreadable", from)
	zero := ctdp(1, 0, true)
	zero.MSRs[amd64.MSR_CONFIG_TDP_LEVEL1] = 0x4b
	ratio, from = ReadPower(zero).NominalRatio()
	assert.Equal(t, uint8(29), ratio)
	assert.Equal(t, "maximum non-turbo; MSR_CONFIG_TDP_LEVEL1 lists ratio 0", from)

	// The request follows: HWP at the level's ratio, PERF_CTL at the
	// turbo activation ratio.
	r := PlanPState(ReadPower(ctdp(0, 0, true)), PStateNominal)
	assert.Equal(t, uint8(27), r.Ratio)
	assert.Equal(t, "IA32_HWP_REQUEST min = max = desired = 27 (configurable TDP level 0, MSR_CONFIG_TDP_NOMINAL ratio 27, HWP enabled)", r.Why)
	r = PlanPState(ReadPower(ctdp(0, 26, false)), PStateNominal)
	assert.Equal(t, uint32(amd64.MSR_IA32_PERF_CTL), r.MSR)
	assert.Equal(t, uint64(0x1a00), r.Value)
	// No configurable TDP read where MSR_PLATFORM_INFO lists none.
	iv := ivyBridge()
	p := ReadPower(iv)
	assert.False(t, p.ConfigTDPControl.OK || p.ConfigTDPLevel.OK || p.TurboActivation.OK)
}

// TestApplyRestore: Apply saves the request's MSR in the registry before
// it writes it, and the registry's restore gives the firmware's value
// back; nothing to write saves nothing.
func TestApplyRestore(t *testing.T) {
	cpu := skylakeClient()
	r := PlanPState(ReadPower(cpu), PStateNominal)
	var saved SavedMSRs
	require.True(t, r.Apply(cpu, &saved))
	assert.Equal(t, uint64(0xc01d1d1d), cpu.MSRs[amd64.MSR_IA32_HWP_REQUEST])
	require.Len(t, saved.Entries(), 1)
	assert.Equal(t, "IA32_HWP_REQUEST", saved.Entries()[0].Name)
	got := saved.Restore(cpu)
	require.Len(t, got, 1)
	assert.True(t, got[0].Restored)
	assert.Equal(t, uint64(0xc0000404), cpu.MSRs[amd64.MSR_IA32_HWP_REQUEST])
	assert.Equal(t, []uint32{amd64.MSR_IA32_HWP_REQUEST, amd64.MSR_IA32_HWP_REQUEST}, cpu.Written())

	emu := emulated()
	r = PlanPState(ReadPower(emu), PStateNominal)
	assert.True(t, r.Apply(emu, &saved), "nothing to write")
	assert.Empty(t, saved.Entries())
	assert.Empty(t, emu.Written())
}

func TestClockArithmetic(t *testing.T) {
	// The i7-3770K's APERF and MPERF as read (ivyBridge), taken as one
	// interval from zero, at its 3.5 GHz TSC (ratio 35 * 100 MHz):
	// 3500 MHz * 176739486592 / 151618390521 = 4079.90218697 MHz, the
	// average clock of an overclocked part that ran up to ratio 45.
	d := Delta(Sample{}, Sample{APERF: ivbAPERF, MPERF: ivbMPERF})
	assert.Equal(t, Sample{APERF: 176739486592, MPERF: 151618390521}, d)
	assert.InDelta(t, 4079.90218697, MHz(3_500_000_000, d), 1e-8)
	r, ok := Ratio(d)
	require.True(t, ok)
	assert.InDelta(t, 1.16568633914, r, 1e-11)
	// The performance counters' deltas are modulo 2^64, for their reader
	// to mask to the counters' widths: a 48-bit counter that wrapped.
	pmc := Delta(Sample{PMC: [SamplePMCs]uint64{1<<48 - 10, 5}}, Sample{PMC: [SamplePMCs]uint64{20, 9}})
	assert.Equal(t, uint64(30), pmc.PMC[0]&(1<<48-1))
	assert.Equal(t, uint64(4), pmc.PMC[1])

	// The same part at its maximum-efficiency ratio 16 (PLATFORM_INFO
	// [47:40]) over 1 ms, from its counters as read; one SMI counted
	// (the SMI values are constructed: no dump shows MSR_SMI_COUNT).
	a := Sample{APERF: ivbAPERF, MPERF: ivbMPERF, SMI: 0x2a}
	b := Sample{APERF: ivbAPERF + 1_600_000, MPERF: ivbMPERF + 3_500_000, SMI: 0x2b}
	d = Delta(a, b)
	assert.Equal(t, Sample{APERF: 1_600_000, MPERF: 3_500_000, SMI: 1}, d)
	assert.InDelta(t, 1600, MHz(3_500_000_000, d), 1e-9)
	// MSR_SMI_COUNT wraps at 32 bits.
	assert.Equal(t, uint64(2), Delta(Sample{SMI: 0xffffffff}, Sample{SMI: 1}).SMI)
	// The NMI count is a plain monotonic count: its delta is the NMIs
	// between the samples, and marks the interval disturbed.
	d = Delta(Sample{NMI: 40}, Sample{NMI: 43})
	assert.Equal(t, Sample{NMI: 3}, d)
	assert.True(t, d.Disturbed())
	_, ok = Ratio(Sample{})
	assert.False(t, ok, "MPERF did not move")
	assert.Zero(t, MHz(3_500_000_000, Sample{}))
}

// TestWaitSettled: the i7-3770K's clock ramps from its maximum-efficiency
// ratio 16 to its nominal 35 over 5 ms after the request; WaitSettled
// waits for it and reports the nominal clock.
func TestWaitSettled(t *testing.T) {
	const hz = 3_500_000_000
	cpu := ivyBridge()
	cpu.TSCStep = hz / 100_000 // 10 µs per read
	ramp := uint64(hz / 200)   // 5 ms
	cpu.Clock = func(tsc uint64) (uint64, uint64) {
		// APERF integrates a ratio going from 16/35 to 1 over the ramp.
		if tsc < ramp {
			x := float64(tsc) / float64(ramp)
			return uint64(float64(tsc) * (16.0/35 + (1-16.0/35)*x/2)), tsc
		}
		atRamp := float64(ramp) * (16.0/35 + (1-16.0/35)/2)
		return uint64(atRamp) + tsc - ramp, tsc
	}
	s := WaitSettled(cpu, hz, 1, 500)
	assert.True(t, s.Settled)
	assert.Greater(t, s.Ms, 5.0)
	assert.Less(t, s.Ms, 10.0)
	assert.InDelta(t, 3500, s.MHz, 3500*SettleTolerance)

	// A clock that never settles: bounded by the TSC.
	cpu = ivyBridge()
	cpu.TSCStep = hz / 100_000
	cpu.Clock = func(tsc uint64) (uint64, uint64) {
		ms := tsc / (hz / 1000)
		return tsc/2 + (ms%2)*(hz/1000)/3*ms, tsc
	}
	s = WaitSettled(cpu, hz, 1, 50)
	assert.False(t, s.Settled)
	assert.LessOrEqual(t, float64(cpu.TSCNow), float64(hz)*0.051, "gave up at the bound")
}

// TestMPERFRate: on a Skylake client whose TSC is the 24 MHz crystal
// times 242/2 (2904 MHz, CPUID.15H of skylakeClient) while MPERF counts
// the 2900 MHz base clock, dMPERF/dTSC is 2900/2904, measured over a busy
// interval and over the settle wait alike; MPERFScale then scales by it.
// Where MPERF ticks with the TSC (the i7-3770K, the emulators) the rate
// is 1 within the reads' skew, and nothing is scaled.
func TestMPERFRate(t *testing.T) {
	const hz = 2_904_000_000
	const want = 2900.0 / 2904
	cpu := skylakeClient()
	cpu.TSCStep = hz / 100_000 // 10 µs per read
	cpu.Clock = func(tsc uint64) (uint64, uint64) {
		m := uint64(float64(tsc) * want)
		return m * 27 / 29, m // the core at 27 of the base clock's 29
	}
	r := MPERFRate(cpu, hz, 10)
	assert.InDelta(t, want, r, 1e-6)
	scale, why := MPERFScale(r)
	assert.InDelta(t, want, scale, 1e-6)
	assert.Equal(t, "MPERF ticks at 0.998623 of the TSC's rate: every core clock and core cycle count is scaled by it", why)

	s := WaitSettled(cpu, hz, 2, 500)
	assert.True(t, s.Settled)
	assert.InDelta(t, want, s.MPERFPerTSC, 1e-6, "over the settle wait")
	assert.InDelta(t, 2904*27.0/29, s.MHz, 0.01, "TSC Hz * dAPERF/dMPERF, not scaled")
	assert.InDelta(t, 2700, s.MHz*scale, 0.01, "the core clock once scaled")

	iv := ivyBridge()
	iv.TSCStep = 35_000
	iv.Clock = func(tsc uint64) (uint64, uint64) { return tsc, tsc - tsc/35_000%2*3500 } // 1 µs of skew, at times
	r = MPERFRate(iv, 3_500_000_000, 10)
	scale, why = MPERFScale(r)
	assert.Equal(t, 1.0, scale)
	assert.InDelta(t, 1, r, MPERFRateTolerance)
	assert.Contains(t, why, "MPERF ticks at the TSC's rate (dMPERF/dTSC ")

	for _, tt := range []struct {
		r    float64
		want float64
		why  string
	}{
		{0, 1, "MPERF did not advance over a busy interval: the core clock assumes it ticks at the TSC's rate"},
		{1.0004, 1, "MPERF ticks at the TSC's rate (dMPERF/dTSC 1.000400)"},
		{0.9994, 0.9994, "MPERF ticks at 0.999400 of the TSC's rate: every core clock and core cycle count is scaled by it"},
		{0.3, 1, "dMPERF/dTSC 0.300000 is implausible: the core clock assumes MPERF ticks at the TSC's rate"},
		{2.5, 1, "dMPERF/dTSC 2.500000 is implausible: the core clock assumes MPERF ticks at the TSC's rate"},
	} {
		scale, why := MPERFScale(tt.r)
		assert.Equal(t, tt.want, scale, "%v", tt.r)
		assert.Equal(t, tt.why, why)
	}
	stuck := ivyBridge()
	stuck.TSCStep = 35_000
	assert.Zero(t, MPERFRate(stuck, 3_500_000_000, 1), "MPERF that does not move")
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
	assert.Equal(t, 35, s.MaxNonTurboRatio)
	assert.Equal(t, 45, s.CurrentRatio)
	assert.Equal(t, Unsupported, s.MSRs["IA32_SPEC_CTRL"], "CPUID.07H:EDX[26] clear on this microcode")
	assert.Equal(t, Unsupported, s.MSRs["IA32_ARCH_CAPABILITIES"], "CPUID.07H:EDX[29] clear")
	assert.Equal(t, Unsupported, s.MSRs["IA32_HWP_REQUEST"])
	assert.Equal(t, "0x850089", s.MSRs["IA32_MISC_ENABLE"])
	assert.Equal(t, "0x81010f0012300", s.MSRs["MSR_PLATFORM_INFO"])
	assert.Equal(t, "0xc00", s.MSRs["IA32_MTRR_DEF_TYPE"])
	require.NotNil(t, s.FastStrings)
	assert.True(t, *s.FastStrings)
	assert.True(t, s.ERMSB, "07H:EBX 0x281 [9]")
	assert.Nil(t, s.CPUID15H, "max leaf 0DH")
	assert.Equal(t, 2, s.ThreadsPerCore)
	assert.Equal(t, "0bh", s.TopologyLeaf)
	assert.True(t, s.SMT)
	assert.Equal(t, SMTFromCPUID, s.SMTSource, "no MSR_CORE_THREAD_COUNT in the fake: CPUID")
	assert.Equal(t, Unsupported, s.MSRs["MSR_CORE_THREAD_COUNT"])
	assert.Zero(t, s.ThreadCount)
	assert.Equal(t, uint32(0xd), s.MaxLeaf)
	assert.Nil(t, s.CPUIDLimit, "SetCPUIDLimit's")

	cpu = skylakeClient()
	s = State(cpu, entry, ReadPower(cpu))
	assert.Equal(t, []uint32{0x2, 0xf2, 0, 0}, s.CPUID15H)
	assert.Equal(t, []uint32{2900, 3500, 100, 0}, s.CPUID16H)
	assert.True(t, s.HWPEnabled)
	assert.Equal(t, "0xc0000404", s.MSRs["IA32_HWP_REQUEST"])
	assert.Equal(t, "0x1081b23", s.MSRs["IA32_HWP_CAPABILITIES"])
	assert.Equal(t, "0x0", s.MSRs["IA32_SPEC_CTRL"])
	assert.Equal(t, Unsupported, s.MSRs["IA32_ARCH_CAPABILITIES"], "enumerated, but in no dump: the fake raises #GP")
	assert.True(t, s.SMT)

	cpu = skylakeServer()
	s = State(cpu, entry, ReadPower(cpu))
	assert.Equal(t, Unsupported, s.MSRs["IA32_ARCH_CAPABILITIES"], "CPUID.07H:EDX[29] clear on the 7900X's microcode")
	assert.Equal(t, "0xa2525", s.MSRs["IA32_HWP_REQUEST"])
	require.NotNil(t, s.TurboDisabled)
	assert.False(t, *s.TurboDisabled)
	assert.True(t, s.SMT)
	assert.False(t, s.FRED || s.LASS, "leaf 7 has no subleaf 1 on these CPUs")

	// A 2025 CPU: CPUID.(07H,0):EAX = 1 says subleaf 1 exists; its EAX
	// has FRED (bit 17) and LASS (bit 6). Read only where EAX says so.
	cpu = skylakeServer()
	l7 := cpu.Leaves[[2]uint32{7, 0}]
	l7[0] = 1
	cpu.Leaves[[2]uint32{7, 0}] = l7
	cpu.Leaves[[2]uint32{7, 1}] = [4]uint32{1<<17 | 1<<6, 0, 0, 0}
	s = State(cpu, entry, ReadPower(cpu))
	assert.True(t, s.FRED)
	assert.True(t, s.LASS)
	v := Vulns(cpu)
	assert.True(t, v.FRED && v.LASS, "the vulnerabilities record says so too")
	assert.Contains(t, VulnLines(v)[0], "| FRED yes, LASS yes (not in Linux "+LinuxLogic+"'s table)")
	l7[0] = 0
	cpu.Leaves[[2]uint32{7, 0}] = l7
	s = State(cpu, entry, ReadPower(cpu))
	assert.False(t, s.FRED, "subleaf 1 not enumerated: not read")

	cpu = emulated()
	s = State(cpu, efi.EntryState{}, ReadPower(cpu))
	assert.Equal(t, Unsupported, s.CoreClock)
	assert.Equal(t, Unsupported, s.SMICount)
	assert.Nil(t, s.EIST)
	assert.Equal(t, Unsupported, s.MSRs["MSR_PLATFORM_INFO"])
	assert.Equal(t, "0x7040600070406", s.MSRs["IA32_PAT"])
	assert.Equal(t, "none", s.TopologyLeaf)
	assert.Equal(t, SMTUnknown, s.SMTSource)
	assert.False(t, s.SMT)
}

func TestSetCPUIDLimit(t *testing.T) {
	var s contract.CPUState
	SetCPUIDLimit(&s, amd64.CPUIDLimit{Read: true, Set: true, Cleared: true, MaxLeafAtEntry: 2, MaxLeaf: 0xd})
	require.NotNil(t, s.CPUIDLimit)
	assert.True(t, *s.CPUIDLimit)
	assert.True(t, s.CPUIDLimitCleared)
	assert.Equal(t, uint32(2), s.MaxLeafAtEntry)

	SetCPUIDLimit(&s, amd64.CPUIDLimit{Read: true, MaxLeafAtEntry: 0xd, MaxLeaf: 0xd})
	require.NotNil(t, s.CPUIDLimit)
	assert.False(t, *s.CPUIDLimit)
	assert.False(t, s.CPUIDLimitCleared)

	// Not read (AMD, or the read raised #GP): absent, not false.
	SetCPUIDLimit(&s, amd64.CPUIDLimit{MaxLeafAtEntry: 0xd, MaxLeaf: 0xd})
	assert.Nil(t, s.CPUIDLimit)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"cpuid_limit":`)
	assert.Contains(t, string(b), `"cpuid_limit_cleared":false`)
}

func TestDecideSMT(t *testing.T) {
	for _, c := range []struct {
		name           string
		threads, cores int
		msrOK          bool
		perCore        int
		leaf           string
		want           SMT
	}{
		{"HT on", 8, 4, true, 2, "0bh", SMT{On: true, Source: SMTFromMSR, Threads: 8, Cores: 4, ThreadsPerCore: 2, Leaf: "0bh"}},
		{"HT off in the firmware", 4, 4, true, 2, "0bh", SMT{Source: SMTFromMSR, Threads: 4, Cores: 4, ThreadsPerCore: 2, Leaf: "0bh"}},
		{"no SMT, one core (QEMU -smp 1)", 1, 1, true, 1, "0bh", SMT{Source: SMTFromMSR, Threads: 1, Cores: 1, ThreadsPerCore: 1, Leaf: "0bh"}},
		{"no MSR", 0, 0, false, 2, "0bh", SMT{On: true, Source: SMTFromCPUID, ThreadsPerCore: 2, Leaf: "0bh"}},
		{"no MSR, no siblings", 0, 0, false, 1, "1fh", SMT{Source: SMTFromCPUID, ThreadsPerCore: 1, Leaf: "1fh"}},
		{"MSR reads 0", 0, 0, true, 2, "0bh", SMT{On: true, Source: SMTFromCPUID, ThreadsPerCore: 2, Leaf: "0bh"}},
		{"fewer threads than cores", 2, 4, true, 2, "0bh", SMT{On: true, Source: SMTFromCPUID, ThreadsPerCore: 2, Leaf: "0bh"}},
		{"neither", 0, 0, false, 0, "none", SMT{Source: SMTUnknown, Leaf: "none"}},
	} {
		assert.Equal(t, c.want, DecideSMT(c.threads, c.cores, c.msrOK, c.perCore, c.leaf), c.name)
	}
}

// TestReadSMT: MSR_CORE_THREAD_COUNT decides where it reads. The
// i7-3770K's values (4 cores, 8 threads with Hyper-Threading, 4 without)
// are constructed from the MSR's layout: no dump of it shows 35H.
func TestReadSMT(t *testing.T) {
	cpu := ivyBridge()
	cpu.MSRs[amd64.MSR_CORE_THREAD_COUNT] = 0x40008
	s := ReadSMT(cpu)
	assert.Equal(t, SMT{On: true, Source: SMTFromMSR, Threads: 8, Cores: 4, ThreadsPerCore: 2, Leaf: "0bh", MSR: MSR{0x40008, true}}, s)

	// Hyper-Threading off in the firmware: CPUID.0BH still says 2 per
	// core; the cpu-state record and the vulnerability table say no.
	cpu.MSRs[amd64.MSR_CORE_THREAD_COUNT] = 0x40004
	s = ReadSMT(cpu)
	assert.False(t, s.On)
	assert.Equal(t, SMTFromMSR, s.Source)
	st := State(cpu, efi.EntryState{}, ReadPower(cpu))
	assert.False(t, st.SMT)
	assert.Equal(t, SMTFromMSR, st.SMTSource)
	assert.Equal(t, 4, st.ThreadCount)
	assert.Equal(t, 4, st.CoreCount)
	assert.Equal(t, 2, st.ThreadsPerCore, "as shipped")
	assert.Equal(t, "0x40004", st.MSRs["MSR_CORE_THREAD_COUNT"])
	v := Vulns(cpu)
	assert.False(t, v.SMT)
	assert.Equal(t, SMTFromMSR, v.SMTSource)
	assert.Equal(t, "Vulnerable: Clear CPU buffers attempted, no microcode; SMT disabled", v.Table["mds"])
	assert.Contains(t, VulnLines(v)[0], "| SMT siblings no (MSR_CORE_THREAD_COUNT)")
	cpu.MSRs[amd64.MSR_CORE_THREAD_COUNT] = 0x40008
	assert.Equal(t, "Vulnerable: Clear CPU buffers attempted, no microcode; SMT vulnerable", Vulns(cpu).Table["mds"])

	// Westmere's core count is [19:16]; the bits above are reserved.
	wsm := ivyBridge()
	wsm.Leaves[[2]uint32{1, 0}] = [4]uint32{0x206c2, 0, 0, 0} // 06_2CH
	wsm.MSRs[amd64.MSR_CORE_THREAD_COUNT] = 0xabc6000c
	s = ReadSMT(wsm)
	assert.Equal(t, 12, s.Threads)
	assert.Equal(t, 6, s.Cores)
	assert.True(t, s.On)

	// Before Nehalem (Core 2, 06_17H) the MSR is not read, even where
	// the fake would answer; nor on AMD.
	core2 := ivyBridge()
	core2.Leaves[[2]uint32{1, 0}] = [4]uint32{0x10676, 0, 0, 0}
	core2.MSRs[amd64.MSR_CORE_THREAD_COUNT] = 0x40004
	assert.Equal(t, SMTFromCPUID, ReadSMT(core2).Source)
	amd := ivyBridge()
	amd.Leaves[[2]uint32{0, 0}] = [4]uint32{0xd, 0x68747541, 0x444d4163, 0x69746e65} // AuthenticAMD
	amd.MSRs[amd64.MSR_CORE_THREAD_COUNT] = 0x40004
	assert.Equal(t, SMTFromCPUID, ReadSMT(amd).Source)

	// Without the MSR (an emulator, a #GP): CPUID, as before.
	assert.Equal(t, SMT{On: true, Source: SMTFromCPUID, ThreadsPerCore: 2, Leaf: "0bh"}, ReadSMT(ivyBridge()))
	// An MSR that reads 0 (an emulator that ignores unknown MSRs):
	// CPUID, the value kept for the record.
	zero := ivyBridge()
	zero.MSRs[amd64.MSR_CORE_THREAD_COUNT] = 0
	assert.Equal(t, SMT{On: true, Source: SMTFromCPUID, ThreadsPerCore: 2, Leaf: "0bh", MSR: MSR{0, true}}, ReadSMT(zero))
}

// TestSaveCPUIDLimit: IA32_MISC_ENABLE is saved with the value boot read
// before it cleared the limit, and only where it cleared it; Restore
// writes that value back.
func TestSaveCPUIDLimit(t *testing.T) {
	const fw = 0x850089 | amd64.MISC_ENABLE_LIMIT_CPUID
	var s SavedMSRs
	assert.False(t, s.SaveCPUIDLimit(amd64.CPUIDLimit{Read: true, MiscEnable: fw &^ amd64.MISC_ENABLE_LIMIT_CPUID}), "nothing cleared")
	assert.False(t, s.SaveCPUIDLimit(amd64.CPUIDLimit{Read: true, Set: true, MiscEnable: fw}), "the write did not take")
	assert.Empty(t, s.Entries())
	require.True(t, s.SaveCPUIDLimit(amd64.CPUIDLimit{Read: true, Set: true, Cleared: true, MiscEnable: fw}))
	v, ok := s.Value(amd64.MSR_IA32_MISC_ENABLE)
	require.True(t, ok)
	assert.Equal(t, uint64(fw), v)
	c := &cpustatetest.CPU{MSRs: map[uint32]uint64{amd64.MSR_IA32_MISC_ENABLE: fw &^ amd64.MISC_ENABLE_LIMIT_CPUID}}
	got := s.Restore(c)
	require.Len(t, got, 1)
	assert.Equal(t, "IA32_MISC_ENABLE", got[0].Name)
	assert.True(t, got[0].Restored)
	assert.Equal(t, uint64(fw), got[0].ReadBack, "the limit is back")
}
