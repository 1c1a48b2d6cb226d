package amd64

// Power management, thermal and platform MSRs that decide and reveal the
// core clock, and the SMI counter (SDM Vol. 4, Table 2-2 and the
// model-specific tables 2-20 ff.; SDM Vol. 3B, 15.2 and 15.4). Not every
// CPU has them: read them with ReadMSRSafe.
const (
	MSR_SMI_COUNT              = 0x00000034 // [31:0] SMIs since reset (Nehalem and later, Intel)
	MSR_CORE_THREAD_COUNT      = 0x00000035 // [15:0] logical processors, [31:16] cores enabled in the package (Nehalem and later, Intel)
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
	MSR_CONFIG_TDP_NOMINAL     = 0x00000648 // [7:0] the nominal TDP level's ratio (configurable TDP, Ivy Bridge and later)
	MSR_CONFIG_TDP_LEVEL1      = 0x00000649 // [23:16] TDP level 1's ratio
	MSR_CONFIG_TDP_LEVEL2      = 0x0000064a // [23:16] TDP level 2's ratio
	MSR_CONFIG_TDP_CONTROL     = 0x0000064b // [1:0] the TDP level in use
	MSR_TURBO_ACTIVATION_RATIO = 0x0000064c // [7:0] the highest ratio that is not turbo
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
	MSR_IA32_PRED_CMD  = 0x00000049 // write-only: [0] IBPB (CPUID.07H:EDX[26], AMD 8000_0008H:EBX[12])
	MSR_IA32_FLUSH_CMD = 0x0000010b // write-only: [0] L1D_FLUSH (CPUID.07H:EDX[28])

	SPEC_CTRL_IBRS      = 1 << 0  // IA32_SPEC_CTRL[0]: restrict indirect branch speculation
	SPEC_CTRL_BHI_DIS_S = 1 << 10 // IA32_SPEC_CTRL[10]: no branch history for indirect branches in CPL 0 (CPUID.(07H,2):EDX[4])
	PRED_CMD_IBPB       = 1 << 0  // IA32_PRED_CMD[0]: indirect branch prediction barrier
	FLUSH_CMD_L1D       = 1 << 0  // IA32_FLUSH_CMD[0]: write back and invalidate the L1 data cache
	ARCH_CAP_IBRS_ALL   = 1 << 1  // IA32_ARCH_CAPABILITIES[1]: enhanced IBRS (set once, stays on)

	CPUID07_EDX_MD_CLEAR   = 1 << 10 // CPUID.(07H,0):EDX[10], VERW clears the CPU buffers
	CPUID07_EDX_L1D_FLUSH  = 1 << 28 // CPUID.(07H,0):EDX[28], IA32_FLUSH_CMD.L1D_FLUSH
	CPUID0702_EDX_BHI_CTRL = 1 << 4  // CPUID.(07H,2):EDX[4], IA32_SPEC_CTRL.BHI_DIS_S
	CPUID80000008_EBX_IBPB = 1 << 12 // AMD: IA32_PRED_CMD.IBPB
	CPUID80000008_EBX_IBRS = 1 << 14 // AMD: IA32_SPEC_CTRL.IBRS
)
