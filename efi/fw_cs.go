//go:build ptilab_fw_cs

package efi

import (
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
)

// pretendCS is the code selector the test image's pretend firmware runs
// on: 0x28, entry 5, which EDK2's GDT leaves as a null spare and ptilab's
// (Linux's layout) gives to USER_DS.
const pretendCS = 0x28

// pretendGDT is the pretend firmware's GDT.
var pretendGDT [fwGDTEntries]uint64

// pretendFirmwareCS makes the boot play a firmware whose code selector
// names another segment in ptilab's GDT: it copies the firmware's GDT
// into pretendGDT with the firmware's code descriptor at pretendCS's
// index too, loads it, then CS = pretendCS, and makes them the GDT and CS
// the firmware's calls run on (fwctx). Entry and entryGDT keep the real
// ones, which exit gives back. For TestNMIs, TestEndKey and
// TestBochsFirmwarePCIDE (test/, oddFirmware): only test images are
// built with the tag ptilab_fw_cs (host/image.Build's tags). Where the
// firmware's GDT is larger than pretendGDT, or its CS beyond it, it does
// nothing.
func pretendFirmwareCS() {
	n := (int(fwctx.GDT.Limit) + 1) / 8
	i := int(fwctx.CS >> 3)
	if n > len(pretendGDT) || i >= n {
		return
	}
	fw := unsafe.Slice((*uint64)(Pointer(fwctx.GDT.Base)), n)
	copy(pretendGDT[:], fw)
	pretendGDT[pretendCS>>3] = fw[i]
	fwctx.GDT = descPtr{Limit: uint16(max(n, pretendCS>>3+1)*8 - 1), Base: addr(&pretendGDT)}
	amd64.LoadGDT(&fwctx.GDT)
	amd64.LoadSegments(pretendCS, uint16(fwctx.DS))
	fwctx.CS, transitCS = pretendCS, pretendCS
}
