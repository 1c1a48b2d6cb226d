package i386pae

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/pti"
)

// TableMemory is where a 32-bit process's tables live: pti's, amd64.TableMemory
// and pairs of 8 KiB-aligned tables for the two PDPTs. In PAE mode CR3
// holds a 32-bit PDPT address (bits 31:5, SDM Vol. 3A, 4.4.1, Table 4-7),
// so the pairs must lie below 4 GiB; the PDs and PTs may lie anywhere the
// PDPTEs and PDEs can address (52 bits).
type TableMemory = pti.TableMemory

// Frames are the physical memory of a 32-bit process, which its threads
// (the tasks) share: contiguous frames for its code, data and stack
// (layout.UserCodePages, DataPages or layout.UserDataPages when 0,
// layout.UserStackPages).
type Frames struct {
	Code, Data, Stack uint64
	DataPages         int // at most MaxDataPages
}

// MaxDataPages is the most data pages a process can have: they run from
// UserData to the stack pages.
const MaxDataPages = (layout.UserStackTop-layout.UserData)/4096 - layout.UserStackPages

// dataPages returns the number of f's data pages.
func (f Frames) dataPages() uint32 {
	if f.DataPages == 0 {
		return layout.UserDataPages
	}
	return uint32(f.DataPages)
}

// Space is a 32-bit process's address space in one isolation mode.
type Space struct {
	Isolated bool
	// KernelPDPT is the PDPT the 32-bit kernel runs on: the process, the
	// whole kernel window and the identity copy of the kernel's frames.
	// It is 8 KiB aligned: bit 12 is clear.
	KernelPDPT uint64
	// UserPDPT is the PDPT ring 3 runs on: KernelPDPT+4096 when Isolated
	// (the process and the entry area only), so that the trampolines switch
	// by setting and clearing bit 12 of CR3 (Linux x86_32 PTI:
	// PTI_SWITCH_MASK, arch/x86/entry/entry_32.S); KernelPDPT otherwise.
	UserPDPT uint64
}

// Leaf flags of the 32-bit world's pages.
const (
	leaf32UserCode = amd64.PTE_U                              // read and execute
	leaf32UserData = amd64.PTE_U | amd64.PTE_W | amd64.PTE_NX // data and stack
	leaf32Text     = 0                                        // the blob's text: read and execute
	leaf32KernelRW = amd64.PTE_W | amd64.PTE_NX               // the rest of the kernel window
	leaf32Identity = amd64.PTE_W                              // the identity copy: the mode switch runs there
)

// Build makes the address space of a 32-bit process with frames f on mem (SDM Vol. 3A, 4.4).
//
// It always allocates a pair of PDPTs (NewTablePair): the kernel side at
// its first table, the user side, used only when isolated, at the second.
// The kernel side maps the process's pages (user: code read/execute, data and
// stack writable), the whole kernel window, layout.KernelBase to
// layout.KernelBase+layout.KernelPages pages, supervisor-only (the text
// pages read/execute, the rest writable), and the kernel's frames again at
// their physical addresses, supervisor-only, writable and executable (the
// switch into and out of long mode runs there with paging off, then on).
// kernel is the physical address of the kernel's layout.KernelPages
// contiguous frames: page i of the window is frame kernel+i*4096. When
// isolated the user side maps the process's pages and the entry area only
// (layout.EntryPages pages from layout.KernelBase: CPU, Desc, EntryStack,
// Text), with the same flags, in tables of its own: nothing else of the
// kernel window, and not the identity copy. global marks the entry area's
// pages global (amd64.PTE_G, for CR4.PGE) in both sides; nx false leaves
// out execute-disable everywhere (no EFER.NXE).
//
// Build returns false when memory for tables runs out, when the PDPT pair
// is not 8 KiB aligned below 4 GiB, when a process's frame is not page aligned
// or it has more than MaxDataPages data pages, and when kernel is not page
// aligned or its frames overlap the user window, the pipes' window or the
// kernel window (kernel < layout.UserEnd or kernel+layout.KernelPages*4096
// > layout.PipeBase).
func Build[M TableMemory](mem M, kernel uint64, f Frames, isolated, global, nx bool) (Space, bool) {
	const kernelSize = layout.KernelPages * amd64.PageSize
	if kernel%amd64.PageSize != 0 || kernel < layout.UserEnd || kernel > layout.PipeBase-uint64(kernelSize) {
		return Space{}, false
	}
	if f.DataPages < 0 || f.DataPages > MaxDataPages {
		return Space{}, false
	}
	pa, ok := mem.NewTablePair()
	if !ok || pa%(2*amd64.PageSize) != 0 || pa+2*amd64.PageSize > 1<<32 {
		return Space{}, false
	}
	sp := Space{Isolated: isolated, KernelPDPT: pa, UserPDPT: pa}
	if isolated {
		sp.UserPDPT = pa + amd64.PageSize
	}

	nxMask, g := amd64.LeafBits(nx, global)
	// mapCommon maps what both sides have: the process and the entry area.
	mapCommon := func(pt *PageTable[M]) bool {
		return pt.Map(layout.UserCode, f.Code, layout.UserCodePages*amd64.PageSize, leaf32UserCode) &&
			pt.Map(layout.UserData, f.Data, f.dataPages()*amd64.PageSize, leaf32UserData&nxMask) &&
			pt.Map(layout.UserStackTop-layout.UserStackPages*amd64.PageSize, f.Stack, layout.UserStackPages*amd64.PageSize, leaf32UserData&nxMask) &&
			pt.Map(layout.KernelBase, kernel, layout.Text-layout.KernelBase, leaf32KernelRW&nxMask|g) &&
			pt.Map(layout.Text, kernel+(layout.Text-layout.KernelBase), layout.TextPages*amd64.PageSize, leaf32Text|g)
	}
	k := PageTable[M]{PDPT: sp.KernelPDPT, Mem: mem}
	const (
		entryEnd  = layout.KernelBase + layout.EntryPages*amd64.PageSize
		kernelEnd = layout.KernelBase + kernelSize
	)
	ok = mapCommon(&k) &&
		k.Map(entryEnd, kernel+(entryEnd-layout.KernelBase), kernelEnd-entryEnd, leaf32KernelRW&nxMask) &&
		k.Map(uint32(kernel), kernel, kernelSize, leaf32Identity)
	if !ok {
		return Space{}, false
	}
	if isolated {
		u := PageTable[M]{PDPT: sp.UserPDPT, Mem: mem}
		if !mapCommon(&u) {
			return Space{}, false
		}
	}
	return sp, true
}
