package cpustate

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/efi"
)

// Unsupported is what the records say of a counter or MSR the CPU lacks.
const Unsupported = "unsupported"

// Sources of the core clock and of the SMI count, as the records name
// them.
const (
	ClockAPERF = "aperf/mperf"
	SMIFromMSR = "msr"
	// NotCounting is a counter that CPUID announces and that reads, but
	// did not advance over a busy interval (an emulator that reads the
	// MSRs it lacks as 0, broken firmware).
	NotCounting = "not counting"
)

// hex formats an MSR or register value.
func hex(v uint64) string { return fmt.Sprintf("%#x", v) }

func msrText(m MSR) string {
	if !m.OK {
		return Unsupported
	}
	return hex(m.Value)
}

func bit(m MSR, b uint64) *bool {
	if !m.OK {
		return nil
	}
	v := m.Value&b != 0
	return &v
}

// Topology returns the logical processors per core (the SMT level's
// count, CPUID.(1FH or 0BH, 0):EBX[15:0] where that subleaf's level type,
// ECX[15:8], is 1 = SMT) and the leaf it came from ("1fh", "0bh"), or 0 and
// "none" (SDM Vol. 3A, 9.9.1; Linux arch/x86/kernel/cpu/topology_ext.c).
func Topology(c CPU) (threads int, from string) {
	max, _ := maxLeaf(c)
	for _, l := range []uint32{0x1f, 0x0b} {
		if max < l {
			continue
		}
		_, b, cx, _ := c.CPUID(l, 0)
		if b&0xffff == 0 || (cx>>8)&0xff != 1 {
			continue
		}
		return int(b & 0xffff), fmt.Sprintf("%02xh", l)
	}
	return 0, "none"
}

// Sources of the SMT verdict, as the records name them.
const (
	SMTFromMSR   = "msr"   // MSR_CORE_THREAD_COUNT: what the firmware enabled
	SMTFromCPUID = "cpuid" // the topology leaf (Topology): what was shipped
	SMTUnknown   = "none"  // neither
)

// SMTSourceNames name the sources of the SMT verdict for the human lines.
var SMTSourceNames = map[string]string{
	SMTFromMSR:   "MSR_CORE_THREAD_COUNT",
	SMTFromCPUID: "CPUID topology as shipped",
	SMTUnknown:   "no CPUID leaf 0BH or 1FH, no MSR_CORE_THREAD_COUNT",
}

// SMT is whether the core has SMT siblings and what says so.
type SMT struct {
	On     bool
	Source string // SMTFromMSR, SMTFromCPUID or SMTUnknown
	// Threads and Cores are MSR_CORE_THREAD_COUNT's counts of the
	// logical processors and cores enabled in the package, 0 where it
	// was not read or is not usable.
	Threads, Cores int
	// ThreadsPerCore and Leaf are Topology's.
	ThreadsPerCore int
	Leaf           string
	// MSR is MSR_CORE_THREAD_COUNT as read (OK false where it was not
	// read or the read raised #GP), for the record's msrs.
	MSR MSR
}

// coreThreadCount reads MSR_CORE_THREAD_COUNT (35H), model-specific,
// where an Intel CPU of family 6 from Nehalem (06_1AH) on may have it
// (Apple's XNU and OpenCore read it there), #GP-safe, and returns its
// value as read, its thread count [15:0] and its core count: [31:16],
// [19:16] on Westmere (06_25H, 06_2CH, 06_2FH), whose bits above are
// reserved there. m.OK is false where it did not read it or the read
// raised #GP.
func coreThreadCount(c CPU) (m MSR, threads, cores int) {
	max, intel := maxLeaf(c)
	family, model, _ := signature(c, max)
	if !intel || family != 6 || model < 0x1a {
		return MSR{}, 0, 0
	}
	m = read(c, amd64.MSR_CORE_THREAD_COUNT)
	coreMask := uint64(0xffff)
	if model == 0x25 || model == 0x2c || model == 0x2f {
		coreMask = 0xf
	}
	return m, int(m.Value & 0xffff), int(m.Value >> 16 & coreMask)
}

