// Package pti is ptilab's page-table isolation: the address spaces of the
// benchmark processes for each isolation mode, the entry area mapped in
// both of a process's tables, the PCID and NOFLUSH arithmetic of CR3,
// global pages, and the trampolines through which ring 3 enters and leaves
// the kernel. A task is a thread of ring 3: it runs a program (Program) in
// a process (Process), alone (Exec) or with others under the tasks kernel
// (package tasks).
//
// The model is Linux's (arch/x86/mm/pti.c, arch/x86/entry/entry_64.S,
// arch/x86/entry/calling.h): with isolation on, a process has two
// top-level tables, the user one the upper 4 KiB of an 8 KiB-aligned pair;
// the user table maps the process's pages and the entry area (Linux's
// cpu_entry_area: entry text, GDT, IDT, TSS, entry stack) and nothing else
// of the kernel; the trampolines switch CR3 on every entry and exit.
package pti

// A benchmark process's address space: PML4 slot 255, the last of the
// lower half (the Go runtime's mappings end below it: goos.VMTop).
const (
	UserPML4Slot   = 255
	UserBase       = 0x00007f8000000000
	UserCode       = UserBase + 0x1000   // the programs' code, up to 4 pages
	UserData       = UserBase + 0x10000  // the process's data: results, probe page
	UserStackTop   = UserBase + 0x100000 // the process's stack pages end here
	UserCodePages  = 4
	UserDataPages  = 16
	UserStackPages = 4
)

// The entry area: the top 2 MiB of the address space (PML4 511, PDPT 511,
// PD 511), at the same address in a process's kernel and user tables, so that
// the trampolines reach it with absolute 32-bit displacements. Its pages:
const (
	EntryBase     = 0xffffffffffe00000
	EntryText     = EntryBase + 0x0000 // the trampolines, copied here (2 pages)
	EntryData     = EntryBase + 0x2000 // per-CPU data: scratch, CR3 values, syscall table
	EntryDesc     = EntryBase + 0x3000 // GDT and TSS
	EntryIDT      = EntryBase + 0x4000 // IDT: 256 gates of 16 bytes
	EntryStack    = EntryBase + 0x5000 // the entry stack (2 pages): exceptions (IST1) and the way to ring 3
	EntryStackTop = EntryBase + 0x7000
	// Stacks of a page each for the exceptions that can strike while the
	// entry stack is in use, at these tops: #DF (IST2), NMI (IST3), #MC
	// (IST4).
	EntryISTDF  = EntryBase + 0x8000
	EntryISTNMI = EntryBase + 0x9000
	EntryISTMC  = EntryBase + 0xa000
	EntryPages  = 10

	EntryTextPages = 2
)

// The deferred modes' pages of the entry area (OnDefer, OnNoSwitch and
// their PCID variants), after the IST stacks, in DeferPages frames that
// follow the entry area's: mapped in both tables of those modes and in
// no table of the others (DeferredAreas, NoSwitchAreas).
const (
	EntryDeferText     = EntryBase + 0xa000 // their trampolines and dispatchers (1 page)
	EntryTrampStack    = EntryBase + 0xb000 // the trampoline stack (1 page): pt_regs, the dispatcher's return address
	EntryTrampStackTop = EntryBase + 0xc000
	EntryNoSwitchText  = EntryBase + 0xc000 // OnNoSwitch's handlers, which run on the user table (1 page)
	DeferPages         = 3
)
