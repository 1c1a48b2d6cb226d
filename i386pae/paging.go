package i386pae

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
)

// PAE paging (SDM Vol. 3A, 4.4): CR3 -> PDPT (4 entries of 8 bytes) -> PD
// (512 entries of 8 bytes) -> PT (512 entries of 8 bytes, 4 KiB pages). A
// 32-bit linear address splits into the PDPT index (bits 31:30), the PD
// index (bits 29:21), the PT index (bits 20:12) and the page offset
// (SDM Vol. 3A, 4.4.2, Figure 4-7).
//
// The SDM needs the PDPT only 32-byte aligned (CR3 bits 31:5, SDM Vol. 3A,
// 4.4.1); ptilab keeps each PDPT in its own 4 KiB frame, of which only
// entries 0-3 are used. PD and PT entries have the formats of 4-level
// paging's (SDM Vol. 3A, 4.4.2, Tables 4-9 to 4-11), so they use the
// amd64.PTE_* bits (P, W, U, PWT, PCD, A, D, PS, G, NX).

// PDPTE bits (SDM Vol. 3A, 4.4.1, Table 4-8). Unlike a 4-level PDPTE, a PAE
// PDPTE has no access rights: only P and the caching bits; R/W, U/S, A, D,
// PS, G and XD are reserved there, and a present PDPTE with a reserved bit
// set makes MOV to CR3 fault (#GP), since the CPU loads all four PDPTEs at
// once (SDM Vol. 3A, 4.4.1).
const (
	PDPTE_P   = 1 << 0 // present
	PDPTE_PWT = 1 << 3 // page-level write-through for the PD
	PDPTE_PCD = 1 << 4 // page-level cache disable for the PD
	// PDPTEReserved are the reserved bits of a PAE PDPTE below the
	// address field and bit 63 (the positions of 4-level paging's R/W,
	// U/S, A, D, PS, G and XD).
	PDPTEReserved = 1<<1 | 1<<2 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<63

	// pdpteReservedHigh are bits 62:52 of a PDPTE: reserved for any
	// MAXPHYADDR (at most 52), as bits 63:M are (Table 4-8).
	pdpteReservedHigh = 0x7ff << 52
	// pdpteIgnored are bits 11:9 of a PDPTE: ignored by the CPU, never
	// set by ptilab; set, they are the low bits of an address that is not
	// page aligned.
	pdpteIgnored = 0x7 << 9

	// PDPTEntries is the number of entries of a PAE PDPT.
	PDPTEntries = 4
)

// PageTable is a PAE address space rooted at the PDPT at physical address
// PDPT (the value of CR3).
type PageTable[M amd64.TableMemory] struct {
	PDPT uint64
	Mem  M
}

// New returns a page table with an empty PDPT in a 4 KiB frame of its own,
// or false when memory is exhausted.
func New[M amd64.TableMemory](mem M) (PageTable[M], bool) {
	pdpt, ok := mem.NewTable()
	return PageTable[M]{PDPT: pdpt, Mem: mem}, ok
}

// PAE paging's indices (SDM Vol. 3A, 4.4.2, Figure 4-7).
func pdptIndex(va uint32) int { return int(va >> 30) }
func pdIndex(va uint32) int   { return int(va>>21) & 511 }
func ptIndex(va uint32) int   { return int(va>>12) & 511 }

// paeTableFlags are the bits of a PDE that references a PT: the most
// permissive, so that the leaf alone decides the access rights (SDM
// Vol. 3A, 4.6.1), as amd64's.
const paeTableFlags = amd64.PTE_P | amd64.PTE_W | amd64.PTE_U

// pte returns a pointer to the PTE for va, creating the PD and PT above it
// when create is set. It returns nil when a table is missing (and create is
// false or memory is exhausted) or when a 2 MiB page maps va.
func (pt *PageTable[M]) pte(va uint32, create bool) *uint64 {
	// A PAE PDPTE carries no access rights: only P.
	pd := amd64.NextTable(pt.Mem, &pt.Mem.Table(pt.PDPT)[pdptIndex(va)], PDPTE_P, create)
	if pd == nil {
		return nil
	}
	ptab := amd64.NextTable(pt.Mem, &pd[pdIndex(va)], paeTableFlags, create)
	if ptab == nil {
		return nil
	}
	return &ptab[ptIndex(va)]
}

// Map maps [va, va+size) to [pa, pa+size) with 4 KiB pages of leaf flags
// (amd64.PTE_* bits; PTE_P is added). PDEs it creates get P|W|U, so the
// leaf decides the access rights; PDPTEs it creates get only P (SDM
// Vol. 3A, 4.4.1). va, pa and size must be page aligned, and va+size must
// not pass 4 GiB. It returns false when they are not, when memory for
// tables runs out, or when a 2 MiB page already maps part of the range.
func (pt *PageTable[M]) Map(va uint32, pa uint64, size uint32, flags uint64) bool {
	if va%amd64.PageSize != 0 || pa%amd64.PageSize != 0 || size%amd64.PageSize != 0 ||
		uint64(va)+uint64(size) > 1<<32 || pa&^amd64.PTE_ADDR != 0 {
		return false
	}
	for off := uint32(0); off < size; off += amd64.PageSize {
		e := pt.pte(va+off, true)
		if e == nil {
			return false
		}
		*e = (pa+uint64(off))&amd64.PTE_ADDR | flags | amd64.PTE_P
	}
	return true
}

