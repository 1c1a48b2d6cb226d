// Package i386pae is ptilab's 32-bit world: the CPU leaves long mode, runs
// a 32-bit kernel in protected mode with PAE paging and a task in ring 3
// that enters the kernel by SYSENTER or INT 0x80, under page-table
// isolation off or on, and comes back to long mode and to Go. It is the
// x86_32 side of the experiment (Linux's entry_SYSENTER_32 and
// entry_INT80_32 under PTI, arch/x86/entry/entry_32.S), measured beside the
// 64-bit one of package pti.
//
// The 32-bit kernel is written in Go's 386 assembler (package
// i386pae/kernel32) and embedded as bytes (kernel32.bin, rebuilt by
// i386pae/mkblob and checked against a fresh build by the tests); the
// contract between the two sides is package i386pae/layout. PAE has no
// PCID: every CR3 write flushes the non-global TLB entries and reloads the
// four PDPTEs (SDM Vol. 3A, 4.4.1).
package i386pae

//go:generate go run ./mkblob -root ..

import (
	_ "embed"
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/goos"
	"github.com/ptilab/ptilab/i386pae/layout"
)

// blob is the 32-bit kernel's text: routines at the off* offsets of
// kernel32_sym.go, mapped at layout.Text.
//
//go:embed kernel32.bin
var blob []byte

// blobSymbol is a routine of the blob (kernel32_sym.go).
type blobSymbol struct {
	name      string
	off, size uint32
}

// tables is the 32-bit world's TableMemory: frames from goos's pool, the
// PDPT pairs below 4 GiB (CR3 is 32 bits in PAE mode).
type tables struct{ goos.PhysTables }

func (tables) NewTablePair() (uint64, bool) { return goos.AllocFramesIn(2, 2*4096, 0, 1<<32) }

// world is the 32-bit world's state: the kernel's frames, the shared
// code pages, the main process (of the single-task runs) and the pipes'
// rings.
var world struct {
	ready  bool
	kernel uint64 // physical address of the layout.KernelPages frames
	code   uint64 // the code pages every process shares
	// userOffset is how many bytes into the code pages the user text
	// starts (PlaceUserText; 0 as Setup puts it).
	userOffset uint32
	main       *Process
	rings      []uint64 // physical addresses of the rings of pipes 0, 1, ...
}

// Setup allocates the kernel's frames (above the user window, below the
// pipes' window and the kernel window: their identity copy overlaps none
// of them), copies the blob into the text pages, allocates the code pages
// every process shares and copies the user text into them, and makes the
// main process. Call it once; a second call does nothing.
func Setup() error {
	if world.ready {
		return nil
	}
	if len(blob) != blobSize || len(blob) > layout.TextPages*4096 {
		return fmt.Errorf("i386pae: kernel32.bin is %d bytes, kernel32_sym.go says %d (at most %d)", len(blob), blobSize, layout.TextPages*4096)
	}
	k, ok := goos.AllocFramesIn(uint64(layout.KernelPages), 4096, layout.UserEnd, layout.PipeBase)
	if !ok {
		return errors.New("i386pae: no frames for the 32-bit kernel between 8 MiB and 3.75 GiB")
	}
	world.kernel = k
	copy(kernelPage(layout.Text, layout.TextPages), blob)

	if world.code, ok = goos.AllocFrames(layout.UserCodePages, 4096); !ok {
		return errors.New("i386pae: out of memory for the code pages")
	}
	user := blob[offUserText:offUserTextEnd]
	if len(user) > layout.UserCodePages*4096 {
		return errors.New("i386pae: the user text does not fit in the code pages")
	}
	place(goos.Frames(world.code, layout.UserCodePages), user)
	world.userOffset = 0
	world.ready = true
	main, err := NewProcess()
	if err != nil {
		world.ready = false
		return err
	}
	world.main = main
	return nil
}

// PlaceUserText copies the user text into the code pages again, offset
// bytes further than Setup put it (a loop offset,
// experiment.CheckLoopOffset; 0: Setup's place), for the runs that
// follow: every ring-3 program, its timed loop and the vsyscall routine
// run offset bytes further (the text is position independent: relative
// calls only; the SYSEXIT return point follows, userVA), and a loop's
// jumps keep their places in their 32-byte chunks (user_386.s). Call it
// between runs; it fails, changing nothing, before Setup, on an offset
// that is not a loop offset and on one that leaves the text no room.
func PlaceUserText(offset int) error {
	if !world.ready {
		return errors.New("i386pae: the user text is placed by Setup first")
	}
	if err := experiment.CheckLoopOffset(offset); err != nil {
		return fmt.Errorf("i386pae: %w", err)
	}
	user := blob[offUserText:offUserTextEnd]
	if offset+len(user) > layout.UserCodePages*4096 {
		return fmt.Errorf("i386pae: the user text (%d bytes) does not fit in the code pages %d bytes in", len(user), offset)
	}
	pages := goos.Frames(world.code, layout.UserCodePages)
	clear(pages)
	place(pages[offset:], user)
	world.userOffset = uint32(offset)
	return nil
}

// place copies src into dst. It is a function of its own because Go
// 1.26.8's compiler panics ("disjointTypes: one of arguments is not a
// pointer") when it inlines a copy of a length it knows into memory from
// goos.Frames.
//
//go:noinline
func place(dst, src []byte) { copy(dst, src) }

// kernelPage returns n pages of the kernel window from va, as the 64-bit
// side sees them (through the identity map).
func kernelPage(va uint32, n int) []byte {
	return goos.Frames(world.kernel+uint64(va-layout.KernelBase), uint64(n))
}

// kernelVA returns the kernel-window address of the routine at blob
// offset off.
func kernelVA(off uint32) uint32 { return layout.Text + off }

// physical returns the physical address of the routine at blob offset off,
// where the mode switch runs it.
func physical(off uint32) uint64 {
	return world.kernel + (layout.Text - layout.KernelBase) + uint64(off)
}

// userVA returns the address of the user routine at blob offset off in
// every process's code pages (where PlaceUserText put the user text).
func userVA(off uint32) uint32 { return layout.UserCode + world.userOffset + off - offUserText }
