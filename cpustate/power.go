package cpustate

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
)

// Power is the core-clock state: which counters and controls the CPU
// has, and the MSRs that say how the firmware left the clock.
type Power struct {
	Intel      bool
	Family     uint32 // display family
	APERF      bool   // CPUID.06H:ECX[0] and both counters readable
	HWP        bool   // CPUID.06H:EAX[7]
	HWPEnabled bool   // IA32_PM_ENABLE[0]
	Turbo      bool   // CPUID.06H:EAX[1], or IA32_MISC_ENABLE[38] (turbo disabled), which clears that bit

	PlatformInfo MSR // MSR_PLATFORM_INFO (CEH)
	PerfStatus   MSR // IA32_PERF_STATUS (198H)
	PerfCtl      MSR // IA32_PERF_CTL (199H)
	MiscEnable   MSR // IA32_MISC_ENABLE (1A0H)
	PMEnable     MSR // IA32_PM_ENABLE (770H), with HWP
	HWPCaps      MSR // IA32_HWP_CAPABILITIES (771H), with HWP
	HWPRequest   MSR // IA32_HWP_REQUEST (774H), with HWP
	SMICount     MSR // MSR_SMI_COUNT (34H), Intel family 6

	// Configurable TDP (Intel family 6, where MSR_PLATFORM_INFO[34:33]
	// lists levels): MSR_CONFIG_TDP_CONTROL (64BH), the MSR of the level
	// it selects (MSR_CONFIG_TDP_NOMINAL 648H + level), and
	// MSR_TURBO_ACTIVATION_RATIO (64CH).
	ConfigTDPControl MSR
	ConfigTDPLevel   MSR
	TurboActivation  MSR
}

// ReadPower reads the core-clock state of c. The model-specific MSRs
// (PLATFORM_INFO, SMI_COUNT) are tried only on Intel family 6, where the
// SDM lists them (Nehalem and later), and each read is #GP-safe. Turbo
// is present where CPUID says so or where the firmware disabled it
// (IA32_MISC_ENABLE[38] set, which clears CPUID.06H:EAX[1]: SDM Vol. 4,
// Table 2-2).
func ReadPower(c CPU) Power {
	max, intel := maxLeaf(c)
	var p Power
	p.Intel = intel
	p.Family, _, _ = signature(c, max)
	a6, _, c6, _ := leaf(c, max, 6)
	p.HWP = a6&amd64.CPUID06_EAX_HWP != 0
	if c6&amd64.CPUID06_ECX_APERFMPERF != 0 {
		_, okA := c.ReadMSR(amd64.MSR_IA32_APERF)
		_, okM := c.ReadMSR(amd64.MSR_IA32_MPERF)
		p.APERF = okA && okM
	}
	if intel && p.Family == 6 {
		p.PlatformInfo = read(c, amd64.MSR_PLATFORM_INFO)
		p.SMICount = read(c, amd64.MSR_SMI_COUNT)
		if p.ConfigTDPLevels() > 0 {
			p.ConfigTDPControl = read(c, amd64.MSR_CONFIG_TDP_CONTROL)
			if p.ConfigTDPControl.OK && p.ConfigTDPControl.Value&3 != 3 {
				p.ConfigTDPLevel = read(c, amd64.MSR_CONFIG_TDP_NOMINAL+uint32(p.ConfigTDPControl.Value&3))
			}
			p.TurboActivation = read(c, amd64.MSR_TURBO_ACTIVATION_RATIO)
		}
	}
	if intel {
		p.PerfStatus = read(c, amd64.MSR_IA32_PERF_STATUS)
		p.PerfCtl = read(c, amd64.MSR_IA32_PERF_CTL)
		p.MiscEnable = read(c, amd64.MSR_IA32_MISC_ENABLE)
	}
	off, _ := p.TurboDisabled()
	p.Turbo = a6&amd64.CPUID06_EAX_TURBO != 0 || off
	if p.HWP {
		p.PMEnable = read(c, amd64.MSR_IA32_PM_ENABLE)
		p.HWPEnabled = p.PMEnable.OK && p.PMEnable.Value&amd64.PM_ENABLE_HWP != 0
		p.HWPCaps = read(c, amd64.MSR_IA32_HWP_CAPABILITIES)
		p.HWPRequest = read(c, amd64.MSR_IA32_HWP_REQUEST)
	}
	return p
}

// Sources are the counters a repeat's Sample can hold on this CPU.
func (p Power) Sources() SampleSources {
	var s SampleSources
	if p.APERF {
		s |= SampleAPERF
	}
	if p.SMICount.OK {
		s |= SampleSMI
	}
	return s
}

