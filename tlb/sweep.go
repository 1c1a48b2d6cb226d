package tlb

import (
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
)

// The TLB working-set sweep (lmbench's lat_ctx -s, Gregg's sweep): between
// consecutive system calls ring 3 (pti's program Sweep) or the kernel
// (pti's system call SysTouch) reads a byte in each of N distinct pages,
// so that every call pays for the TLB entries a CR3 write without PCID
// dropped. The pages are aliases: many virtual pages mapped onto one
// frame, distinct TLB entries with few cache lines. The N pages are read
// in order, each at byte offset (k*64) mod 4096 (SweepLineMask) where k is
// the pages left to read, N for the first and 1 for the last, so that
// consecutive touches fall in different cache sets and the whole sweep
// reads at most 64 lines (4 KiB) of its frame. The loop itself is
// assembly in pti (pti/sweep.h), inlined in the ring-3 program and the
// touch call so that it adds no call of its own to the paths timed.

// The sweep regions, each SweepMaxPages pages (and their mapping, by
// MapSweep): the user ones in the PML4 slot of the process's user pages
// (pti.UserPML4Slot, which the kernel and the user side share), at
// offsets from its base; the kernel one in PML4 slot SweepKernelPML4Slot
// of the process's kernel side only (supervisor pages, absent from the
// user side under isolation).
const (
	SweepMaxPages = 4096
	// SweepUser4KOffset is where the SweepMaxPages 4 KiB user pages (16
	// MiB) start in the user slot: 1 GiB in.
	SweepUser4KOffset = 0x40000000
	// SweepUser2MOffset is where the SweepMaxPages 2 MiB user pages (8
	// GiB) start in the user slot: 64 GiB in.
	SweepUser2MOffset = 0x1000000000
	// SweepKernelPML4Slot holds the kernel sweep region; the Go kernel's
	// table must leave it empty (MapSweep checks).
	SweepKernelPML4Slot = 510
	// SweepKernel4K is the first of SweepMaxPages 4 KiB kernel pages.
	SweepKernel4K = 0xffff000000000000 | SweepKernelPML4Slot<<39
	// SweepLineMask keeps the cache-line offset within a page of a touch:
	// the page read with k pages left (k = N down to 1) is read at
	// (k*64) & SweepLineMask.
	SweepLineMask = amd64.PageSize - 64
)

// SweepBlock is what pti's program Sweep reads at R8 in its data (pti's
// go_asm.h gives the assembly its offsets, through pti's alias
// sweepBlock): the system call's arguments, and the pages to read after
// each call.
type SweepBlock struct {
	// RDI, RSI, RDX of each call (SysTouch's pages, first page, stride).
	Arg0, Arg1, Arg2 uint64
	// Pages to read after each call, from Base, Stride bytes apart.
	Pages, Base, Stride uint64
}

// SweepRegion is a sweep region's mapping: its first page, page size, the
// frame every page maps to, and whether it is a user region.
type SweepRegion struct {
	Base, PageSize, Frame uint64
	User                  bool
}

// MapSweep maps the sweep region r into the address space whose kernel
// side's PML4 is at root (built from the Go kernel's table kernel, on
// mem): all SweepMaxPages pages to r.Frame, read-only (and execute-disable
// when nx, for EFER.NXE), user pages in the shared user slot or supervisor
// pages in the kernel side's SweepKernelPML4Slot. Mapping again writes the
// same entries. It is an error when the frame is not a 4 KiB or 2 MiB page
// on its boundary, the kernel region's pages are not 4 KiB, the Go
// kernel's table uses SweepKernelPML4Slot, or mem runs out of tables.
func MapSweep[M amd64.TableMemory](mem M, kernel amd64.PageTable[M], root uint64, r SweepRegion, nx bool) error {
	if r.Frame%r.PageSize != 0 || (r.PageSize != amd64.PageSize && r.PageSize != amd64.PageSize2M) {
		return fmt.Errorf("tlb: sweep frame %#x, page size %#x: want a 4 KiB or 2 MiB page on its boundary", r.Frame, r.PageSize)
	}
	if !r.User && r.PageSize != amd64.PageSize {
		return errors.New("tlb: the kernel sweep region has 4 KiB pages")
	}
	nxMask, _ := amd64.LeafBits(nx, false)
	flags := amd64.PTE_NX & nxMask
	if r.User {
		flags |= amd64.PTE_U
	} else if mem.Table(kernel.Root)[SweepKernelPML4Slot] != 0 {
		return fmt.Errorf("tlb: PML4 slot %d of the kernel's table is in use: no room for the kernel sweep region", SweepKernelPML4Slot)
	}
	pt := amd64.PageTable[M]{Root: root, Mem: mem}
	for i := uint64(0); i < SweepMaxPages; i++ {
		if !pt.Map(r.Base+i*r.PageSize, r.Frame, r.PageSize, r.PageSize, flags) {
			return errors.New("tlb: out of memory for the sweep region's tables")
		}
	}
	return nil
}
