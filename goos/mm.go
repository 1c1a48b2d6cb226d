package goos

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/linuxabi"
)

// Physical memory: frames of 4 KiB taken from the firmware at boot, handed
// out one at a time (page tables, the runtime's committed pages) and taken
// back when the runtime releases pages. Frames are identity-mapped, so the
// kernel reaches a frame at its physical address.

// framePool hands out 4 KiB frames from a few large regions: first the
// frames freed earlier (a stack threaded through the frames themselves),
// then fresh frames from the regions in order.
type framePool struct {
	region [64]struct{ base, end, next uint64 }
	n      int
	cur    int    // region fresh frames come from
	free   uint64 // physical address of the first freed frame, 0 if none
	nfree  uint64
	total  uint64 // frames in all regions
	used   uint64 // frames handed out now
	peak   uint64
	// exhausted is set when an allocation found no frame.
	exhausted bool
}

// add gives the pool [base, end), page-aligned.
func (p *framePool) add(base, end uint64) bool {
	if p.n == len(p.region) || end <= base {
		return false
	}
	r := &p.region[p.n]
	r.base, r.end, r.next = base, end, base
	p.n++
	p.total += (end - base) / pageSize
	return true
}

// frame returns the contents of the frame at pa.
func frame(pa uint64) *[pageSize]byte { return (*[pageSize]byte)(efi.Pointer(pa)) }

// alloc returns a zeroed frame, or false when memory is exhausted.
func (p *framePool) alloc() (uint64, bool) {
	var pa uint64
	if p.free != 0 {
		pa = p.free
		p.free = *(*uint64)(efi.Pointer(pa))
		p.nfree--
	} else {
		for p.cur < p.n && p.region[p.cur].next >= p.region[p.cur].end {
			p.cur++
		}
		if p.cur == p.n {
			p.exhausted = true
			return 0, false
		}
		r := &p.region[p.cur]
		pa = r.next
		r.next += pageSize
	}
	clear(frame(pa)[:])
	p.used++
	p.peak = max(p.peak, p.used)
	return pa, true
}

// allocContig returns n zeroed, physically contiguous frames whose first
// address is a multiple of align (a power of two, at least a page), taken
// from the fresh part of a region; frames skipped for alignment go to the
// free list.
func (p *framePool) allocContig(n, align uint64) (uint64, bool) {
	return p.allocContigIn(n, align, 0, ^uint64(0))
}

// allocContigIn is allocContig for frames within [lo, hi).
func (p *framePool) allocContigIn(n, align, lo, hi uint64) (uint64, bool) {
	for i := p.cur; i < p.n; i++ {
		r := &p.region[i]
		at := (max(r.next, lo) + align - 1) &^ (align - 1)
		if at+n*pageSize > min(r.end, hi) || at+n*pageSize < at {
			continue
		}
		for skip := r.next; skip < at; skip += pageSize {
			p.used++ // release counts it back
			p.release(skip)
		}
		r.next = at + n*pageSize
		clear(efi.Bytes(at, int(n*pageSize)))
		p.used += n
		p.peak = max(p.peak, p.used)
		return at, true
	}
	return 0, false
}

// release takes back the frame at pa.
func (p *framePool) release(pa uint64) {
	*(*uint64)(efi.Pointer(pa)) = p.free
	p.free = pa
	p.nfree++
	p.used--
}

var pool framePool

// identityTables is the kernel's amd64.TableMemory: page tables in frames
// from the pool, reached through the identity map.
type identityTables struct{}

func (identityTables) NewTable() (uint64, bool) { return pool.alloc() }

func (identityTables) Table(pa uint64) *amd64.Table { return (*amd64.Table)(efi.Pointer(pa)) }

// NewTablePair returns two contiguous zeroed tables, the first 8 KiB
// aligned: the PML4 pair of a PTI address space (Linux,
// arch/x86/mm/pti.c: the user PML4 is the upper 4 KiB).
func (identityTables) NewTablePair() (uint64, bool) { return pool.allocContig(2, 2*pageSize) }

// PhysTables is the kernel's amd64.TableMemory: tables in frames of the
// kernel's pool, reached through the identity map.
type PhysTables = identityTables

// KernelTable returns the page table the kernel and the Go runtime run on.
func KernelTable() amd64.PageTable[PhysTables] { return kernelPT }

// AllocFrames returns n zeroed, contiguous 4 KiB frames from the kernel's
// pool, the first aligned to align bytes, or false when memory runs out.
// Go code may call it: it touches only the pool and the frames.
func AllocFrames(n, align uint64) (uint64, bool) { return pool.allocContig(n, max(align, pageSize)) }

// AllocFramesIn is AllocFrames for frames within the physical range [lo,
// hi): the 32-bit world's frames (i386pae) must lie below 4 GiB.
func AllocFramesIn(n, align, lo, hi uint64) (uint64, bool) {
	return pool.allocContigIn(n, max(align, pageSize), lo, hi)
}

// FreeFrames gives back n frames from pa.
func FreeFrames(pa, n uint64) {
	for i := uint64(0); i < n; i++ {
		pool.release(pa + i*pageSize)
	}
}

