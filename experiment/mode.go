package experiment

import "slices"

// Mode is an isolation mode: an index into modeRows.
type Mode uint8

// The isolation modes, in the order plans and tables list them (Off
// first: the others are compared with it).
const (
	Off Mode = iota
	On
	OnPCID
	OnDefer
	OnDeferPCID
	OnNoSwitch
	OnNoSwitchPCID
	LASS
	ASI
	ASIPCID
)

// Switch says where a mode writes CR3 on a system call.
type Switch uint8

const (
	// NoSwitch: never; one table serves ring 3 and the kernel.
	NoSwitch Switch = iota
	// AtEntry: the trampoline switches to the kernel table on entry and
	// back before the return (Linux's SWITCH_TO_KERNEL_CR3,
	// arch/x86/entry/calling.h).
	AtEntry
	// InDispatch: the trampoline enters and leaves on the user table and
	// a dispatcher writes CR3 around the handler (Chartre's RFC "x86/pti:
	// Defer CR3 switch to C code", Linux 5.10-rc4, 2020).
	InDispatch
	// InDispatchExceptChosen: as InDispatch, but chosen system calls
	// (getppid and work) run on the user table with no CR3 write at all:
	// the RFC's next step.
	InDispatchExceptChosen
	// OnSensitiveFault: ring 3 and the kernel run on a nonsensitive table
	// (the kernel but the frames that hold user data); the kernel's page
	// fault on a sensitive frame switches to the sensitive (full) table,
	// and the return to ring 3 switches back (Address Space Isolation:
	// Jackman's RFC series, linuxasi.dev).
	OnSensitiveFault
)

// kind says what modes of switch k are, for errors: "deferred" for
// InDispatch and InDispatchExceptChosen, "asi" for OnSensitiveFault.
func (k Switch) kind() string {
	switch k {
	case InDispatch, InDispatchExceptChosen:
		return "deferred"
	case OnSensitiveFault:
		return "asi"
	}
	return "isolation"
}

// Exposure is a set of areas a mode's user table maps beyond the entry
// area that every isolated mode maps (pti.Exposure gives their ranges).
type Exposure uint8

const (
	// ExposesKernel: the user table is the kernel table (supervisor-only
	// mappings of the whole Go kernel).
	ExposesKernel Exposure = 1 << iota
	// ExposesDispatch: the deferred entry text (trampolines and
	// dispatchers) and the trampoline stack (the task's pt_regs).
	ExposesDispatch
	// ExposesNoSwitchHandlers: copies of the handlers that run without a
	// CR3 write.
	ExposesNoSwitchHandlers
	// ExposesLASSHandlers: copies of the built-in handlers in the upper
	// half, which ring 0 may execute while CR4.LASS is set.
	ExposesLASSHandlers
	// ExposesNonsensitiveKernel: the kernel's mappings, supervisor-only,
	// but the sensitive frames (ASI's nonsensitive address space).
	ExposesNonsensitiveKernel
)

// ModeRow is what an isolation mode is.
type ModeRow struct {
	// Name is the mode's name in plans, records and tables.
	Name string
	// Isolated: two top-level tables, the user one mapping only the
	// task's pages and the entry area (plus Exposes).
	Isolated bool
	// PCID: kernel and user tables tagged by PCID (kernel 1, user
	// 1|1<<11, as Linux's kern_pcid/user_pcid) and CR3 written with
	// NOFLUSH (bit 63). Needs CPUID.01H:ECX.PCID and CR4.PCIDE, which
	// exist only in IA-32e mode (SDM Vol. 3A, 4.10.1).
	PCID bool
	// Switch is where the CR3 switch happens.
	Switch Switch
	// Exposes is what the user table maps beyond the entry area.
	Exposes Exposure
	// Worlds are the worlds with trampolines for the mode.
	Worlds Worlds
	// Flavours are the flavours with trampolines for the mode, in each
	// world of Worlds.
	Flavours []Flavour
	// Base is the mode without PCID: the row whose figures PCID's are
	// set beside (itself for a mode without PCID).
	Base Mode
	// LASS: CR4.LASS (linear-address-space separation, SDM Vol. 3A,
	// chapter 4; CPUID.(EAX=07H,ECX=1):EAX[6]) is set while ring 3 runs, so
	// that a user-mode access to the upper half (bit 63 set) is #GP
	// before any page walk, and ring 0 executes only upper-half code:
	// the entry area's trampolines and copies of the built-in handlers
	// (pti.LASSAreas), never the Go kernel in the lower half.
	LASS bool
	// Needs is what the CPU must have beyond its world (PCID is the
	// PCID field's); NeedText says it as an unsupported row does.
	Needs    Need
	NeedText string
	// Default: a plan without a modes line runs it where the CPU has
	// what it Needs (and leaves it out with one line elsewhere).
	Default bool
}

