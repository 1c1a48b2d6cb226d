package pti

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/goos"
)

// The FRED entry (experiment.FRED; amd64's fred.go for the architecture).
//
// IA32_FRED_CONFIG names one page-aligned entry point: ring-3 events at
// it, ring-0 events 256 bytes after it. Each FRED trampoline (a flavour
// and a mode, as the SYSCALL trampolines) therefore has a page of its
// own in the entry area, FREDPages pages at EntryFREDText mapped in every
// table as entry text: its ring-3 entry at the page's start, at most 256
// bytes, and a copy of fredEvent, the ring-0 entry, at FREDRing0Entry. A
// run whose entry is FRED points IA32_FRED_CONFIG at its trampoline's
// page, IA32_FRED_RSP0 at the entry stack's top (delivery pushes the FRED
// frame there with the user side's CR3 still loaded, so the stack must be
// mapped in both tables: Linux's PTI has the same need of its entry
// stack), sets CR4.FRED in the run's CR4 and starts the task by ERETU
// (toUserFRED: with CR4.FRED set an IRET to ring 3 is #GP). runExit's CR4
// clears FRED again before Go runs, and so before the 32-bit world and
// every firmware call.
//
// Linux's FRED entry (arch/x86/entry/entry_64_fred.S, FRED_ENTER and
// FRED_EXIT) has no SWITCH_TO_KERNEL_CR3 or SWITCH_TO_USER_CR3, and Linux
// turns FRED off when PTI is forced on (Dave Hansen, "x86/cpu: Disable
// FRED when PTI is forced on", 2026: arch/x86/mm/pti.c). ptilab's on and
// on+pcid rows are the FRED+PTI entry that patch sketches (IA32_FRED_RSP0
// on the entry stack, the SYSCALL trampolines' CR3 switch in the FRED
// entry), to set the switch's cost beside FRED's delivery: an experiment,
// not Linux's code.

// EntryFREDText and FREDPages: the FRED trampolines' pages, after the
// deferred modes' (their frames follow the deferred pages' too).
const (
	EntryFREDText = EntryBase + 0xd000
	FREDPages     = 6
)

// fredRoutines are the FRED trampolines' ring-3 entries, one page each,
// and the ring-0 entry (fredEvent) copied after each at FREDRing0Entry.
type fredRoutines struct {
	FredMinimalOff, FredMinimalOn, FredMinimalPCID uint64
	FredLinuxOff, FredLinuxOn, FredLinuxPCID       uint64
}

// fredText is the trampoline of the FRED page of field off of
// fredRoutines.
func fredText(off uintptr) trampoline {
	return trampoline{fred: true, off: off}
}

// fredFrame is the frame FRED event delivery pushes (amd64.FREDFrameSize
// bytes, FRED specification), as the FRED entries read it: its
// offsets reach the assembly through go_asm.h (fredFrame_Vector ...).
type fredFrame struct {
	ErrorCode, RIP, CS, RFLAGS, RSP uint64
	SS                              uint32 // the selector, and STI/syscall/NMI blocking in bits 16 to 18
	Vector                          uint8  // the event's vector, SS[39:32]
	_                               uint8
	Type                            uint8 // the event's type, SS[51:48] (amd64.FREDType*)
	Info                            uint8 // SS[63:56]: 64-bit mode, nested, instruction length
	EventData                       uint64
	_                               uint64
}

var _ [amd64.FREDFrameSize - unsafe.Sizeof(fredFrame{})]byte
var _ [unsafe.Sizeof(fredFrame{}) - amd64.FREDFrameSize]byte

// The FRED constants the assembly uses (go_asm.h): the event types and
// the SYSCALL vector, where the frame of a ring-3 event is (the entry
// stack's top less the frame, negative for the immediates), the MSRs.
const (
	fredTypeNMI       = amd64.FREDTypeNMI
	fredTypeHardware  = amd64.FREDTypeHardware
	fredTypeOther     = amd64.FREDTypeOther
	fredVectorSyscall = amd64.FREDVectorSyscall
	eFREDFrame        = eEntryStackTop - amd64.FREDFrameSize
	msrFREDConfig     = amd64.MSR_IA32_FRED_CONFIG
	msrFREDRSP0       = amd64.MSR_IA32_FRED_RSP0
	msrFREDStkLvls    = amd64.MSR_IA32_FRED_STKLVLS
)

// placeFRED copies each FRED ring-3 entry (linked at the fields of link)
// to the start of its page and fredEvent (linked at event) after it at
// amd64.FREDRing0Entry; a ring-3 entry longer than that is an error.
func placeFRED(link *fredRoutines, event uint64) error {
	ev, err := code(event)
	if err != nil {
		return fmt.Errorf("pti: fredEvent: %w", err)
	}
	if amd64.FREDRing0Entry+len(ev) > amd64.PageSize {
		return fmt.Errorf("pti: fredEvent (%d bytes) does not fit its FRED page after the ring-3 entry", len(ev))
	}
	lv := reflect.ValueOf(link).Elem()
	at := reflect.ValueOf(&env.fredText).Elem()
	for i := range FREDPages {
		name, addr := lv.Type().Field(i).Name, lv.Field(i).Uint()
		c, err := code(addr)
		if err != nil {
			return fmt.Errorf("pti: %s: %w", name, err)
		}
		if len(c) > amd64.FREDRing0Entry {
			return fmt.Errorf("pti: the FRED ring-3 entry %s is %d bytes: more than the %d before the ring-0 entry", name, len(c), amd64.FREDRing0Entry)
		}
		va := EntryFREDText + uint64(i)*amd64.PageSize
		page := goos.Frames(env.entry+(va-EntryBase), 1)
		copy(page, c)
		copy(page[amd64.FREDRing0Entry:], ev)
		at.Field(i).SetUint(va)
		env.copied = append(env.copied,
			Copied{Name: name, Link: addr, At: va, Size: len(c)},
			Copied{Name: "fredEvent", Link: event, At: va + amd64.FREDRing0Entry, Size: len(ev)})
	}
	return nil
}

// fredExit is where the FRED linux trampolines of mode m go on, in the
// entry text (FRED_LINUX_EXIT; the minimal ones do not use it).
func fredExit(m experiment.Mode) uint64 {
	switch {
	case m.PCID():
		return env.text.FredLinuxExitPCID
	case m.Isolated():
		return env.text.FredLinuxExitOn
	}
	return env.text.FredLinuxExitOff
}

// usesFRED reports whether a run under c enters by FRED.
func usesFRED(c experiment.Config) bool { return c.Entry == experiment.FRED }
