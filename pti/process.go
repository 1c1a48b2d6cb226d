package pti

import (
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/goos"
)

// Process is a process of ring-3 tasks: the shared code pages, its own
// data and stack pages (Frames) and its address space in each mode, built
// when first used. Its tasks (threads) share it.
type Process struct {
	Frames
	asid   uint16 // address-space id: kernel PCID = KernelPCID + asid
	spaces map[spaceKey]Space
}

// NewProcess allocates a process's data pages (UserDataPages) and stack
// pages. Setup must have run.
func NewProcess() (*Process, error) { return NewProcessData(UserDataPages) }

// NewProcessData allocates a process with dataPages data pages (1 to
// MaxDataPages) and the stack pages. Setup must have run.
func NewProcessData(dataPages int) (*Process, error) {
	if !env.ready {
		return nil, errors.New("pti: Setup has not run")
	}
	if dataPages < 1 || dataPages > MaxDataPages {
		return nil, fmt.Errorf("pti: %d data pages: a process has 1 to %d", dataPages, MaxDataPages)
	}
	if env.nasid >= 1<<PTIUserPCIDBit-KernelPCID {
		return nil, errors.New("pti: out of address-space ids")
	}
	p := &Process{Frames: Frames{Code: env.code, DataPages: dataPages}, spaces: map[spaceKey]Space{}}
	// A process's pages are user data: sensitive frames, which the asi
	// modes' nonsensitive table leaves out (asi.go).
	var ok bool
	if p.Data, ok = goos.AllocSensitiveFrames(uint64(dataPages)); !ok {
		return nil, errors.New("pti: out of memory for a process's data")
	}
	if p.Stack, ok = goos.AllocSensitiveFrames(UserStackPages); !ok {
		return nil, errors.New("pti: out of memory for a process's stack")
	}
	p.asid = env.nasid
	env.nasid++
	return p, nil
}

// DataPages returns the process's data pages, as the kernel sees them.
func (p *Process) DataPages() []byte { return goos.Frames(p.Data, p.dataPages()) }

// space returns p's address space in mode with global entry pages or not,
// building it the first time. The tables are the same for a mode and its
// PCID variant (experiment.Mode.TableClass).
func (p *Process) space(mode experiment.Mode, global bool) (Space, error) {
	k := spaceKey{mode.TableClass(), global}
	sp, ok := p.spaces[k]
	if !ok {
		if mode.ASI() {
			if err := syncNonsensitive(); err != nil {
				return Space{}, err
			}
		}
		if sp, ok = Build(goos.PhysTables{}, goos.KernelTable(), env.nonsensitive.Root, p.Frames, env.entry, mode, global, amd64.Features.NX); !ok {
			return Space{}, errors.New("pti: out of memory for page tables")
		}
		sp.ASID = p.asid
		p.spaces[k] = sp
	}
	sp.Mode = mode
	return sp, nil
}

// CR3 returns the CR3 values of p's kernel and user sides under c; the
// tasks kernel loads the first when it switches to one of p's tasks. In
// an asi mode the kernel runs on the user side, the nonsensitive table,
// until it touches user data: both values are the user side's, so that a
// context switch hands the CPU over on the nonsensitive table of the next
// process (asi.go; the tasks kernel's calls never block after a copy, so
// a switch never starts on the sensitive table).
func (p *Process) CR3(c experiment.Config) (kernel, user uint64, err error) {
	sp, err := p.space(c.Mode, c.Global)
	if err != nil {
		return 0, 0, err
	}
	if c.Mode.ASI() {
		return UserCR3(sp, true), UserCR3(sp, true), nil
	}
	return KernelCR3(sp, true), UserCR3(sp, true), nil
}

// spaceKey picks a process's address space: the mode's table class and
// the global setting.
type spaceKey struct {
	class  experiment.Mode
	global bool
}

// MainProcess returns the process of the single-task runs (Exec).
func MainProcess() *Process { return env.main }

// LeafPTE returns p's address space in mode (global entry pages off) and
// a pointer to the PTE that maps the 4 KiB page holding va in its kernel
// side's tables; under isolation the user side shares the tables of the
// user half (UserPML4Slot), so the same PTE maps va there. It is an error
// when va is not mapped by a 4 KiB page.
func (p *Process) LeafPTE(mode experiment.Mode, va uint64) (Space, *uint64, error) {
	sp, err := p.space(mode, false)
	if err != nil {
		return Space{}, nil, err
	}
	pt := amd64.PageTable[goos.PhysTables]{Root: sp.KernelRoot, Mem: goos.PhysTables{}}
	pte := pt.PTE(va, false)
	if pte == nil || *pte&amd64.PTE_P == 0 {
		return Space{}, nil, fmt.Errorf("pti: %#x is not mapped by a 4 KiB page in the %v tables", va, mode)
	}
	return sp, pte, nil
}
