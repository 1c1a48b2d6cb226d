package cpustate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/efi"
)

// Prefetcher names the prefetchers of MSR_MISC_FEATURE_CONTROL [3:0], in
// bit order, as the cpu-state record's prefetchers keys and for the
// human line (Intel, "Disclosure of Hardware Prefetcher Control on Some
// Intel Processors": a set bit disables the prefetcher).
var Prefetchers = []struct {
	Key, Name string
	Disable   uint64
}{
	{"l2_hw", "L2 streamer", amd64.MISC_FEATURE_L2_HW_PREFETCH_DISABLE},
	{"l2_adjacent", "L2 adjacent line", amd64.MISC_FEATURE_L2_ADJ_PREFETCH_DISABLE},
	{"dcu", "DCU next line", amd64.MISC_FEATURE_DCU_PREFETCH_DISABLE},
	{"dcu_ip", "DCU IP stride", amd64.MISC_FEATURE_DCU_IP_PREFETCH_DISABLE},
}

// FirmwareSettings are the MSRs of the firmware's prefetcher and power
// settings (amd64/firmware.go) as read: OK false where the CPU does not
// have them or the read raised #GP.
type FirmwareSettings struct {
	MiscFeatureControl, EnergyPerfBias, PowerCtl MSR
}

// xeonPhi reports the Xeon Phi models (Knights Landing 06_57H, Knights
// Mill 06_85H), whose MSR_MISC_FEATURE_CONTROL has other bits (Intel's
// prefetcher disclosure): its bits are not read as the Core line's there.
func xeonPhi(model uint32) bool { return model == 0x57 || model == 0x85 }

// ReadFirmwareSettings reads, #GP-safe, MSR_MISC_FEATURE_CONTROL and
// MSR_POWER_CTL on an Intel CPU of family 6 from Nehalem (06_1AH) on,
// where they are documented (not on a Xeon Phi for the first), and
// IA32_ENERGY_PERF_BIAS where CPUID.06H:ECX[3] announces it.
func ReadFirmwareSettings(c CPU) FirmwareSettings {
	var f FirmwareSettings
	max, intel := maxLeaf(c)
	family, model, _ := signature(c, max)
	if intel && family == 6 && model >= 0x1a {
		if !xeonPhi(model) {
			f.MiscFeatureControl = read(c, amd64.MSR_MISC_FEATURE_CONTROL)
		}
		f.PowerCtl = read(c, amd64.MSR_POWER_CTL)
	}
	if _, _, c6, _ := leaf(c, max, 6); c6&amd64.CPUID06_ECX_EPB != 0 {
		f.EnergyPerfBias = read(c, amd64.MSR_IA32_ENERGY_PERF_BIAS)
	}
	return f
}

// SetFirmware puts into the cpu-state record s what the entry code and
// boot found and changed of the firmware's CPU state (e: the SSE bits of
// CR0 and CR4, the x87 control word and MXCSR at entry, CR4.PCIDE, which
// boot clears whenever the firmware set it, the firmware gate's transit
// code selector) and the firmware's
// prefetcher and power settings f, with their MSRs in s.MSRs (which State
// made).
func SetFirmware(s *contract.CPUState, e efi.EntryState, f FirmwareSettings) {
	s.CR0Fixed, s.CR4Fixed = "", ""
	if e.CR0Fixed != 0 {
		s.CR0Fixed = hex(e.CR0Fixed)
	}
	if e.CR4Fixed != 0 {
		s.CR4Fixed = hex(e.CR4Fixed)
	}
	s.FCW, s.MXCSR = hex(uint64(e.FCW)), hex(uint64(e.MXCSR))
	s.PCIDECleared = e.CR4&amd64.CR4_PCIDE != 0
	s.TransitCS, s.FirmwareGDTCopy = "", false
	if e.TransitPlaced {
		s.TransitCS, s.FirmwareGDTCopy = hex(uint64(e.Transit.Sel)), e.Transit.Copy
	}
	s.Prefetchers = nil
	if m := f.MiscFeatureControl; m.OK {
		s.Prefetchers = make(map[string]bool, len(Prefetchers))
		for _, p := range Prefetchers {
			s.Prefetchers[p.Key] = m.Value&p.Disable == 0
		}
	}
	s.EnergyPerfBias = nil
	if m := f.EnergyPerfBias; m.OK {
		v := int(m.Value & amd64.ENERGY_PERF_BIAS_MASK)
		s.EnergyPerfBias = &v
	}
	s.C1E = bit(f.PowerCtl, amd64.POWER_CTL_C1E)
	if s.MSRs == nil {
		s.MSRs = map[string]string{}
	}
	s.MSRs["MSR_MISC_FEATURE_CONTROL"] = msrText(f.MiscFeatureControl)
	s.MSRs["IA32_ENERGY_PERF_BIAS"] = msrText(f.EnergyPerfBias)
	s.MSRs["MSR_POWER_CTL"] = msrText(f.PowerCtl)
}

