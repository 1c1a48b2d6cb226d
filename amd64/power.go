package amd64

// Power management, thermal and platform MSRs that decide and reveal the
// core clock, and the SMI counter (SDM Vol. 4, Table 2-2 and the
// model-specific tables 2-20 ff.; SDM Vol. 3B, 15.2 and 15.4). Not every
// CPU has them: read them with ReadMSRSafe.
const (
	MSR_SMI_COUNT              = 0x00000034 // [31:0] SMIs since reset (Nehalem and later, Intel)
	MSR_IA32_SPEC_CTRL         = 0x00000048 // IBRS, STIBP, SSBD (CPUID.07H:EDX[26])
	MSR_IA32_ARCH_CAPABILITIES = 0x0000010a // RDCL_NO, IBRS_ALL, ... (CPUID.07H:EDX[29])
	MSR_IA32_MCU_OPT_CTRL      = 0x00000123 // RNGDS_MITG_DIS [0], GDS_MITG_DIS [4], GDS_MITG_LOCK [5] (CPUID.07H:EDX[9])
	MSR_PLATFORM_INFO          = 0x000000ce // [15:8] maximum non-turbo ratio
	MSR_IA32_MPERF             = 0x000000e7 // counts at the TSC's rate while the core is in C0
	MSR_IA32_APERF             = 0x000000e8 // counts at the core's actual clock while in C0
	MSR_IA32_PERF_STATUS       = 0x00000198 // [15:8] the current ratio
	MSR_IA32_PERF_CTL          = 0x00000199 // [15:8] the requested ratio (EIST)
	MSR_IA32_MISC_ENABLE       = 0x000001a0 // fast strings, EIST, turbo disable
	MSR_IA32_MTRR_DEF_TYPE     = 0x000002ff // [7:0] default memory type, [10] fixed enable, [11] MTRRs enable
	MSR_IA32_PM_ENABLE         = 0x00000770 // [0] HWP enabled (write-once until reset)
	MSR_IA32_HWP_CAPABILITIES  = 0x00000771 // highest, guaranteed, most efficient, lowest performance
	MSR_IA32_HWP_REQUEST       = 0x00000774 // minimum, maximum, desired performance, EPP

	MISC_ENABLE_FAST_STRINGS  = 1 << 0  // IA32_MISC_ENABLE: fast-string REP MOVS/STOS
	MISC_ENABLE_EIST          = 1 << 16 // IA32_MISC_ENABLE: Enhanced Intel SpeedStep enabled
	MISC_ENABLE_TURBO_DISABLE = 1 << 38 // IA32_MISC_ENABLE: IDA (turbo) disengaged
	PM_ENABLE_HWP             = 1 << 0  // IA32_PM_ENABLE
	CPUID06_EAX_TURBO         = 1 << 1  // CPUID.06H:EAX[1], Intel Turbo Boost available
	CPUID06_EAX_HWP           = 1 << 7  // CPUID.06H:EAX[7], HWP base registers
	CPUID06_ECX_APERFMPERF    = 1 << 0  // CPUID.06H:ECX[0], IA32_MPERF and IA32_APERF
	CPUID07_EBX_ERMS          = 1 << 9  // CPUID.(07H,0):EBX[9], enhanced REP MOVSB/STOSB
	CPUID07_EDX_SPEC_CTRL     = 1 << 26 // CPUID.(07H,0):EDX[26], IBRS and IBPB: IA32_SPEC_CTRL
	CPUID07_EDX_ARCH_CAPS     = 1 << 29 // CPUID.(07H,0):EDX[29], IA32_ARCH_CAPABILITIES
)

