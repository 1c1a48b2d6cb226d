package amd64

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// miscEnable is a fake IA32_MISC_ENABLE as the SDM describes bit 22:
// CPUID.0H:EAX is 2 while the bit is set, full otherwise. absent makes
// every access raise #GP (an AMD CPU), readOnly every write.
type miscEnable struct {
	v                uint64
	full             uint32
	absent, readOnly bool
	reads, writes    int
}

func (m *miscEnable) rdmsr(msr uint32) (uint64, bool) {
	m.reads++
	if m.absent || msr != MSR_IA32_MISC_ENABLE {
		return 0, false
	}
	return m.v, true
}

func (m *miscEnable) wrmsr(msr uint32, v uint64) bool {
	m.writes++
	if m.absent || m.readOnly || msr != MSR_IA32_MISC_ENABLE {
		return false
	}
	m.v = v
	return true
}

func (m *miscEnable) maxLeaf() uint32 {
	if m.v&MISC_ENABLE_LIMIT_CPUID != 0 {
		return 2
	}
	return m.full
}

func featuresOf(vendor string, family, model uint32) *CPUFeatures {
	f := &CPUFeatures{Family: family, Model: model}
	copy(f.vendor[:], vendor)
	return f
}

func TestCPUIDLimitApplies(t *testing.T) {
	intel := func(family, model uint32) bool { return CPUIDLimitApplies("GenuineIntel", family, model) }
	assert.True(t, intel(6, 0x3a), "Ivy Bridge")
	assert.True(t, intel(6, 0x5e), "Skylake")
	assert.True(t, intel(6, 0x0d), "Pentium M Dothan, Linux's first")
	assert.False(t, intel(6, 0x0b), "Pentium III Tualatin")
	assert.True(t, intel(0xf, 0x4), "Pentium 4 (Prescott): a later family")
	assert.True(t, intel(0x13, 0x1), "a later family")
	assert.False(t, intel(5, 0x4), "Pentium")
	assert.False(t, CPUIDLimitApplies("AuthenticAMD", 0x17, 0x1), "AMD: RDMSR 1A0H raises #GP")
	assert.False(t, CPUIDLimitApplies("HygonGenuine", 0x18, 0x0))
	assert.False(t, CPUIDLimitApplies("", 6, 0x3a))
}

func TestUnlockCPUID(t *testing.T) {
	ivb := featuresOf("GenuineIntel", 6, 0x3a)
	const fw = 0x850089 // IA32_MISC_ENABLE of an i7-3770K (cpustate's ivyBridge)

	// The limit set by the firmware: cleared, and only bit 22 changed.
	m := &miscEnable{v: fw | MISC_ENABLE_LIMIT_CPUID, full: 0xd}
	l := unlockCPUID(ivb, m.rdmsr, m.wrmsr, m.maxLeaf)
	assert.Equal(t, CPUIDLimit{Read: true, Set: true, Cleared: true, MaxLeafAtEntry: 2, MaxLeaf: 0xd, MiscEnable: fw | MISC_ENABLE_LIMIT_CPUID}, l,
		"the MSR as the firmware left it, to give back")
	assert.Equal(t, uint64(fw), m.v)
	assert.Equal(t, 1, m.writes)

	// The limit off: read, never written.
	m = &miscEnable{v: fw, full: 0xd}
	l = unlockCPUID(ivb, m.rdmsr, m.wrmsr, m.maxLeaf)
	assert.Equal(t, CPUIDLimit{Read: true, MaxLeafAtEntry: 0xd, MaxLeaf: 0xd, MiscEnable: fw}, l)
	assert.Zero(t, m.writes)

	// A write that raises #GP: set, not cleared, the leaves still hidden.
	m = &miscEnable{v: fw | MISC_ENABLE_LIMIT_CPUID, full: 0xd, readOnly: true}
	l = unlockCPUID(ivb, m.rdmsr, m.wrmsr, m.maxLeaf)
	assert.Equal(t, CPUIDLimit{Read: true, Set: true, MaxLeafAtEntry: 2, MaxLeaf: 2, MiscEnable: fw | MISC_ENABLE_LIMIT_CPUID}, l)

	// The read raises #GP (an emulator without the MSR, as Bochs's
	// models): nothing known, nothing written.
	m = &miscEnable{absent: true, full: 0xd}
	l = unlockCPUID(ivb, m.rdmsr, m.wrmsr, m.maxLeaf)
	assert.Equal(t, CPUIDLimit{MaxLeafAtEntry: 0xd, MaxLeaf: 0xd}, l)
	assert.Zero(t, m.writes)

	// Not where Linux looks: the MSR is not touched at all, even with
	// the bit set in the fake.
	for _, f := range []*CPUFeatures{featuresOf("AuthenticAMD", 0x17, 0x1), featuresOf("GenuineIntel", 6, 0x09)} {
		m = &miscEnable{v: MISC_ENABLE_LIMIT_CPUID, full: 0x10}
		l = unlockCPUID(f, m.rdmsr, m.wrmsr, m.maxLeaf)
		assert.Equal(t, CPUIDLimit{MaxLeafAtEntry: 2, MaxLeaf: 2}, l, f.Vendor())
		assert.Zero(t, m.reads+m.writes, f.Vendor())
	}
}
