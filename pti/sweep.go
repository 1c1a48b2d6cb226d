package pti

import (
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/goos"
)

// The TLB working-set sweep (lmbench's lat_ctx -s, Gregg's sweep): between
// consecutive system calls ring 3 (program Sweep) or the kernel (system
// call SysTouch) reads a byte in each of N distinct pages, so that every
// call pays for the TLB entries a CR3 write without PCID dropped. The
// pages are aliases: many virtual pages mapped onto one frame, distinct
// TLB entries with few cache lines. The N pages are read in order, each
// at byte offset (k*64) mod 4096 (SweepLineMask) where k is the pages
// left to read, N for the first and 1 for the last, so that consecutive
// touches fall in different cache sets and the whole sweep reads at most
// 64 lines (4 KiB) of its frame.

// The sweep regions, each SweepMaxPages pages (and their mapping, by
// MapSweep): the user ones in the process's PML4 slot (UserPML4Slot,
// which the kernel and the user side share), the kernel one in PML4 slot
// SweepKernelPML4Slot of the process's kernel side only (supervisor
// pages, absent from the user side under isolation).
const (
	SweepMaxPages = 4096
	// SweepUser4K is the first of SweepMaxPages 4 KiB user pages (16 MiB).
	SweepUser4K = UserBase + 0x40000000
	// SweepUser2M is the first of SweepMaxPages 2 MiB user pages (8 GiB).
	SweepUser2M = UserBase + 0x1000000000
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

// SweepBlock is what program Sweep reads at R8 in its data (go_asm.h
// gives the assembly its offsets, SweepBlock_X): the system call's
// arguments, and the pages to read after each call.
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

// MapSweep maps the sweep region r into p's address space under c: all
// SweepMaxPages pages to r.Frame, read-only (and execute-disable where
// EFER.NXE is on), user pages in the shared user slot or supervisor pages
// in the kernel side's SweepKernelPML4Slot. Mapping again writes the same
// entries. Setup must have run.
func (p *Process) MapSweep(c experiment.Config, r SweepRegion) error {
	sp, err := p.space(c.Mode, c.Global)
	if err != nil {
		return err
	}
	return mapSweep(goos.PhysTables{}, goos.KernelTable(), sp, r, amd64.Features.NX)
}

// mapSweep maps the sweep region r into sp (built from the Go kernel's
// table kernel, on mem), as MapSweep says; nx selects execute-disable.
func mapSweep[M amd64.TableMemory](mem M, kernel amd64.PageTable[M], sp Space, r SweepRegion, nx bool) error {
	if r.Frame%r.PageSize != 0 || (r.PageSize != amd64.PageSize && r.PageSize != amd64.PageSize2M) {
		return fmt.Errorf("pti: sweep frame %#x, page size %#x: want a 4 KiB or 2 MiB page on its boundary", r.Frame, r.PageSize)
	}
	if !r.User && r.PageSize != amd64.PageSize {
		return errors.New("pti: the kernel sweep region has 4 KiB pages")
	}
	nxMask, _ := amd64.LeafBits(nx, false)
	flags := amd64.PTE_NX & nxMask
	if r.User {
		flags |= amd64.PTE_U
	} else if mem.Table(kernel.Root)[SweepKernelPML4Slot] != 0 {
		return fmt.Errorf("pti: PML4 slot %d of the kernel's table is in use: no room for the kernel sweep region", SweepKernelPML4Slot)
	}
	pt := amd64.PageTable[M]{Root: sp.KernelRoot, Mem: mem}
	for i := uint64(0); i < SweepMaxPages; i++ {
		if !pt.Map(r.Base+i*r.PageSize, r.Frame, r.PageSize, r.PageSize, flags) {
			return errors.New("pti: out of memory for the sweep region's tables")
		}
	}
	return nil
}