// DecideSMT decides whether the core has SMT siblings: from
// MSR_CORE_THREAD_COUNT where it was read (msrOK) and its counts make
// sense (at least one core, no fewer threads than cores), siblings iff
// more threads than cores; otherwise from CPUID's topology as shipped
// (threadsPerCore from leaf, as Topology returns them), siblings iff
// more than one thread per core. Only the MSR sees Hyper-Threading
// disabled in the firmware.
func DecideSMT(threads, cores int, msrOK bool, threadsPerCore int, leaf string) SMT {
	s := SMT{ThreadsPerCore: threadsPerCore, Leaf: leaf}
	switch {
	case msrOK && cores >= 1 && threads >= cores:
		s.On, s.Source, s.Threads, s.Cores = threads > cores, SMTFromMSR, threads, cores
	case leaf != "none":
		s.On, s.Source = threadsPerCore > 1, SMTFromCPUID
	default:
		s.Source = SMTUnknown
	}
	return s
}

// ReadSMT reads what decides SMT on c (coreThreadCount, Topology) and
// decides (DecideSMT).
func ReadSMT(c CPU) SMT {
	m, threads, cores := coreThreadCount(c)
	perCore, leaf := Topology(c)
	s := DecideSMT(threads, cores, m.OK, perCore, leaf)
	s.MSR = m
	return s
}

// State builds the cpu-state record: the firmware's state at entry (e),
// the core-clock MSRs (p), what CPUID leaves 7, 15H, 16H and the
// topology leaves say, and SMT (ReadSMT); IA32_SPEC_CTRL and
// IA32_ARCH_CAPABILITIES are read only where CPUID.(07H,0):EDX announces
// them, PAT and MTRRdefType where CPUID.01H:EDX[16] and [12] do.
func State(c CPU, e efi.EntryState, p Power) contract.CPUState {
	max, _ := maxLeaf(c)
	smt := ReadSMT(c)
	s := contract.CPUState{
		CR0: hex(e.CR0), CR4: hex(e.CR4), EFER: hex(e.EFER),
		Selectors: map[string]string{
			"cs": hex(e.CS), "ss": hex(e.SS), "ds": hex(e.DS), "es": hex(e.ES),
			"fs": hex(e.FS), "gs": hex(e.GS), "tr": hex(e.TR),
		},
		IF:               e.RFLAGS&amd64.RFLAGS_IF != 0,
		MaxLeaf:          max,
		CoreClock:        Unsupported,
		SMICount:         Unsupported,
		MaxNonTurboRatio: int(p.MaxNonTurbo()),
		CurrentRatio:     int(p.CurrentRatio()),
		EIST:             bit(p.MiscEnable, amd64.MISC_ENABLE_EIST),
		TurboDisabled:    bit(p.MiscEnable, amd64.MISC_ENABLE_TURBO_DISABLE),
		FastStrings:      bit(p.MiscEnable, amd64.MISC_ENABLE_FAST_STRINGS),
		Turbo:            p.Turbo,
		HWP:              p.HWP,
		HWPEnabled:       p.HWPEnabled,
	}
	if p.APERF {
		s.CoreClock = ClockAPERF
	}
	if p.SMICount.OK {
		s.SMICount = SMIFromMSR
	}
	_, _, _, d1 := leaf(c, max, 1)
	a7, b7, _, d7 := leaf(c, max, 7)
	s.ERMSB = b7&amd64.CPUID07_EBX_ERMS != 0
	s.FRED, s.LASS = frontier(c, a7)
	optional := func(present bool, msr uint32) MSR {
		if !present {
			return MSR{}
		}
		return read(c, msr)
	}
	msrs := map[string]MSR{
		"MSR_PLATFORM_INFO":      p.PlatformInfo,
		"IA32_PERF_STATUS":       p.PerfStatus,
		"IA32_PERF_CTL":          p.PerfCtl,
		"IA32_MISC_ENABLE":       p.MiscEnable,
		"IA32_PM_ENABLE":         p.PMEnable,
		"IA32_HWP_CAPABILITIES":  p.HWPCaps,
		"IA32_HWP_REQUEST":       p.HWPRequest,
		"MSR_SMI_COUNT":          p.SMICount,
		"MSR_CORE_THREAD_COUNT":  smt.MSR,
		"IA32_SPEC_CTRL":         optional(d7&amd64.CPUID07_EDX_SPEC_CTRL != 0, amd64.MSR_IA32_SPEC_CTRL),
		"IA32_ARCH_CAPABILITIES": optional(d7&amd64.CPUID07_EDX_ARCH_CAPS != 0, amd64.MSR_IA32_ARCH_CAPABILITIES),
		"IA32_PAT":               optional(d1&(1<<16) != 0, amd64.MSR_IA32_PAT),
		"IA32_MTRR_DEF_TYPE":     optional(d1&(1<<12) != 0, amd64.MSR_IA32_MTRR_DEF_TYPE),
	}
	s.MSRs = make(map[string]string, len(msrs))
	for name, m := range msrs {
		s.MSRs[name] = msrText(m)
	}
	for _, l := range []struct {
		leaf uint32
		to   *[]uint32
	}{{0x15, &s.CPUID15H}, {0x16, &s.CPUID16H}} {
		if max >= l.leaf {
			a, b, cx, d := c.CPUID(l.leaf, 0)
			*l.to = []uint32{a, b, cx, d}
		}
	}
	s.ThreadsPerCore, s.TopologyLeaf, s.ThreadCount, s.CoreCount = smt.ThreadsPerCore, smt.Leaf, smt.Threads, smt.Cores
	s.SMT, s.SMTSource = smt.On, smt.Source
	return s
}

