package efi

import "github.com/ptilab/ptilab/amd64"

// EntryState is the firmware's CPU state at the image entry point, for
// the cpu-state record: the control registers, EFER, the segment
// selectors (zero-extended), RFLAGS (its IF says whether the firmware ran
// with interrupts enabled) and TR. Recorded by enter before the kernel
// changes anything.
type EntryState struct {
	CR0, CR3, CR4, EFER        uint64
	CS, SS, DS, ES, FS, GS, TR uint64
	RFLAGS                     uint64
}

// Entry is the firmware's state at entry.
var Entry EntryState

// msrEFER is amd64.MSR_EFER for the assembly (go_asm.h).
const msrEFER = amd64.MSR_EFER

// saveEntryState fills Entry from the CPU. Called by enter; it changes
// RAX, RCX and RDX only.
//
// defined in gate_amd64.s
func saveEntryState()
