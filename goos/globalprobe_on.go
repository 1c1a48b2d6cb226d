//go:build ptilab_global_probe

package goos

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/efi"
)

// globalProbeVA is where plantGlobalProbe maps its page: PML4 slot 509
// of the upper half, which nothing else uses (the sweep's kernel range is
// in 510, the entry area in 511).
const globalProbeVA = 0xffff000000000000 | 509<<39

// The words in the probe's two frames: the one the global TLB entry
// points at, and the one its PTE points at afterwards.
const (
	globalProbeOld = 0x0b0b0b0b0b0b0b0b
	globalProbeNew = 0x1e1e1e1e1e1e1e1e
)

// plantGlobalProbe leaves a global TLB entry behind before a return to
// the firmware, in the test image built with ptilab_global_probe
// (TestBochsFirmwarePCIDE; host/image.Build's tags), so that board.End
// can show that its drop of the global pages takes it away: with CR4.PGE
// set (as under a firmware that runs with it, whose CR4 the kernel keeps)
// it maps globalProbeVA, global, to a frame holding globalProbeOld and
// reads it, so that the TLB holds a global entry; points the PTE at a
// frame holding globalProbeNew without invalidating; and loads CR3 again,
// which leaves global entries in place (SDM Vol. 3A, 4.10.4.1). Whether
// the entry was still used after that (the emulator keeps global
// entries: Bochs does, QEMU's TCG flushes everything) goes to
// board.SetGlobalProbe with the page's address. Not for other ends, nor
// on a CPU without PGE.
func plantGlobalProbe(action board.EndAction) {
	if action != board.EndReturn || !amd64.Features.PGE {
		return
	}
	pa, ok := AllocFrames(2, pageSize)
	if !ok {
		kprint("ptilab: global-page probe (test image): no frames")
		return
	}
	*(*uint64)(efi.Pointer(pa)) = globalProbeOld
	*(*uint64)(efi.Pointer(pa + pageSize)) = globalProbeNew
	if !kernelPT.Map(globalProbeVA, pa, pageSize, pageSize, amd64.PTE_W|amd64.PTE_G) {
		kprint("ptilab: global-page probe (test image): no page tables")
		return
	}
	amd64.SetCR4(amd64.CR4() | amd64.CR4_PGE)
	amd64.INVLPG(uintptr(globalProbeVA))
	first := *(*uint64)(efi.Pointer(globalProbeVA))
	pte := kernelPT.PTE(globalProbeVA, false)
	*pte = *pte&^amd64.PTE_ADDR | (pa+pageSize)&amd64.PTE_ADDR
	amd64.SetCR3(amd64.CR3())
	stale := first == globalProbeOld && *(*uint64)(efi.Pointer(globalProbeVA)) == globalProbeOld
	board.SetGlobalProbe(globalProbeVA, globalProbeOld, stale)
}
