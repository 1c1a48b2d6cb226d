package cpustate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/efi"
)

// withFirmwareMSRs adds the prefetcher and power MSRs to cpu's bank:
// values constructed (turbostat's shape: MSR_POWER_CTL 0x4005f has C1E
// on, bit 1), the DCU IP prefetcher disabled (bit 3).
func withFirmwareMSRs(cpu *fakeCPU) *fakeCPU {
	cpu.MSRs[amd64.MSR_MISC_FEATURE_CONTROL] = 0x8
	cpu.MSRs[amd64.MSR_IA32_ENERGY_PERF_BIAS] = 0x6
	cpu.MSRs[amd64.MSR_POWER_CTL] = 0x4005f
	return cpu
}

func TestReadFirmwareSettings(t *testing.T) {
	f := ReadFirmwareSettings(withFirmwareMSRs(ivyBridge()))
	assert.Equal(t, MSR{0x8, true}, f.MiscFeatureControl)
	assert.Equal(t, MSR{0x6, true}, f.EnergyPerfBias, "CPUID.06H:ECX 0x9: bit 3")
	assert.Equal(t, MSR{0x4005f, true}, f.PowerCtl)

	f = ReadFirmwareSettings(ivyBridge())
	assert.False(t, f.MiscFeatureControl.OK, "not in the bank: #GP")
	assert.False(t, f.PowerCtl.OK)

	// Not read where CPUID rules them out: no EPB bit, not Intel, a Xeon
	// Phi's other prefetcher bits.
	cpu := withFirmwareMSRs(ivyBridge())
	l6 := cpu.Leaves[[2]uint32{6, 0}]
	l6[2] &^= amd64.CPUID06_ECX_EPB
	cpu.Leaves[[2]uint32{6, 0}] = l6
	assert.False(t, ReadFirmwareSettings(cpu).EnergyPerfBias.OK)

	cpu = withFirmwareMSRs(ivyBridge())
	cpu.Leaves[[2]uint32{0, 0}] = [4]uint32{0xd, 0x68747541, 0x444d4163, 0x69746e65} // AuthenticAMD
	f = ReadFirmwareSettings(cpu)
	assert.False(t, f.MiscFeatureControl.OK)
	assert.False(t, f.PowerCtl.OK)

	cpu = withFirmwareMSRs(ivyBridge())
	cpu.Leaves[[2]uint32{1, 0}] = [4]uint32{0x50671, 0, 0, 0} // Knights Landing, 06_57H
	f = ReadFirmwareSettings(cpu)
	assert.False(t, f.MiscFeatureControl.OK)
	assert.True(t, f.PowerCtl.OK)
}

func TestSetFirmware(t *testing.T) {
	var s contract.CPUState
	e := efi.EntryState{CR0: 0x80000011, CR4: 0x20 | amd64.CR4_PCIDE, CR0Fixed: amd64.CR0_MP,
		CR4Fixed: amd64.CR4_OSFXSR | amd64.CR4_OSXMMEXCPT, FCW: 0x37f, MXCSR: 0x1f80,
		Transit: amd64.Transit{Sel: 0x50, Copy: true}, TransitPlaced: true}
	SetFirmware(&s, e, ReadFirmwareSettings(withFirmwareMSRs(ivyBridge())))
	assert.Equal(t, "0x50", s.TransitCS)
	assert.True(t, s.FirmwareGDTCopy)
	assert.Equal(t, "0x2", s.CR0Fixed)
	assert.Equal(t, "0x600", s.CR4Fixed)
	assert.Equal(t, "0x37f", s.FCW)
	assert.Equal(t, "0x1f80", s.MXCSR)
	assert.True(t, s.PCIDECleared)
	assert.Equal(t, map[string]bool{"l2_hw": true, "l2_adjacent": true, "dcu": true, "dcu_ip": false}, s.Prefetchers)
	require.NotNil(t, s.EnergyPerfBias)
	assert.Equal(t, 6, *s.EnergyPerfBias)
	require.NotNil(t, s.C1E)
	assert.True(t, *s.C1E)
	assert.Equal(t, "0x8", s.MSRs["MSR_MISC_FEATURE_CONTROL"])
	assert.Equal(t, "0x6", s.MSRs["IA32_ENERGY_PERF_BIAS"])
	assert.Equal(t, "0x4005f", s.MSRs["MSR_POWER_CTL"])
	assert.Equal(t, "ptilab cpu-state: firmware: SSE off at entry (contrary to UEFI 2.10, 2.3.4): ptilab set CR0.MP, set CR4.OSFXSR, set CR4.OSXMMEXCPT; x87 control word 0x37f, MXCSR 0x1f80 at entry"+
		" | CR4.PCIDE set at entry: cleared by ptilab | firmware calls on a copy of its GDT, through code selector 0x50 | prefetchers L2 streamer on, L2 adjacent line on, DCU next line on, DCU IP stride off"+
		" | energy-performance bias 6 (normal) | C1E on", FirmwareLine(s))

	// A firmware that keeps to UEFI, on a CPU without the MSRs.
	s = contract.CPUState{MSRs: map[string]string{}}
	SetFirmware(&s, efi.EntryState{CR0: 0x80010033, CR4: 0x668, FCW: 0x37f, MXCSR: 0x1f80,
		Transit: amd64.Transit{Sel: 0x38}, TransitPlaced: true}, ReadFirmwareSettings(emulated()))
	assert.Equal(t, "0x38", s.TransitCS)
	assert.False(t, s.FirmwareGDTCopy)
	assert.Empty(t, s.CR0Fixed)
	assert.Empty(t, s.CR4Fixed)
	assert.False(t, s.PCIDECleared)
	assert.Nil(t, s.Prefetchers)
	assert.Nil(t, s.EnergyPerfBias)
	assert.Nil(t, s.C1E)
	assert.Equal(t, Unsupported, s.MSRs["MSR_POWER_CTL"])
	assert.Equal(t, "ptilab cpu-state: firmware: SSE enabled by the firmware; x87 control word 0x37f, MXCSR 0x1f80 at entry"+
		" | prefetchers unknown (MSR_MISC_FEATURE_CONTROL not read) | energy-performance bias unknown | C1E unknown", FirmwareLine(s))

	// A firmware whose CS has no place in ptilab's GDT.
	SetFirmware(&s, efi.EntryState{FCW: 0x37f, MXCSR: 0x1f80}, ReadFirmwareSettings(emulated()))
	assert.Empty(t, s.TransitCS)
	assert.Contains(t, FirmwareLine(s), " | no code selector valid in both GDTs: an NMI in the firmware gate's switches is not survivable | ")
	assert.Equal(t, "SSE off at entry (contrary to UEFI 2.10, 2.3.4): ptilab cleared CR0.EM, cleared CR0.TS",
		FirmwareSSEText("0xc", ""))
}
