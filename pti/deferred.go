package pti

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/goos"
)

// The deferred modes (on-defer, on-noswitch and their PCID variants), as
// Alexandre Chartre's RFC "x86/pti: Defer CR3 switch to C code" (Linux
// 5.10-rc4, November 2020) shaped them: the SYSCALL trampoline stays on
// the user table, moves to a stack mapped in both tables (the RFC's
// per-task PTI stack; here the one CPU's trampoline stack, since tasks
// switch only in system calls and their registers are saved in the tasks
// kernel's table), builds pt_regs there (linux flavour) and calls a
// dispatcher, mapped in both tables, which writes CR3 before the handler
// runs on the task's kernel stack and after it returns. Under OnNoSwitch,
// the system calls of entryData.NoSwitch run on the user table from copies
// of their handlers, with no CR3 write. What those modes' user tables map
// beyond On's is their Exposure.

// Area is a range of pages a mode's user table maps beyond On's: its
// name, address, size in pages, leaf flags (before NX and global are
// applied) and what it holds.
type Area struct {
	Name  string
	VA    uint64
	Pages int
	Flags uint64
	Holds string
}

// DeferredAreas are the pages every deferred mode maps in both tables.
var DeferredAreas = []Area{
	{Name: "deferred entry text", VA: EntryDeferText, Pages: 1, Flags: flagsEntryText,
		Holds: "the deferred modes' SYSCALL trampolines and the dispatchers that write CR3"},
	{Name: "trampoline stack", VA: EntryTrampStack, Pages: 1, Flags: flagsEntryRW,
		Holds: "the task's pt_regs (its user registers) and the dispatcher's return address and saved stack pointer"},
}

// NoSwitchAreas are the pages OnNoSwitch maps in both tables beyond
// DeferredAreas.
var NoSwitchAreas = []Area{
	{Name: "no-switch handlers", VA: EntryNoSwitchText, Pages: 1, Flags: flagsEntryText,
		Holds: "copies of the getppid and work handlers, which run on the user table (they read no data)"},
}

// Exposure returns what the user table of mode m maps beyond On's, from
// its row's Exposes (the same lists Build maps): nothing for on and
// on+pcid, DeferredAreas for the deferred modes (ExposesDispatch), and
// NoSwitchAreas too for the no-switch ones (ExposesNoSwitchHandlers).
// Off's user table is its kernel table (ExposesKernel): its Exposure is
// one Area with no pages, for the Go kernel's whole address space
// (supervisor-only); lass's adds LASSAreas (ExposesLASSHandlers); an asi
// mode's is one Area with no pages, the kernel but the sensitive blocks
// (ExposesNonsensitiveKernel: asi.go).
func Exposure(m experiment.Mode) []Area {
	e := m.Row().Exposes
	var out []Area
	if e&experiment.ExposesKernel != 0 {
		out = append(out, Area{Name: "the kernel", Holds: "every mapping of the Go kernel's table, supervisor-only: its text, heap, stacks and the direct map"})
	}
	if e&experiment.ExposesDispatch != 0 {
		out = append(out, DeferredAreas...)
	}
	if e&experiment.ExposesNoSwitchHandlers != 0 {
		out = append(out, NoSwitchAreas...)
	}
	if e&experiment.ExposesLASSHandlers != 0 {
		out = append(out, LASSAreas...)
	}
	if e&experiment.ExposesNonsensitiveKernel != 0 {
		out = append(out, Area{Name: "the nonsensitive kernel", Holds: "every mapping of the Go kernel's table, supervisor-only, but the sensitive blocks (the processes' pages, the pipe and socket rings and the leak oracle's sensitive secret): its text, heap, stacks, the tasks kernel's state and the direct map of all other memory"})
	}
	return out
}

// String describes a: its range, size and contents.
func (a Area) String() string {
	if a.Pages == 0 {
		return fmt.Sprintf("%s: %s", a.Name, a.Holds)
	}
	return fmt.Sprintf("%s [%#x, %#x) %d page(s): %s", a.Name, a.VA, a.VA+uint64(a.Pages)*amd64.PageSize, a.Pages, a.Holds)
}

// mapAreas maps the areas of m's Exposure that have pages (not the
// kernel's, when the user table is the kernel's) into pt, at entry +
// their offset in the entry area, with NX mask nxMask and global bit g.
func mapAreas[M amd64.TableMemory](pt amd64.PageTable[M], m experiment.Mode, entry, nxMask, g uint64) bool {
	for _, a := range Exposure(m) {
		if a.Pages > 0 && !pt.Map(a.VA, entry+(a.VA-EntryBase), uint64(a.Pages)*amd64.PageSize, amd64.PageSize, a.Flags&nxMask|g) {
			return false
		}
	}
	return true
}

// deferRoutines are the routines of entry_amd64.s that Setup copies into
// the deferred entry text (EntryDeferText), named as entryRoutines' are.
type deferRoutines struct {
	// The SYSCALL trampolines of OnDefer and OnNoSwitch (their PCID
	// variants differ only by the dispatcher: entryData.Dispatch).
	SysMinimalDefer, SysLinuxDefer, SysMinimalNoSwitch, SysLinuxNoSwitch uint64
	// The dispatchers: the CR3 switches without and with PCIDs.
	DispatchOn, DispatchPCID uint64
}

// noSwitchRoutines are the handlers Setup copies into OnNoSwitch's
// handler page (EntryNoSwitchText): getppid's and work's, as sysGetppid
// and sysWork.
type noSwitchRoutines struct {
	NsGetppid, NsWork uint64
}

// pageRoutines are the link addresses of the routines copied to pages of
// their own: the deferred modes', OnNoSwitch's handlers, the FRED
// trampolines' and fredEvent, and a lass run's handlers.
type pageRoutines struct {
	Defer     deferRoutines
	NoSwitch  noSwitchRoutines
	FRED      fredRoutines
	LASS      lassRoutines
	FredEvent uint64
}

// pageRoutinesTable writes the link addresses of the routines copied to
// pages of their own into r, each into the field of its name (through
// go_asm.h's offsets: pageRoutines_X plus the inner table's).
//
// defined in entry_amd64.s
//
//go:noescape
func pageRoutinesTable(r *pageRoutines)

// dispatcher returns the dispatcher the deferred trampolines of mode m
// call: the CR3 switch with PCIDs or without.
func dispatcher(m experiment.Mode) uint64 {
	if m.PCID() {
		return env.deferText.DispatchPCID
	}
	return env.deferText.DispatchOn
}

// eTrampStackTop is the trampoline stack's top, negative for the
// assembly's immediates.
const eTrampStackTop = EntryTrampStackTop - 1<<64

// placeDeferred copies the deferred modes' routines, linked at the fields
// of dlink and link (pageRoutinesTable), into their pages of the entry
// area (whose frames follow the entry area's, at entry).
func placeDeferred(dlink *deferRoutines, link *noSwitchRoutines) error {
	base := env.entry + (EntryDeferText - EntryBase)
	if _, err := place(dlink, &env.deferText, goos.Frames(base, 1), EntryDeferText, "deferred entry text"); err != nil {
		return err
	}
	base = env.entry + (EntryNoSwitchText - EntryBase)
	_, err := place(link, &env.noSwitch, goos.Frames(base, 1), EntryNoSwitchText, "no-switch handler page")
	return err
}
