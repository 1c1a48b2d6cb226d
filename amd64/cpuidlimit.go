package amd64

// MISC_ENABLE_LIMIT_CPUID is IA32_MISC_ENABLE[22], "Limit CPUID Maxval"
// (SDM Vol. 4, Table 2-2; "Max CPUID Value Limit" in firmware setup
// menus, meant for operating systems older than 2004): while it is set,
// CPUID.0H:EAX reports at most 2, so the basic leaves above 2 (06H,
// 07H, 0AH, 0BH, 15H, ...) and what they enumerate (APERF/MPERF, turbo,
// HWP, SMEP, SMAP, INVPCID, SPEC_CTRL, the PMU, the topology, the TSC's
// crystal) look absent. The extended leaves (80000000H on) are not
// limited.
const MISC_ENABLE_LIMIT_CPUID = 1 << 22

// CPUIDLimit is what UnlockCPUID found of IA32_MISC_ENABLE[22] at boot
// and did with it.
type CPUIDLimit struct {
	// Read: IA32_MISC_ENABLE was read (CPUIDLimitApplies, and the read
	// did not raise #GP). Set: the bit was set, as the firmware left it.
	// Cleared: ptilab's write took, the bit reads back clear.
	Read, Set, Cleared bool
	// MaxLeafAtEntry and MaxLeaf are CPUID.0H:EAX before and after.
	MaxLeafAtEntry, MaxLeaf uint32
	// MiscEnable is IA32_MISC_ENABLE as read, before the write (with
	// Read): the value to give back at the end where Cleared.
	MiscEnable uint64
}

// CPUIDLimitApplies reports whether the CPU has the limit bit in
// IA32_MISC_ENABLE where Linux clears it (arch/x86/kernel/cpu/intel.c,
// intel_unlock_cpuid_leafs; early_init_intel before Linux 6.11): a
// GenuineIntel CPU whose display family and model are 06_0DH (Pentium M
// "Dothan") or later, every later family included. Elsewhere the MSR may
// not exist (RDMSR 1A0H raises #GP on AMD) or its bit 22 means something
// else.
func CPUIDLimitApplies(vendor string, family, model uint32) bool {
	return vendor == "GenuineIntel" && (family > 6 || family == 6 && model >= 0x0d)
}

// unlockCPUID clears IA32_MISC_ENABLE[22] where CPUIDLimitApplies to f,
// as Linux's msr_clear_bit, through rdmsr and wrmsr (#GP-safe: false
// when the instruction raised #GP), and says what it found and did;
// maxLeaf reads CPUID.0H:EAX. The MSR is written only when the bit is
// set, and only that bit is changed.
func unlockCPUID(f *CPUFeatures, rdmsr func(uint32) (uint64, bool), wrmsr func(uint32, uint64) bool, maxLeaf func() uint32) CPUIDLimit {
	l := CPUIDLimit{MaxLeafAtEntry: maxLeaf()}
	l.MaxLeaf = l.MaxLeafAtEntry
	if !CPUIDLimitApplies(f.Vendor(), f.Family, f.Model) {
		return l
	}
	v, ok := rdmsr(MSR_IA32_MISC_ENABLE)
	if !ok {
		return l
	}
	l.Read, l.MiscEnable = true, v
	l.Set = v&MISC_ENABLE_LIMIT_CPUID != 0
	if !l.Set {
		return l
	}
	if wrmsr(MSR_IA32_MISC_ENABLE, v&^MISC_ENABLE_LIMIT_CPUID) {
		v, ok = rdmsr(MSR_IA32_MISC_ENABLE)
		l.Cleared = ok && v&MISC_ENABLE_LIMIT_CPUID == 0
	}
	l.MaxLeaf = maxLeaf()
	return l
}

// UnlockCPUID clears IA32_MISC_ENABLE[22] where Linux does
// (CPUIDLimitApplies on Features, which DetectFeatures has filled: the
// vendor and leaf 1 are below the limit) and reads Features again when
// it did. It needs the kernel's #GP fix-up for the safe MSR accessors,
// and must run before anything reads a leaf above 2.
func UnlockCPUID() CPUIDLimit {
	l := unlockCPUID(&Features, ReadMSRSafe, WriteMSRSafe, maxBasicLeaf)
	if l.Cleared {
		DetectFeatures()
	}
	return l
}

func maxBasicLeaf() uint32 {
	a, _, _, _ := CPUID(0, 0)
	return a
}
