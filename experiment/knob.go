package experiment

import (
	"strings"

	"github.com/ptilab/ptilab/experiment/sites"
)

// Mitigation is a speculative-execution mitigation of Linux's entry path,
// one knob of the mitigated flavour: an index into knobRows, and the bit
// of its site (package sites).
type Mitigation uint8

// The knobs, numbered as package sites numbers them.
const (
	VERW      Mitigation = sites.VERW
	IBRS      Mitigation = sites.IBRS
	IBPB      Mitigation = sites.IBPB
	RSB       Mitigation = sites.RSB
	BHB       Mitigation = sites.BHB
	LFENCE    Mitigation = sites.LFENCE
	Retpoline Mitigation = sites.Retpoline
	L1D       Mitigation = sites.L1D
)

// Acts says where a knob acts.
type Acts uint8

const (
	// AtKernelEntry: in the trampoline, on the way in.
	AtKernelEntry Acts = 1 << iota
	// AtKernelExit: in the trampoline, on the way back to ring 3.
	AtKernelExit
	// AtDispatch: on the system call's dispatch.
	AtDispatch
	// AtProcessSwitch: in the tasks kernel's context switch to a task of
	// another process.
	AtProcessSwitch
	// AtASIExit: an action of the asi modes' transition back to the
	// nonsensitive table on the way to ring 3 (Config.ASIActions; pti's
	// asi.go), run only when the kernel went to the sensitive table.
	AtASIExit
)

// onEntryPath are the places of the mitigated flavour's knobs.
const onEntryPath = AtKernelEntry | AtKernelExit | AtDispatch | AtProcessSwitch

// Need is what a CPU must have for a knob, an entry or a mode to run (beyond the
// instructions every x86-64 CPU runs).
type Need uint8

const (
	// NeedsNothing: the knob's instructions run everywhere.
	NeedsNothing Need = iota
	// NeedsSpecCtrl: IA32_SPEC_CTRL (CPUID.(EAX=07H,ECX=0):EDX[26]).
	NeedsSpecCtrl
	// NeedsPredCmd: IA32_PRED_CMD (CPUID.(EAX=07H,ECX=0):EDX[26]).
	NeedsPredCmd
	// NeedsFRED: FRED event delivery (CPUID.(EAX=07H,ECX=1):EAX[17]).
	NeedsFRED
	// NeedsLASS: linear-address-space separation (CPUID.(EAX=07H,ECX=1):EAX[6]).
	NeedsLASS
	// NeedsFlushCmd: IA32_FLUSH_CMD (10BH) with L1D_FLUSH
	// (CPUID.(EAX=07H,ECX=0):EDX[28]).
	NeedsFlushCmd
)

// KnobRow is what a mitigation knob is.
type KnobRow struct {
	// Name is the knob's name in plans, records ("verw+ibrs") and tables.
	Name string
	// Acts is where it acts: pti.PlanMitigations puts a process-switch
	// knob in the tasks kernel's context switch and the others in the
	// trampoline's sites.
	Acts Acts
	// Needs is what the CPU must have; NeedText says it as an
	// unsupported row does.
	Needs    Need
	NeedText string
	// In32 reports whether Linux's 32-bit entry (arch/x86/entry/entry_32.S,
	// Linux 6.6) has it: IBRS_ENTER/EXIT, clear_bhb_loop and the SWAPGS
	// fence are entry_64.S's only.
	In32 bool
	// Linux is Linux's name for it, and where it lives.
	Linux string
}

