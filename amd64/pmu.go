package amd64

// Architectural performance-monitoring MSRs (SDM Vol. 4, Table 2-2; their
// use: SDM Vol. 3B, "Architectural Performance Monitoring", section 20.2 in
// the 2023 and later editions, 18.2 in earlier ones). Each programmable
// counter i has an event select at MSR_IA32_PERFEVTSEL0+i and a counter at
// MSR_IA32_PMC0+i; each fixed-function counter j a counter at
// MSR_IA32_FIXED_CTR0+j.
const (
	MSR_IA32_PMC0                 = 0x000000c1 // programmable counter 0 (CPUID.0AH:EAX[15:8] of them)
	MSR_IA32_PERFEVTSEL0          = 0x00000186 // event select of programmable counter 0
	MSR_IA32_FIXED_CTR0           = 0x00000309 // fixed counter 0: INST_RETIRED.ANY (version >= 2)
	MSR_IA32_FIXED_CTR_CTRL       = 0x0000038d // 4 bits per fixed counter: [0] OS, [1] USR, [2] AnyThread, [3] PMI
	MSR_IA32_PERF_GLOBAL_STATUS   = 0x0000038e // overflow bits: [n-1:0] programmable, [32+j] fixed (version >= 2)
	MSR_IA32_PERF_GLOBAL_CTRL     = 0x0000038f // enable bits: [n-1:0] programmable, [32+j] fixed (version >= 2)
	MSR_IA32_PERF_GLOBAL_OVF_CTRL = 0x00000390 // write 1 to clear the matching GLOBAL_STATUS bit (version >= 2; IA32_PERF_GLOBAL_STATUS_RESET from version 4)

	PERFEVTSEL_USR = 1 << 16 // count while CPL > 0
	PERFEVTSEL_OS  = 1 << 17 // count while CPL = 0
	PERFEVTSEL_EN  = 1 << 22 // enable the counter
)

// Freezing the counters in SMM (SDM Vol. 3B, 17.4.1, IA32_DEBUGCTL; SDM
// Vol. 4, Table 2-2): IA32_PERF_CAPABILITIES exists where CPUID.01H:ECX[15]
// (PDCM) is set, and its bit 12 enumerates IA32_DEBUGCTL.FREEZE_WHILE_SMM.
const (
	MSR_IA32_DEBUGCTL                  = 0x000001d9
	MSR_IA32_PERF_CAPABILITIES         = 0x00000345
	CPUID_01_ECX_PDCM                  = 1 << 15 // IA32_PERF_CAPABILITIES exists
	PERF_CAPABILITIES_FREEZE_WHILE_SMM = 1 << 12 // IA32_DEBUGCTL.FREEZE_WHILE_SMM is supported
	DEBUGCTL_FREEZE_WHILE_SMM          = 1 << 14 // the counters stop on SMI delivery and go on after RSM

	// Full-width writes (SDM Vol. 3B, "Full-Width Writes
	// to Performance Counter Registers"): where IA32_PERF_CAPABILITIES[13]
	// is set, IA32_A_PMCx (4C1H+x) writes IA32_PMCx's full width, where a
	// write to IA32_PMCx takes EAX[31:0] sign-extended.
	MSR_IA32_A_PMC0            = 0x000004c1
	PERF_CAPABILITIES_FW_WRITE = 1 << 13
)