// MaxNonTurbo is MSR_PLATFORM_INFO[15:8], the maximum non-turbo ratio
// (units of the 100 MHz bus clock on Sandy Bridge and later), 0 when
// unreadable.
func (p Power) MaxNonTurbo() uint8 {
	if !p.PlatformInfo.OK {
		return 0
	}
	return uint8(p.PlatformInfo.Value >> 8)
}

// ConfigTDPLevels is MSR_PLATFORM_INFO[34:33], the number of
// configurable TDP levels besides the nominal one (0 when unreadable).
func (p Power) ConfigTDPLevels() int {
	if !p.PlatformInfo.OK {
		return 0
	}
	return int(p.PlatformInfo.Value>>33) & 3
}

// NominalRatio is the ratio pstate = nominal asks for, and where it comes
// from, as Linux's intel_pstate decides the highest non-turbo P-state
// (drivers/cpufreq/intel_pstate.c, core_get_max_pstate and
// core_get_tdp_ratio): MSR_PLATFORM_INFO[15:8], unless configurable TDP
// is there (MSR_PLATFORM_INFO[34:33] nonzero) and the level in use
// (MSR_CONFIG_TDP_CONTROL[1:0]: 0 nominal, 1, 2) has a ratio (the
// level's MSR, [7:0] for the nominal level, [23:16] for levels 1 and 2);
// then, with HWP enabled, that ratio; without, the turbo activation
// ratio (MSR_TURBO_ACTIVATION_RATIO[7:0]) where it is exactly one below
// the level's ratio (the firmware lowered the non-turbo range with it),
// else MSR_PLATFORM_INFO's still. An unreadable MSR, level 3 (reserved)
// or a ratio of 0 falls back to MSR_PLATFORM_INFO's, and the reason says
// so. 0 when MSR_PLATFORM_INFO is unreadable.
func (p Power) NominalRatio() (ratio uint8, from string) {
	max := p.MaxNonTurbo()
	const platform = "maximum non-turbo"
	if max == 0 || p.ConfigTDPLevels() == 0 {
		return max, platform
	}
	if !p.ConfigTDPControl.OK {
		return max, platform + "; MSR_CONFIG_TDP_CONTROL unreadable"
	}
	level := p.ConfigTDPControl.Value & 3
	if level == 3 {
		return max, platform + "; MSR_CONFIG_TDP_CONTROL selects level 3 (reserved)"
	}
	name := [3]string{"MSR_CONFIG_TDP_NOMINAL", "MSR_CONFIG_TDP_LEVEL1", "MSR_CONFIG_TDP_LEVEL2"}[level]
	if !p.ConfigTDPLevel.OK {
		return max, platform + "; " + name + " unreadable"
	}
	tdp := p.ConfigTDPLevel.Value
	if level != 0 {
		tdp >>= 16
	}
	tdp &= 0xff
	lvl := fmt.Sprintf("configurable TDP level %d, %s ratio %d", level, name, tdp)
	switch {
	case tdp == 0:
		return max, platform + "; " + name + " lists ratio 0"
	case p.HWPEnabled:
		return uint8(tdp), lvl + ", HWP enabled"
	case !p.TurboActivation.OK:
		return max, platform + "; " + lvl + ", MSR_TURBO_ACTIVATION_RATIO unreadable"
	case p.TurboActivation.Value&0xff == tdp-1:
		return uint8(tdp - 1), lvl + ", MSR_TURBO_ACTIVATION_RATIO " + fmt.Sprint(tdp-1)
	}
	return max, fmt.Sprintf("%s; %s, MSR_TURBO_ACTIVATION_RATIO %d is not one below it", platform, lvl, p.TurboActivation.Value&0xff)
}

// CurrentRatio is IA32_PERF_STATUS[15:8], 0 when unreadable.
func (p Power) CurrentRatio() uint8 {
	if !p.PerfStatus.OK {
		return 0
	}
	return uint8(p.PerfStatus.Value >> 8)
}

// EIST reports IA32_MISC_ENABLE[16] (Enhanced Intel SpeedStep enabled),
// and whether the MSR was read.
func (p Power) EIST() (on, known bool) {
	return p.MiscEnable.Value&amd64.MISC_ENABLE_EIST != 0, p.MiscEnable.OK
}

// TurboDisabled reports IA32_MISC_ENABLE[38], and whether the MSR was
// read.
func (p Power) TurboDisabled() (off, known bool) {
	return p.MiscEnable.Value&amd64.MISC_ENABLE_TURBO_DISABLE != 0, p.MiscEnable.OK
}

