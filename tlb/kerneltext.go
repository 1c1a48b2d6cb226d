package tlb

import (
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/goos"
)

// KernelText is the kernel text's pages, [Start, End) in 4 KiB pages:
// those of the image's .text section, which global pages make global
// (Linux leaves kernel text global for !PCID).
type KernelText struct{ Start, End uint64 }

// FindKernelText returns the kernel text's pages from the section table
// the firmware loaded with the image; none when it has none.
func FindKernelText() KernelText {
	addr, size, ok := efi.ImageSection(".text")
	if !ok {
		return KernelText{}
	}
	return KernelText{addr &^ (amd64.PageSize - 1), (addr + size + amd64.PageSize - 1) &^ (amd64.PageSize - 1)}
}

// Split replaces the 2 MiB pages of the kernel's table that hold the
// kernel text by 4 KiB pages with the same translation and attributes,
// once (pti's Setup), and then invalidates every TLB entry of those 2 MiB
// ranges (INVLPG invalidates the entries of any page size, global ones
// included: SDM Vol. 3A, 4.10.4.1). The table is live: without the flush
// the TLB could hold the 2 MiB translation and the 4 KiB ones at once,
// and a later attribute change would meet both (SDM Vol. 3A, 4.10.2.3 and
// 4.10.4.2; Linux flushes after it splits a large page,
// arch/x86/mm/pat/set_memory.c, __split_large_page). It is an error when
// the tables for the split run out.
func (k KernelText) Split() error {
	return splitForText(goos.KernelTable(), k.Start, k.End, amd64.INVLPG)
}

// SetGlobal sets (on) or clears the global bit of the kernel text's pages
// in the kernel's table (which every process's kernel side shares), which
// Split split, invalidating each page whose bit changes. It is an error
// when a page is not mapped by a 4 KiB page.
func (k KernelText) SetGlobal(on bool) error {
	return setGlobal(goos.KernelTable(), k.Start, k.End, on, amd64.INVLPG)
}

// splitForText splits the 2 MiB pages of pt that hold [start, end), then
// calls invlpg for every 4 KiB page of those 2 MiB pages.
func splitForText[M amd64.TableMemory](pt amd64.PageTable[M], start, end uint64, invlpg func(uintptr)) error {
	start &^= amd64.PageSize2M - 1
	end = (end + amd64.PageSize2M - 1) &^ (amd64.PageSize2M - 1)
	for va := start; va < end; va += amd64.PageSize2M {
		if !pt.Split(va) {
			return errors.New("tlb: out of memory splitting the kernel text's pages")
		}
	}
	for va := start; va < end; va += amd64.PageSize {
		invlpg(uintptr(va))
	}
	return nil
}

// setGlobal sets (on) or clears the G bit of the 4 KiB pages of pt in
// [start, end); each page whose bit changes is invalidated (invlpg) at
// once, so that no TLB entry with the old bit outlives the change (a
// global one would survive the CR3 writes of a run). A page still in a 2
// MiB page is an error: splitting belongs to Setup.
func setGlobal[M amd64.TableMemory](pt amd64.PageTable[M], start, end uint64, on bool, invlpg func(uintptr)) error {
	for va := start; va < end; va += amd64.PageSize {
		pte := pt.PTE(va, false)
		if pte == nil {
			return fmt.Errorf("tlb: kernel text page %#x is not mapped by a 4 KiB page", va)
		}
		want := *pte &^ amd64.PTE_G
		if on {
			want |= amd64.PTE_G
		}
		if *pte != want {
			*pte = want
			invlpg(uintptr(va))
		}
	}
	return nil
}