// modeRows are the isolation modes.
var modeRows = [...]ModeRow{
	Off: {Name: "off", Switch: NoSwitch, Exposes: ExposesKernel, Worlds: In64 | In32,
		Flavours: allFlavours, Base: Off, Default: true},
	On: {Name: "on", Isolated: true, Switch: AtEntry, Worlds: In64 | In32,
		Flavours: allFlavours, Base: On, Default: true},
	OnPCID: {Name: "on+pcid", Isolated: true, PCID: true, Switch: AtEntry,
		Worlds: In64, Flavours: allFlavours, Base: On, Default: true},
	// The deferred modes have no mitigated trampoline.
	OnDefer: {Name: "on-defer", Isolated: true, Switch: InDispatch, Exposes: ExposesDispatch,
		Worlds: In64, Flavours: []Flavour{Minimal, Linux}, Base: OnDefer},
	OnDeferPCID: {Name: "on-defer+pcid", Isolated: true, PCID: true, Switch: InDispatch,
		Exposes: ExposesDispatch, Worlds: In64, Flavours: []Flavour{Minimal, Linux}, Base: OnDefer},
	OnNoSwitch: {Name: "on-noswitch", Isolated: true, Switch: InDispatchExceptChosen,
		Exposes: ExposesDispatch | ExposesNoSwitchHandlers, Worlds: In64,
		Flavours: []Flavour{Minimal, Linux}, Base: OnNoSwitch},
	OnNoSwitchPCID: {Name: "on-noswitch+pcid", Isolated: true, PCID: true, Switch: InDispatchExceptChosen,
		Exposes: ExposesDispatch | ExposesNoSwitchHandlers, Worlds: In64,
		Flavours: []Flavour{Minimal, Linux}, Base: OnNoSwitch},
	// lass: off's one table, with CR4.LASS set while ring 3 runs: what
	// LASS's authors propose instead of a CR3 switch. ptilab's Go kernel
	// runs in the lower half, where LASS forbids ring-0 instruction
	// fetches, so a lass run executes only the entry area's code and the
	// built-in handlers' upper-half copies; a system call whose handler is
	// Go code (the tasks kernel's, lseek's) is unsupported.
	LASS: {Name: "lass", Switch: NoSwitch, Exposes: ExposesKernel | ExposesLASSHandlers,
		Worlds: In64, Flavours: []Flavour{Minimal, Linux}, Base: LASS, LASS: true,
		Needs: NeedsLASS, NeedText: "no LASS (CPUID.(EAX=07H,ECX=1):EAX[6])", Default: true},
	// asi: the user table is the nonsensitive one and the kernel runs on
	// it too; the sensitive (kernel) table is the full one. A system
	// call enters and leaves without a CR3 write unless the kernel
	// touched user data (pti/asi.go).
	ASI: {Name: "asi", Isolated: true, Switch: OnSensitiveFault, Exposes: ExposesNonsensitiveKernel,
		Worlds: In64, Flavours: []Flavour{Minimal, Linux}, Base: ASI},
	ASIPCID: {Name: "asi+pcid", Isolated: true, PCID: true, Switch: OnSensitiveFault,
		Exposes: ExposesNonsensitiveKernel, Worlds: In64, Flavours: []Flavour{Minimal, Linux}, Base: ASI},
}

var modes = newTable[Mode]("isolation mode", modeRows[:], func(r ModeRow) string { return r.Name })

// allFlavours are every flavour.
var allFlavours = []Flavour{Minimal, Linux, Mitigated}

// Modes returns every isolation mode, in the rows' order (Off first).
func Modes() []Mode { return modes.all() }

// ParseMode returns the mode named name, or an error listing the names.
func ParseMode(name string) (Mode, error) { return modes.parse(name) }

// Row returns m's row (the zero row for a mode beyond the rows).
func (m Mode) Row() ModeRow { return modes.row(m) }

func (m Mode) String() string { return modes.name(m) }

// Isolated reports whether the mode has separate user tables.
func (m Mode) Isolated() bool { return m.Row().Isolated }

// PCID reports whether the mode tags the TLB by PCID.
func (m Mode) PCID() bool { return m.Row().PCID }

// Deferred reports whether the mode's trampolines enter and leave on the
// user table and leave the CR3 switch to a dispatcher.
func (m Mode) Deferred() bool {
	s := m.Row().Switch
	return s == InDispatch || s == InDispatchExceptChosen
}

// DefaultModes splits the Default rows' modes by has, which says whether
// the CPU has a Need: those a plan without a modes line runs, and those it
// leaves out. NeedsNothing must be had: DefaultModes(Nothing) gives the
// modes of any CPU.
func DefaultModes(has func(Need) bool) (run, leftOut []Mode) {
	for _, m := range Modes() {
		switch r := m.Row(); {
		case !r.Default:
		case r.Needs == NeedsNothing || has(r.Needs):
			run = append(run, m)
		default:
			leftOut = append(leftOut, m)
		}
	}
	return run, leftOut
}

// Nothing has NeedsNothing only: the needs of any CPU.
func Nothing(n Need) bool { return n == NeedsNothing }

// ASI reports whether the mode switches to the sensitive table on the
// kernel's fault on user data (OnSensitiveFault).
func (m Mode) ASI() bool { return m.Row().Switch == OnSensitiveFault }

// NoSwitch reports whether chosen system calls run on the user table
// without a CR3 write.
func (m Mode) NoSwitch() bool { return m.Row().Switch == InDispatchExceptChosen }

// In reports whether world w has trampolines for m.
func (m Mode) In(w Width) bool { return m.Row().Worlds.Has(w) }

// Has reports whether m has trampolines of flavour f (in each world it
// is in).
func (m Mode) Has(f Flavour) bool { return slices.Contains(m.Row().Flavours, f) }

// TableClass is the mode whose tables m uses: its Base (a PCID mode's
// tables are its base mode's; only CR3 and CR4 differ).
func (m Mode) TableClass() Mode { return m.Row().Base }