// PState values of the plan key pstate.
const (
	PStateNominal = "nominal" // request the maximum non-turbo ratio, the firmware's restored at the end (SavedMSRs)
	PStateLeave   = "leave"   // touch nothing
)

// Request is a P-state request: write Value to MSR, whose value before
// (the firmware's) is Restore, given back at the end through the registry
// of saved MSRs (Apply). MSR 0 means no write; Why says why, or what the
// request is.
type Request struct {
	MSR            uint32
	Value, Restore uint64
	Ratio          uint8 // the ratio requested
	Why            string
}

// IA32_HWP_REQUEST's minimum [7:0], maximum [15:8] and desired [23:16]
// performance, and its Package_Control bit [42], with which the CPU
// follows IA32_HWP_REQUEST_PKG instead (SDM Vol. 3B, 15.4.4).
const (
	hwpPerfFields     = 0xffffff
	hwpPackageControl = 1 << 42
)

// PlanPState decides the request of pstate mode for p. Nominal asks for
// the highest non-turbo ratio (NominalRatio: MSR_PLATFORM_INFO's, or the
// configurable TDP level's as intel_pstate takes it): with HWP enabled, IA32_HWP_REQUEST with
// minimum = maximum = desired = that ratio (clamped to the lowest and
// highest performance of IA32_HWP_CAPABILITIES; HWP's performance levels
// are ratios on these CPUs) and Package_Control cleared, so that this
// request is the one the core follows, other fields kept; otherwise IA32_PERF_CTL
// [15:8], other bits kept, which needs EIST enabled (with EIST off the
// firmware fixed the ratio and PERF_CTL is ignored).
func PlanPState(p Power, mode string) Request {
	if mode == PStateLeave {
		return Request{Why: "pstate = leave: the firmware's P-state is left as it is"}
	}
	ratio, from := p.NominalRatio()
	switch {
	case !p.Intel:
		return Request{Why: "unsupported: not an Intel CPU"}
	case ratio == 0:
		return Request{Why: "unsupported: MSR_PLATFORM_INFO (CEH) unreadable or its ratio 0"}
	case p.HWPEnabled:
		if !p.HWPRequest.OK {
			return Request{Why: "unsupported: HWP enabled but IA32_HWP_REQUEST (774H) unreadable"}
		}
		perf := uint64(ratio)
		if p.HWPCaps.OK {
			highest, lowest := p.HWPCaps.Value&0xff, (p.HWPCaps.Value>>24)&0xff
			perf = min(max(perf, lowest), highest)
		}
		v := p.HWPRequest.Value&^(hwpPerfFields|hwpPackageControl) | perf | perf<<8 | perf<<16
		return Request{MSR: amd64.MSR_IA32_HWP_REQUEST, Value: v, Restore: p.HWPRequest.Value, Ratio: uint8(perf),
			Why: fmt.Sprintf("IA32_HWP_REQUEST min = max = desired = %d (%s)", perf, from)}
	}
	if on, known := p.EIST(); known && !on {
		return Request{Why: "not needed: EIST is disabled (IA32_MISC_ENABLE[16] = 0), the firmware fixed the ratio"}
	}
	if !p.PerfCtl.OK {
		return Request{Why: "unsupported: IA32_PERF_CTL (199H) unreadable"}
	}
	v := p.PerfCtl.Value&^0xff00 | uint64(ratio)<<8
	return Request{MSR: amd64.MSR_IA32_PERF_CTL, Value: v, Restore: p.PerfCtl.Value, Ratio: ratio,
		Why: fmt.Sprintf("IA32_PERF_CTL ratio %d (%s)", ratio, from)}
}

// MSRName is the SDM name of the request's MSR ("" for none).
func (r Request) MSRName() string {
	switch r.MSR {
	case amd64.MSR_IA32_PERF_CTL:
		return "IA32_PERF_CTL"
	case amd64.MSR_IA32_HWP_REQUEST:
		return "IA32_HWP_REQUEST"
	}
	return ""
}

// Apply writes the request, if any, and reports whether the CPU took it.
// The MSR is saved in saved first (the registry every way out of the run
// restores: the firmware's request comes back however the run ends); an
// MSR that cannot be saved is not written.
func (r Request) Apply(c CPU, saved *SavedMSRs) bool {
	if r.MSR == 0 {
		return true
	}
	return saved.Save(c, r.MSR, r.MSRName()) && c.WriteMSR(r.MSR, r.Value)
}