// lookup returns the leaf entry that maps va and the size of its page (4
// KiB for a PTE, 2 MiB for a PDE with PS set), or size 0 when va is not
// mapped.
func (pt *PageTable[M]) lookup(va uint32) (e, size uint64) {
	pdpte := pt.Mem.Table(pt.PDPT)[pdptIndex(va)]
	if pdpte&PDPTE_P == 0 {
		return 0, 0
	}
	pde := pt.Mem.Table(pdpte & amd64.PTE_ADDR)[pdIndex(va)]
	if pde&amd64.PTE_P == 0 {
		return 0, 0
	}
	if pde&amd64.PTE_PS != 0 {
		return pde, amd64.PageSize2M
	}
	e = pt.Mem.Table(pde & amd64.PTE_ADDR)[ptIndex(va)]
	if e&amd64.PTE_P == 0 {
		return 0, 0
	}
	return e, amd64.PageSize
}

// Translate returns the physical address va maps to and the flags of the
// leaf entry that maps it (amd64.PTEFlags bits, PTE_PS removed), or false
// when va is not mapped (SDM Vol. 3A, 4.4.2).
func (pt *PageTable[M]) Translate(va uint32) (pa, flags uint64, ok bool) {
	e, size := pt.lookup(va)
	if size == 0 {
		return 0, 0, false
	}
	return e&amd64.PTE_ADDR&^(size-1) | uint64(va)&(size-1), e & amd64.PTEFlags &^ amd64.PTE_PS, true
}

// checkPDPT returns an error naming the first PDPTE that MOV to CR3 would
// refuse (SDM Vol. 3A, 4.4.1: a reserved bit set), or that ptilab never
// writes (a present entry whose PD address is not page aligned). Reserved
// bits are reported in not-present entries too.
func (pt *PageTable[M]) checkPDPT() error {
	pdpt := pt.Mem.Table(pt.PDPT)
	for i, e := range pdpt[:PDPTEntries] {
		if r := e & (PDPTEReserved | pdpteReservedHigh); r != 0 {
			return fmt.Errorf("PDPTE %d of PDPT %#x = %#016x: reserved bits %#x set (a PAE PDPTE has only P, PWT and PCD)", i, pt.PDPT, e, r)
		}
		if e&PDPTE_P != 0 && e&pdpteIgnored != 0 {
			return fmt.Errorf("PDPTE %d of PDPT %#x = %#016x: PD address not page aligned", i, pt.PDPT, e)
		}
	}
	return nil
}

// Walk calls fn for each mapped page in address order, merging runs of
// pages that are contiguous in both address spaces and have equal flags
// (as amd64.PageTable.Walk: the leaf's amd64.PTEFlags bits without PS, A
// and D). It first checks the four PDPTEs, and returns an error naming the
// entry, without calling fn, when one has a reserved bit set or is present
// with a PD address that is not page aligned (SDM Vol. 3A, 4.4.1).
func (pt *PageTable[M]) Walk(fn func(amd64.Mapping)) error {
	if err := pt.checkPDPT(); err != nil {
		return err
	}
	var cur amd64.Mapping
	emit := func(va, pa, size, flags uint64) {
		if cur.Size != 0 && cur.VA+cur.Size == va && cur.PA+cur.Size == pa && cur.Flags == flags {
			cur.Size += size
			return
		}
		if cur.Size != 0 {
			fn(cur)
		}
		cur = amd64.Mapping{VA: va, PA: pa, Size: size, Flags: flags}
	}
	const leafFlags = amd64.PTEFlags &^ (amd64.PTE_PS | amd64.PTE_A | amd64.PTE_D)
	for i, pdpte := range pt.Mem.Table(pt.PDPT)[:PDPTEntries] {
		if pdpte&PDPTE_P == 0 {
			continue
		}
		for j, pde := range pt.Mem.Table(pdpte & amd64.PTE_ADDR) {
			if pde&amd64.PTE_P == 0 {
				continue
			}
			va := uint64(i)<<30 | uint64(j)<<21
			if pde&amd64.PTE_PS != 0 {
				emit(va, pde&amd64.PTE_ADDR&^(amd64.PageSize2M-1), amd64.PageSize2M, pde&leafFlags)
				continue
			}
			for k, e := range pt.Mem.Table(pde & amd64.PTE_ADDR) {
				if e&amd64.PTE_P != 0 {
					emit(va|uint64(k)<<12, e&amd64.PTE_ADDR, amd64.PageSize, e&leafFlags)
				}
			}
		}
	}
	if cur.Size != 0 {
		fn(cur)
	}
	return nil
}
