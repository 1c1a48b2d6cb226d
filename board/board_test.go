package board

import "testing"

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
