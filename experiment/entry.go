package experiment

import "slices"

// Flavour is a shape of the system-call trampoline: an index into
// flavourRows.
type Flavour uint8

// The flavours.
const (
	Minimal Flavour = iota
	Linux
	Mitigated
)

// FlavourRow is what a trampoline flavour is.
type FlavourRow struct {
	// Name is the flavour's name in plans, records and tables.
	Name string
	// PtRegs: the trampoline builds a pt_regs frame (Linux's struct
	// pt_regs), which the tasks kernel's context switch needs.
	PtRegs bool
	// Knobs: the trampoline has a site per mitigation knob
	// (Config.Knobs); the other flavours take no knobs.
	Knobs bool
}

// flavourRows are the flavours.
var flavourRows = [...]FlavourRow{
	// minimal: SWAPGS, stack switch, CR3 switch, dispatch, switch back,
	// return: the mechanism alone.
	Minimal: {Name: "minimal"},
	// linux: also saves and restores a full pt_regs frame, clears the
	// registers and checks that SYSRET is safe, as Linux's
	// entry_SYSCALL_64 (and entry_SYSENTER_32 in the 32-bit world).
	Linux: {Name: "linux", PtRegs: true},
	// mitigated: the linux flavour's trampoline with a site for each
	// speculation mitigation of Linux's entry, turned on by the knobs.
	Mitigated: {Name: "mitigated", PtRegs: true, Knobs: true},
}

var flavours = newTable[Flavour]("flavour", flavourRows[:], func(r FlavourRow) string { return r.Name })

// Flavours returns every flavour, in the rows' order.
func Flavours() []Flavour { return flavours.all() }

// ParseFlavour returns the flavour named name.
func ParseFlavour(name string) (Flavour, error) { return flavours.parse(name) }

// Row returns f's row.
func (f Flavour) Row() FlavourRow { return flavours.row(f) }

func (f Flavour) String() string { return flavours.name(f) }

// PtRegs reports whether the flavour's trampoline builds a pt_regs frame.
func (f Flavour) PtRegs() bool { return f.Row().PtRegs }

// Entry is a way into the kernel: an index into entryRows.
type Entry uint8

// The entries.
const (
	Syscall Entry = iota
	Sysenter
	Int80
	FRED
)

// EntryRow is what an entry is.
type EntryRow struct {
	// Name is the entry's name in plans, records and tables.
	Name string
	// Instruction and Return name the instructions in and out, for
	// headings.
	Instruction, Return string
	// World is the world the entry belongs to.
	World Width
	// Copies: the linux flavour's trampoline of this entry has a choice
	// of pt_regs copy method (Config.Copy).
	Copies bool
	// Flavours are the flavours the entry has trampolines for, nil for
	// every flavour of the mode; Switches are the kinds of CR3 switch
	// (ModeRow.Switch) whose modes have its trampolines: every entry has
	// NoSwitch's and AtEntry's.
	Flavours []Flavour
	Switches []Switch
	// Needs is what the CPU must have beyond its world's instructions;
	// NeedText says it as an unsupported row does.
	Needs    Need
	NeedText string
	// Default: a plan without an entries line runs it where the CPU has
	// what it Needs (and leaves it out with one line elsewhere).
	Default bool
	// Events: the entry delivers the CPU's exceptions and NMIs too (FRED:
	// the IDT is not used), so the isolation probe's faults are read by it
	// as well as by its world's probe entry.
	Events bool
}

// entryRows are the entries; a world's first is its default (the one the
// work curve and sched-messaging use).
var entryRows = [...]EntryRow{
	// syscall: SYSCALL, back by SYSRETQ (or IRETQ): the 64-bit world's.
	Syscall: {Name: "syscall", Instruction: "SYSCALL", Return: "SYSRETQ", World: W64, Default: true,
		Switches: []Switch{InDispatch, InDispatchExceptChosen, OnSensitiveFault}},
	// sysenter: SYSENTER through the vsyscall routine (Linux's
	// __kernel_vsyscall), back by SYSEXIT: the 32-bit world's default.
	Sysenter: {Name: "sysenter", Instruction: "SYSENTER", Return: "SYSEXIT", World: W32, Copies: true, Default: true},
	// int80: INT 0x80 through a DPL-3 gate, back by IRET.
	Int80: {Name: "int80", Instruction: "INT 0x80", Return: "IRET", World: W32, Default: true},
	// fred: SYSCALL delivered by FRED (CR4.FRED) at IA32_FRED_CONFIG's
	// entry point in the entry area, with a hardware-built frame, back by
	// ERETU: Linux's asm_fred_entrypoint_user (arch/x86/entry/
	// entry_64_fred.S, 6.9+), with the CR3 switch of ptilab's SYSCALL
	// trampolines under isolation (Linux's FRED entry has none).
	FRED: {Name: "fred", Instruction: "SYSCALL (FRED)", Return: "ERETU", World: W64,
		Flavours: []Flavour{Minimal, Linux}, Needs: NeedsFRED,
		NeedText: "no FRED (CPUID.(EAX=07H,ECX=1):EAX[17])", Default: true, Events: true},
}

var entries = newTable[Entry]("entry", entryRows[:], func(r EntryRow) string { return r.Name })

// Entries returns the entries of world w, its default first.
func Entries(w Width) []Entry {
	var out []Entry
	for _, e := range entries.all() {
		if e.Row().World == w {
			out = append(out, e)
		}
	}
	return out
}

// HasSwitch reports whether e has trampolines for the modes whose CR3
// switch is of kind k.
func (e Entry) HasSwitch(k Switch) bool {
	return k == NoSwitch || k == AtEntry || slices.Contains(e.Row().Switches, k)
}

// ParseEntry returns the entry named name.
func ParseEntry(name string) (Entry, error) { return entries.parse(name) }

// Row returns e's row.
func (e Entry) Row() EntryRow { return entries.row(e) }

func (e Entry) String() string { return entries.name(e) }

// Copy is how a linux trampoline copies pt_regs between the entry stack
// and the task stack: an index into copyRows.
type Copy uint8

// The copy methods.
const (
	Movsl Copy = iota
	Movsb
	Trim
	Direct
)

// copyRows name the copy methods.
var copyRows = [...]string{
	// movsl: REP MOVSL both ways, the 17 words of pt_regs (the default).
	Movsl: "movsl",
	// movsb: REP MOVSB both ways, 68 bytes.
	Movsb: "movsb",
	// trim8: REP MOVSL in; out only EFLAGS and EAX, 8 bytes, as Linux's
	// SYSEXIT path.
	Trim: "trim8",
	// direct: no copy in (pt_regs built on the task stack after the CR3
	// switch), out as trim8: Linux's entry_SYSENTER_32 as merged in 4.19.
	Direct: "direct",
}

var copies = newTable[Copy]("copy method", copyRows[:], func(name string) string { return name })

// Copies returns every copy method, the default first.
func Copies() []Copy { return copies.all() }

// ParseCopy returns the copy method named name.
func ParseCopy(name string) (Copy, error) { return copies.parse(name) }

func (c Copy) String() string { return copies.name(c) }
