package pti

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/goos"
	"github.com/ptilab/ptilab/tlb"
)

// The TLB working-set sweep's side in pti (package tlb has its regions,
// its block and their mapping): program Sweep and system call SysTouch run
// its loop (sweep.h), and a process maps its regions (MapSweep).

// The user sweep regions, each tlb.SweepMaxPages pages, in the process's
// user slot (UserPML4Slot); the kernel one is tlb.SweepKernel4K.
const (
	// SweepUser4K is the first of the 4 KiB user pages (16 MiB).
	SweepUser4K = UserBase + tlb.SweepUser4KOffset
	// SweepUser2M is the first of the 2 MiB user pages (8 GiB).
	SweepUser2M = UserBase + tlb.SweepUser2MOffset
)

// For the assembly (go_asm.h): sweep.h's line mask and program Sweep's
// block (sweepBlock_Arg0 ...).
const sweepLineMask = tlb.SweepLineMask

type sweepBlock = tlb.SweepBlock

// MapSweep maps the sweep region r into p's address space under c
// (tlb.MapSweep on its kernel side, with execute-disable where EFER.NXE is
// on). Setup must have run.
func (p *Process) MapSweep(c experiment.Config, r tlb.SweepRegion) error {
	sp, err := p.space(c.Mode, c.Global)
	if err != nil {
		return err
	}
	return tlb.MapSweep(goos.PhysTables{}, goos.KernelTable(), sp.KernelRoot, r, amd64.Features.NX)
}