// Speculation-control MSRs and CPUID bits (SDM Vol. 4, Table 2-2, 48H and
// 49H; SDM Vol. 2A, CPUID, Table 3-8; AMD APM Vol. 3, E.4.7; Linux
// arch/x86/include/asm/msr-index.h).
const (
	MSR_IA32_PRED_CMD = 0x00000049 // write-only: [0] IBPB (CPUID.07H:EDX[26], AMD 8000_0008H:EBX[12])

	SPEC_CTRL_IBRS      = 1 << 0  // IA32_SPEC_CTRL[0]: restrict indirect branch speculation
	SPEC_CTRL_BHI_DIS_S = 1 << 10 // IA32_SPEC_CTRL[10]: no branch history for indirect branches in CPL 0 (CPUID.(07H,2):EDX[4])
	PRED_CMD_IBPB       = 1 << 0  // IA32_PRED_CMD[0]: indirect branch prediction barrier
	ARCH_CAP_IBRS_ALL   = 1 << 1  // IA32_ARCH_CAPABILITIES[1]: enhanced IBRS (set once, stays on)

	CPUID07_EDX_MD_CLEAR   = 1 << 10 // CPUID.(07H,0):EDX[10], VERW clears the CPU buffers
	CPUID0702_EDX_BHI_CTRL = 1 << 4  // CPUID.(07H,2):EDX[4], IA32_SPEC_CTRL.BHI_DIS_S
	CPUID80000008_EBX_IBPB = 1 << 12 // AMD: IA32_PRED_CMD.IBPB
	CPUID80000008_EBX_IBRS = 1 << 14 // AMD: IA32_SPEC_CTRL.IBRS
)

// Sample is what is read in ring 0 before and after every measured
// repeat (pti's sample call, the worlds' loops): the core-clock counters
// and the counters of the events that disturb a measurement. A counter the
// CPU lacks reads 0 throughout. The fields are 8 bytes each, in this order,
// for the assembly that fills them (go_asm.h: sample_APERF ...).
type Sample struct {
	APERF uint64 // IA32_APERF
	MPERF uint64 // IA32_MPERF
	SMI   uint64 // MSR_SMI_COUNT[31:0]
	// NMI counts the NMIs taken (NMICount in Go and in the 64-bit world;
	// the 32-bit world's per-CPU count, monotonic within its run): only
	// its deltas mean anything.
	NMI uint64
	// PMC are performance-monitoring counters as read (raw, not masked to
	// their width): the MSRs SamplePMCMSRs names, 0 where it names none.
	// By convention (package bench) 0-2 are the fixed-function counters
	// IA32_FIXED_CTR0-2 and 3.. programmable IA32_PMCx.
	PMC [SamplePMCs]uint64
}

// SamplePMCs is the most performance-monitoring counters a Sample holds:
// the three fixed-function counters and SampleGP programmable ones.
const SamplePMCs = 3 + SampleGP

// SampleGP is the most programmable counters a Sample holds.
const SampleGP = 4

// SamplePMCMSRs are the MSRs (IA32_FIXED_CTRx at 309H+, IA32_PMCx at
// C1H+; SDM Vol. 4, Table 2-2) that SamplePMU reads into Sample.PMC, 0
// for a slot not read.
type SamplePMCMSRs [SamplePMCs]uint32

// Disturbed reports whether d, the change of the counters over a repeat
// (cpustate.Delta), shows an event that disturbed it: an SMI or an NMI.
func (d Sample) Disturbed() bool { return d.SMI != 0 || d.NMI != 0 }

// SampleSources says which of a Sample's counters are read: the
// SampleAPERF and SampleSMI bits, set where a #GP-safe read of the MSR
// succeeded, and SampleNMI, which every CPU has (ptilab's own handlers
// count NMIs).
type SampleSources uint64

const (
	SampleAPERF SampleSources = 1 << 0 // APERF and MPERF are read
	SampleSMI   SampleSources = 1 << 1 // MSR_SMI_COUNT is read
	SampleNMI   SampleSources = 1 << 2 // the NMI count is read
	SamplePMU   SampleSources = 1 << 3 // the performance counters of a SamplePMCMSRs are read
)

// ReadSample reads the counters src names into s (the others stay 0),
// with SamplePMU the MSRs pmcs names into s.PMC. The MSRs must be known
// to exist (SampleSources from safe reads, counters a pmu.Session
// started): it uses RDMSR. The NMI count is NMICount's.
func ReadSample(src SampleSources, pmcs *SamplePMCMSRs, s *Sample) {
	if src&SampleAPERF != 0 {
		s.APERF = RDMSR(MSR_IA32_APERF)
		s.MPERF = RDMSR(MSR_IA32_MPERF)
	}
	if src&SampleSMI != 0 {
		s.SMI = RDMSR(MSR_SMI_COUNT) & 0xffffffff
	}
	if src&SampleNMI != 0 {
		s.NMI = NMICount()
	}
	if src&SamplePMU != 0 && pmcs != nil {
		for i, msr := range pmcs {
			if msr != 0 {
				s.PMC[i] = RDMSR(msr)
			}
		}
	}
}
