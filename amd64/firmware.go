package amd64

// The firmware's prefetcher and power settings that change what a timed
// loop costs (SDM Vol. 4, Table 2-2 and the model tables; Intel,
// "Disclosure of Hardware Prefetcher Control on Some Intel Processors";
// Linux arch/x86/include/asm/msr-index.h, turbostat.c). Not every CPU has
// them: read them with ReadMSRSafe.
const (
	// MSR_MISC_FEATURE_CONTROL (1A4H, Intel from Nehalem on): a set bit
	// disables a prefetcher.
	MSR_MISC_FEATURE_CONTROL = 0x000001a4
	// MSR_IA32_ENERGY_PERF_BIAS (1B0H, where CPUID.06H:ECX[3]): [3:0]
	// the energy-performance bias, 0 performance to 15 energy saving.
	MSR_IA32_ENERGY_PERF_BIAS = 0x000001b0
	// MSR_POWER_CTL (1FCH, Intel from Nehalem on): [1] C1E enable.
	MSR_POWER_CTL = 0x000001fc

	MISC_FEATURE_L2_HW_PREFETCH_DISABLE  = 1 << 0 // L2 hardware (streamer) prefetcher
	MISC_FEATURE_L2_ADJ_PREFETCH_DISABLE = 1 << 1 // L2 adjacent cache line prefetcher
	MISC_FEATURE_DCU_PREFETCH_DISABLE    = 1 << 2 // DCU (L1 data) next-line prefetcher
	MISC_FEATURE_DCU_IP_PREFETCH_DISABLE = 1 << 3 // DCU IP (L1 data stride) prefetcher
	POWER_CTL_C1E                        = 1 << 1 // MSR_POWER_CTL: C1E enable
	ENERGY_PERF_BIAS_MASK                = 0xf    // IA32_ENERGY_PERF_BIAS[3:0]
	CPUID06_ECX_EPB                      = 1 << 3 // CPUID.06H:ECX[3], IA32_ENERGY_PERF_BIAS
)