// knobRows are the knobs, in package sites' order.
var knobRows = [sites.Knobs]KnobRow{
	VERW: {Name: "verw", Acts: AtKernelExit | AtASIExit, In32: true,
		Linux: "CLEAR_CPU_BUFFERS (arch/x86/include/asm/nospec-branch.h)"},
	IBRS: {Name: "ibrs", Acts: AtKernelEntry | AtKernelExit, Needs: NeedsSpecCtrl,
		NeedText: "no IA32_SPEC_CTRL (CPUID.(EAX=07H,ECX=0):EDX[26])",
		Linux:    "IBRS_ENTER, IBRS_EXIT (arch/x86/entry/calling.h)"},
	IBPB: {Name: "ibpb", Acts: AtProcessSwitch, Needs: NeedsPredCmd, In32: true,
		NeedText: "no IA32_PRED_CMD (CPUID.(EAX=07H,ECX=0):EDX[26])",
		Linux:    "cond_mitigation's IBPB (arch/x86/mm/tlb.c)"},
	RSB: {Name: "rsb", Acts: AtProcessSwitch | AtASIExit, In32: true,
		Linux: "FILL_RETURN_BUFFER in __switch_to_asm (X86_FEATURE_RSB_CTXSW)"},
	BHB: {Name: "bhb", Acts: AtKernelEntry,
		Linux: "CLEAR_BRANCH_HISTORY, clear_bhb_loop (arch/x86/entry/entry_64.S)"},
	LFENCE: {Name: "lfence", Acts: AtKernelEntry,
		Linux: "FENCE_SWAPGS_KERNEL_ENTRY (arch/x86/entry/calling.h)"},
	Retpoline: {Name: "retpoline", Acts: AtDispatch, In32: true,
		Linux: "__x86_indirect_thunk_r11 (arch/x86/lib/retpoline.S)"},
	L1D: {Name: "l1d", Acts: AtASIExit, Needs: NeedsFlushCmd,
		NeedText: "no IA32_FLUSH_CMD (CPUID.(EAX=07H,ECX=0):EDX[28])",
		Linux:    "l1d_flush_hw (arch/x86/mm/tlb.c, PR_SPEC_L1D_FLUSH), vmx_l1d_flush (arch/x86/kvm/vmx/vmx.c)"},
}

var knobs = newTable[Mitigation]("mitigation", knobRows[:], func(r KnobRow) string { return r.Name })

// Mitigations returns every knob, in the rows' order.
func Mitigations() []Mitigation { return knobs.all() }

// ParseMitigation returns the knob named name.
func ParseMitigation(name string) (Mitigation, error) { return knobs.parse(name) }

// EntryMitigations are the mitigated flavour's knobs, in the rows'
// order: those that act on the system call's path or in the context
// switch (the ladder's rungs, Config.Knobs).
func EntryMitigations() []Mitigation { return actingAt(onEntryPath) }

// ASIActions are the knobs that can act on the asi modes' way back to
// the nonsensitive table (AtASIExit; Config.ASIActions), in the rows'
// order.
func ASIActions() []Mitigation { return actingAt(AtASIExit) }

// actingAt are the knobs that act at one of where's places.
func actingAt(where Acts) []Mitigation {
	var out []Mitigation
	for _, m := range Mitigations() {
		if m.Row().Acts&where != 0 {
			out = append(out, m)
		}
	}
	return out
}

// Row returns m's row.
func (m Mitigation) Row() KnobRow { return knobs.row(m) }

func (m Mitigation) String() string { return knobs.name(m) }

// Site is m's bit in a trampoline's site word (package sites).
func (m Mitigation) Site() uint32 { return 1 << m }

// Knobs is a set of mitigations: bit m for Mitigation m (the site bits).
type Knobs uint16

// KnobsOf is the set of ms.
func KnobsOf(ms ...Mitigation) Knobs {
	var k Knobs
	for _, m := range ms {
		k |= 1 << m
	}
	return k
}

// Has reports whether k holds m.
func (k Knobs) Has(m Mitigation) bool { return k&(1<<m) != 0 }

// List is k's knobs in the rows' order.
func (k Knobs) List() []Mitigation {
	var out []Mitigation
	for _, m := range Mitigations() {
		if k.Has(m) {
			out = append(out, m)
		}
	}
	return out
}

// names are k's knobs' names joined by ", ".
func (k Knobs) names() string { return strings.ReplaceAll(k.String(), "+", ", ") }

// ActAt reports whether every knob of k acts at one of where's places.
func (k Knobs) ActAt(where Acts) bool {
	for _, m := range k.List() {
		if m.Row().Acts&where == 0 {
			return false
		}
	}
	return true
}

// Knobs32 are the knobs Linux's 32-bit entry has (KnobRow.In32).
func Knobs32() Knobs {
	var k Knobs
	for _, m := range EntryMitigations() {
		if m.Row().In32 {
			k |= KnobsOf(m)
		}
	}
	return k
}

// String names k: "none", or its knobs joined by "+" ("verw+ibrs").
func (k Knobs) String() string {
	if k == 0 {
		return "none"
	}
	var s []string
	for _, m := range k.List() {
		s = append(s, m.String())
	}
	return strings.Join(s, "+")
}

// ParseKnobs parses a Knobs.String: "none" or names joined by "+".
func ParseKnobs(s string) (Knobs, error) {
	if s == "none" || s == "" {
		return 0, nil
	}
	var k Knobs
	for _, n := range strings.Split(s, "+") {
		m, err := ParseMitigation(n)
		if err != nil {
			return 0, err
		}
		k |= KnobsOf(m)
	}
	return k, nil
}