// SetCPUIDLimit puts what boot found and did with the firmware's CPUID
// limit (amd64.UnlockCPUID) into the cpu-state record s: the bit only
// where it was read, whether boot cleared it, and the maximum leaf at
// entry (State has the current one).
func SetCPUIDLimit(s *contract.CPUState, l amd64.CPUIDLimit) {
	s.CPUIDLimit = nil
	if l.Read {
		set := l.Set
		s.CPUIDLimit = &set
	}
	s.CPUIDLimitCleared = l.Cleared
	s.MaxLeafAtEntry = l.MaxLeafAtEntry
}

// ProbedMSRs are the MSRs ReadPower, State, ReadFirmwareSettings and Vulns may read (each through the
// #GP-safe path, where CPUID does not rule it out), for the emulator tests
// that list the MSRs a run touched.
var ProbedMSRs = []uint32{
	amd64.MSR_IA32_APERF, amd64.MSR_IA32_MPERF, amd64.MSR_PLATFORM_INFO, amd64.MSR_SMI_COUNT,
	amd64.MSR_IA32_PERF_STATUS, amd64.MSR_IA32_PERF_CTL, amd64.MSR_IA32_MISC_ENABLE,
	amd64.MSR_IA32_PM_ENABLE, amd64.MSR_IA32_HWP_CAPABILITIES, amd64.MSR_IA32_HWP_REQUEST,
	amd64.MSR_IA32_SPEC_CTRL, amd64.MSR_IA32_ARCH_CAPABILITIES, amd64.MSR_IA32_PAT, amd64.MSR_IA32_MTRR_DEF_TYPE,
	amd64.MSR_IA32_MCU_OPT_CTRL, amd64.MSR_CORE_THREAD_COUNT,
	amd64.MSR_MISC_FEATURE_CONTROL, amd64.MSR_IA32_ENERGY_PERF_BIAS, amd64.MSR_POWER_CTL,
}
