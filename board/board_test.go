package board

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPre64Chipset checks the host-bridge IDs that read as Bochs's
// chipsets, and that those of 64-bit machines do not.
func TestPre64Chipset(t *testing.T) {
	for id, want := range map[uint32]bool{
		0x122d_8086: true,  // 82437FX: bochsrc chipset=i430fx
		0x1237_8086: true,  // 82441FX: chipset=i440fx (also QEMU's "pc" machine, caught by fw_cfg first)
		0x7190_8086: true,  // 82443BX: chipset=i440bx
		0x7192_8086: true,  // 82443BX without AGP
		0x29c0_8086: false, // 82G33/Q35 (QEMU's q35 machine)
		0x0150_8086: false, // Ivy Bridge DRAM controller
		0x191f_8086: false, // Skylake host bridge
		0x1450_1022: false, // AMD Zen root complex
		0xffff_ffff: false, // no device
		0x1237_1022: false, // the 440FX's device ID under another vendor
	} {
		if got := pre64Chipset(id); got != want {
			t.Errorf("pre64Chipset(%#x) = %v, want %v", id, got, want)
		}
	}
}

// TestFwCfgPossible: fw_cfg is probed under a hypervisor that signs CPUID
// 40000000H, or where ACPI lists QEMU0002; never on a bare PC (the
// reference boxes' CPUs set no hypervisor bit) or under Bochs.
func TestFwCfgPossible(t *testing.T) {
	for _, c := range []struct {
		name       string
		hypervisor bool
		vendor     string
		acpi       bool
		want       bool
	}{
		{"QEMU TCG", true, "TCGTCGTCGTCG", false, true},
		{"QEMU KVM", true, "KVMKVMKVM", true, true},
		{"hypervisor bit without a signature", true, "", false, false},
		{"hypervisor hidden, ACPI lists fw_cfg", false, "", true, true},
		{"bare Ivy Bridge or Skylake", false, "", false, false},
		{"Bochs", false, "", false, false},
	} {
		assert.Equal(t, c.want, FwCfgPossible(c.hypervisor, c.vendor, c.acpi), c.name)
	}
}

// fwcfgAML is QEMU's fw_cfg device as its ACPI builder emits it into the
// DSDT (hw/nvram/fw_cfg-acpi.c: Device (FWCF) { Name (_HID, "QEMU0002");
// Name (_STA, 0x0B); Name (_CRS, ...) }), the _CRS left out: DeviceOp
// (5B 82), a PkgLength, the name, then NameOp (08) "_HID" StringPrefix
// (0D) "QEMU0002" NUL and NameOp "_STA" BytePrefix (0A) 0B.
var fwcfgAML = []byte{
	0x5b, 0x82, 0x1d, 'F', 'W', 'C', 'F',
	0x08, '_', 'H', 'I', 'D', 0x0d, 'Q', 'E', 'M', 'U', '0', '0', '0', '2', 0x00,
	0x08, '_', 'S', 'T', 'A', 0x0a, 0x0b,
}

func TestAMLHasString(t *testing.T) {
	header := append([]byte("DSDT"), make([]byte, 32)...)
	dsdt := append(append(header[:36:36], 0x10, 0x05, '_', 'S', 'B', '_'), fwcfgAML...)
	assert.True(t, amlHasString(dsdt, FwCfgHID))
	assert.True(t, amlHasString(fwcfgAML, FwCfgHID))
	assert.False(t, amlHasString(header, FwCfgHID), "no device")
	assert.False(t, amlHasString(fwcfgAML[:20], FwCfgHID), "cut before the NUL")
	assert.False(t, amlHasString([]byte("xxQEMU0002\x00"), FwCfgHID), "no StringPrefix")
	assert.False(t, amlHasString([]byte("\x0dQEMU00021\x00"), FwCfgHID), "a longer string")
	assert.False(t, amlHasString([]byte("\x0dQEMU0001\x00"), FwCfgHID), "another QEMU device (QEMU0001 is pvpanic)")
	assert.False(t, amlHasString(nil, FwCfgHID))
}

// TestWaitsForKey: end = key waits everywhere, end = auto only on a PC
// (QEMU exits through its debug-exit device, Bochs powers off), and
// return, poweroff and reset never (the boot tests run key's wait and
// the way back to the firmware after it: TestEndKey).
func TestWaitsForKey(t *testing.T) {
	defer func(m Kind) { Machine = m }(Machine)
	for _, m := range []Kind{PC, QEMU, Bochs} {
		Machine = m
		assert.True(t, EndKey.WaitsForKey(), "key, machine %d", m)
		assert.Equal(t, m == PC, EndAuto.WaitsForKey(), "auto, machine %d", m)
		for _, a := range []EndAction{EndReturn, EndPowerOff, EndReset} {
			assert.False(t, a.WaitsForKey(), "action %d, machine %d", a, m)
		}
	}
}