// FirmwareSSEText names the bits of CR0 and CR4 the entry code changed
// for SSE (the record's cr0_fixed and cr4_fixed, hex), or says that the
// firmware had SSE enabled as UEFI promises.
func FirmwareSSEText(cr0Fixed, cr4Fixed string) string {
	if cr0Fixed == "" && cr4Fixed == "" {
		return "SSE enabled by the firmware"
	}
	var changed []string
	for _, b := range []struct {
		reg, name string
		mask      uint64
		set       bool
	}{
		{cr0Fixed, "CR0.MP", amd64.CR0_MP, true},
		{cr0Fixed, "CR0.EM", amd64.CR0_EM, false},
		{cr0Fixed, "CR0.TS", amd64.CR0_TS, false},
		{cr4Fixed, "CR4.OSFXSR", amd64.CR4_OSFXSR, true},
		{cr4Fixed, "CR4.OSXMMEXCPT", amd64.CR4_OSXMMEXCPT, true},
	} {
		v, _ := strconv.ParseUint(strings.TrimPrefix(b.reg, "0x"), 16, 64)
		if v&b.mask == 0 {
			continue
		}
		if b.set {
			changed = append(changed, "set "+b.name)
		} else {
			changed = append(changed, "cleared "+b.name)
		}
	}
	return "SSE off at entry (contrary to UEFI 2.10, 2.3.4): ptilab " + strings.Join(changed, ", ")
}

// energyPerfBiasNames are Linux's names of IA32_ENERGY_PERF_BIAS values
// (arch/x86/kernel/cpu/intel_epb.c).
var energyPerfBiasNames = map[int]string{
	0: "performance", 4: "balance-performance", 6: "normal", 7: "normal-powersave", 8: "balance-power", 15: "power",
}

// FirmwareLine is the cpu-state record's human line of the firmware's
// state that can block or skew a run: SSE at entry, the x87 control word
// and MXCSR, CR4.PCIDE, the firmware gate's GDT copy (or its lack of a
// transit selector), the prefetchers, the energy-performance bias and
// C1E.
func FirmwareLine(s contract.CPUState) string {
	parts := []string{FirmwareSSEText(s.CR0Fixed, s.CR4Fixed) + "; x87 control word " + s.FCW + ", MXCSR " + s.MXCSR + " at entry"}
	if s.PCIDECleared {
		parts = append(parts, "CR4.PCIDE set at entry: cleared by ptilab")
	}
	switch {
	case s.TransitCS == "":
		parts = append(parts, "no code selector valid in both GDTs: an NMI in the firmware gate's switches is not survivable")
	case s.FirmwareGDTCopy:
		parts = append(parts, "firmware calls on a copy of its GDT, through code selector "+s.TransitCS)
	}
	pf := "prefetchers unknown (MSR_MISC_FEATURE_CONTROL not read)"
	if s.Prefetchers != nil {
		var ps []string
		for _, p := range Prefetchers {
			ps = append(ps, p.Name+" "+map[bool]string{true: "on", false: "off"}[s.Prefetchers[p.Key]])
		}
		pf = "prefetchers " + strings.Join(ps, ", ")
	}
	parts = append(parts, pf)
	epb := "energy-performance bias unknown"
	if s.EnergyPerfBias != nil {
		epb = fmt.Sprintf("energy-performance bias %d", *s.EnergyPerfBias)
		if n, ok := energyPerfBiasNames[*s.EnergyPerfBias]; ok {
			epb += " (" + n + ")"
		}
	}
	parts = append(parts, epb)
	c1e := "C1E unknown"
	if s.C1E != nil {
		c1e = "C1E " + map[bool]string{true: "on", false: "off"}[*s.C1E]
	}
	parts = append(parts, c1e)
	return "ptilab cpu-state: firmware: " + strings.Join(parts, " | ")
}