// Frames returns the contents of n frames from pa, through the identity
// map (efi.Bytes).
func Frames(pa, n uint64) []byte { return efi.Bytes(pa, int(n*pageSize)) }

// kernelPT is the address space the kernel and the Go runtime run in: the
// identity map of physical memory and, above it, the runtime's mappings.
var kernelPT amd64.PageTable[identityTables]

// The runtime's mappings live in [vm.lo, vm.hi): above every identity-mapped
// physical address, below VMTop.
var vm addressSpace

// VMTop is the end of the runtime's mappings: the start of PML4 slot 255
// (the last of the lower half), which holds the address spaces of the
// benchmark tasks that run in ring 3 (package pti).
const VMTop = 0x00007f8000000000

const vmHi = VMTop

// pteKept marks a page made inaccessible by mprotect(PROT_NONE): not
// present, but its frame stays (in the address bits), as Linux keeps a
// page's contents across protection changes. Bit 9 is free for software
// (SDM Vol. 3A, Table 4-20).
const pteKept = 1 << 9

// backPage gives the committed page holding va a zeroed frame. It returns
// false when va is not in a range with access rights or memory is
// exhausted.
func backPage(va uint64, write bool) bool {
	i, ok := vm.lookup(va)
	if !ok {
		return false
	}
	prot := vm.v[i].prot
	if prot == linuxabi.PROT_NONE || (write && prot&linuxabi.PROT_WRITE == 0) {
		return false
	}
	pte := kernelPT.PTE(va, true)
	if pte == nil {
		return false
	}
	if *pte&amd64.PTE_P != 0 {
		return true // another path backed it already
	}
	pa, ok := *pte&amd64.PTE_ADDR, *pte&pteKept != 0
	if !ok {
		if pa, ok = pool.alloc(); !ok {
			return false
		}
	}
	*pte = pa | pteFlags(prot)
	stats.pagesBacked++
	return true
}

// pteFlags returns the leaf flags of a runtime page with protection prot
// (not PROT_NONE): present, writable with PROT_WRITE, execute-disable
// without PROT_EXEC where the CPU has NX.
func pteFlags(prot uint8) uint64 {
	flags := uint64(amd64.PTE_P)
	if prot&linuxabi.PROT_WRITE != 0 {
		flags |= amd64.PTE_W
	}
	if prot&linuxabi.PROT_EXEC == 0 && nxEnabled {
		flags |= amd64.PTE_NX
	}
	return flags
}

// unbackRange frees the frames behind [start, end) and unmaps them; the
// pages read as zero when touched again. Page tables stay.
func unbackRange(start, end uint64) {
	for va := start; va < end; {
		pte := kernelPT.PTE(va, false)
		if pte == nil {
			// No page table here: skip to the next 2 MiB.
			va = (va | (amd64.PageSize2M - 1)) + 1
			continue
		}
		if *pte&(amd64.PTE_P|pteKept) != 0 {
			pool.release(*pte & amd64.PTE_ADDR)
			*pte = 0
			amd64.INVLPG(uintptr(va))
			stats.pagesReleased++
		}
		va += pageSize
	}
}

// reprotect updates the backed pages of [start, end) to prot. Pages made
// inaccessible keep their frames (pteKept) and get them back with the next
// access that prot allows (backPage).
func reprotect(start, end uint64, prot uint8) {
	for va := start; va < end; va += pageSize {
		pte := kernelPT.PTE(va, false)
		if pte == nil || *pte&(amd64.PTE_P|pteKept) == 0 {
			continue
		}
		if prot == linuxabi.PROT_NONE {
			*pte = *pte&amd64.PTE_ADDR | pteKept
		} else if *pte&amd64.PTE_P != 0 {
			*pte = *pte&amd64.PTE_ADDR | pteFlags(prot)
		}
		amd64.INVLPG(uintptr(va))
	}
}

var nxEnabled bool

// hostTest makes userRange accept any address below identTop: host tests
// pass Go memory as user memory, which no kernel page table maps.
var hostTest bool

// userRange reports whether [p, p+n) is memory the kernel may read (write,
// with write set) on the runtime's behalf: runtime mappings with those
// rights, or identity-mapped pages the kernel page tables map (the image,
// the runtime's main stack): not the guard pages, holes or page 0.
func userRange(p, n uint64, write bool) bool {
	if p+n < p || p == 0 {
		return false
	}
	if p+n <= identTop {
		if hostTest {
			return p >= pageSize
		}
		for va := p &^ (pageSize - 1); va < p+n; va += pageSize {
			pte, level := kernelPT.Lookup(va)
			if level == 0 || write && pte&amd64.PTE_W == 0 {
				return false
			}
		}
		return true
	}
	for addr := p; addr < p+n; {
		i, ok := vm.lookup(addr)
		if !ok {
			return false
		}
		r := vm.v[i]
		if r.prot&linuxabi.PROT_READ == 0 || (write && r.prot&linuxabi.PROT_WRITE == 0) {
			return false
		}
		addr = r.end
	}
	return true
}

// identTop is the end of the identity map: every physical address below it
// that the memory map describes is mapped at itself.
var identTop uint64
