package pti

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/experiment/sites"
)

// The speculative-execution mitigations of Linux's entry path (the knobs
// of package experiment's rows), for the mitigated flavour: the linux
// flavour's trampoline with a site per knob, and the tasks kernel's
// context switch.
//
// Linux patches each site with ALTERNATIVE at boot (the disabled site is
// NOPs or a JMP over it). ptilab tests and branches instead: each site of
// the mitigated trampoline is TEST of a bit of entryData.Sites and a JEQ
// over the site's code (the siteX bits), so one copy of the trampoline
// runs every set of knobs and the plain linux trampoline stays as it was.
// A disabled site costs that TEST and the taken JEQ: the mitigated
// flavour's "none" row against the linux flavour's null call says how
// much (the ladder table prints it).
//
// What each knob does here: verw, VERW of the kernel data selector just
// before SYSRETQ or IRETQ, as Linux's CLEAR_CPU_BUFFERS
// (arch/x86/include/asm/nospec-branch.h: verw mds_verw_sel, which holds
// __KERNEL_DS); with MD_CLEAR (CPUID.(07H,0):EDX[10]) it overwrites the
// CPU's buffers, without it the instruction runs and clears nothing
// (Linux: "Clear CPU buffers attempted, no microcode"). ibrs,
// IA32_SPEC_CTRL.IBRS written on entry and cleared before the return, as
// Linux's IBRS_ENTER and IBRS_EXIT (arch/x86/entry/calling.h); with
// enhanced IBRS (IA32_ARCH_CAPABILITIES.IBRS_ALL) it is set once for the
// run and the sites stay off, as Linux's eIBRS mode. ibpb,
// IA32_PRED_CMD.IBPB written when the tasks kernel switches to a task of
// another process (Linux: switch_mm_irqs_off, cond_mitigation, with IBPB
// always on). rsb, the return stack buffer stuffed with 32 harmless
// entries on such a switch, as Linux's FILL_RETURN_BUFFER with
// RSB_CLEAR_LOOPS (__switch_to_asm, X86_FEATURE_RSB_CTXSW), which Linux
// runs on every switch, between threads too: here it rides on the CR3
// load (tasks.switchMM), so that the plain switch carries no test of the
// knob. bhb, Linux's clear_bhb_loop on entry (arch/x86/entry/entry_64.S,
// CLEAR_BRANCH_HISTORY), or, where IA32_SPEC_CTRL has BHI_DIS_S
// (CPUID.(07H,2):EDX[4]), that bit set once for the run instead. lfence,
// LFENCE after the entry's SWAPGS, as Linux's FENCE_SWAPGS_KERNEL_ENTRY
// (arch/x86/entry/calling.h; Linux puts it on the exception entries'
// conditional SWAPGS, not on SYSCALL's). retpoline, the dispatch's
// indirect call through a retpoline thunk, as Linux's
// __x86_indirect_thunk_r11 (arch/x86/lib/retpoline.S).

// SpecCaps are the CPU's speculation controls the knobs use: from CPUID
// (amd64.Features) and IA32_ARCH_CAPABILITIES.
type SpecCaps struct {
	SpecCtrl bool // IA32_SPEC_CTRL with IBRS
	PredCmd  bool // IA32_PRED_CMD with IBPB
	MDClear  bool // VERW clears the CPU buffers
	EIBRS    bool // IA32_ARCH_CAPABILITIES.IBRS_ALL: IBRS set once stays effective
	BHIDisS  bool // IA32_SPEC_CTRL.BHI_DIS_S
	FlushCmd bool // IA32_FLUSH_CMD with L1D_FLUSH
}

// specCaps are this CPU's, read by Setup.
var specCaps SpecCaps

// CPUIDCaps are this CPU's speculation controls as CPUID enumerates them
// (amd64.Features), without IA32_ARCH_CAPABILITIES' EIBRS: what the
// knobs' Needs are checked against in a world that reads no MSR for it.
func CPUIDCaps() SpecCaps {
	f := &amd64.Features
	return SpecCaps{SpecCtrl: f.SpecCtrl, PredCmd: f.PredCmd, MDClear: f.MDClear, BHIDisS: f.SpecCtrl && f.BHICtrl, FlushCmd: f.L1DFlush}
}

// readSpecCaps reads this CPU's speculation controls: IA32_ARCH_CAPABILITIES
// only where CPUID enumerates it, #GP-safe.
func readSpecCaps() SpecCaps {
	f := &amd64.Features
	c := CPUIDCaps()
	if f.ArchCaps {
		if v, ok := amd64.ReadMSRSafe(amd64.MSR_IA32_ARCH_CAPABILITIES); ok {
			c.EIBRS = c.SpecCtrl && v&amd64.ARCH_CAP_IBRS_ALL != 0
		}
	}
	return c
}

// Spec returns the speculation controls Setup read from this CPU.
func Spec() SpecCaps { return specCaps }

// Sites of the mitigated trampoline: the bits of entryData.Sites that
// turn each on (go_asm.h: const_siteX), numbered once for both worlds by
// package experiment/sites.
const (
	siteVERW      = sites.SiteVERW      // VERW before SYSRETQ and IRETQ
	siteIBRS      = sites.SiteIBRS      // IA32_SPEC_CTRL written on entry and before the return
	siteBHB       = sites.SiteBHB       // clear_bhb_loop after the pt_regs frame
	siteLFENCE    = sites.SiteLFENCE    // LFENCE after SWAPGS
	siteRetpoline = sites.SiteRetpoline // the dispatch through the retpoline thunk

	// The asi modes' actions on the way back (asiActions).
	siteRSB = sites.SiteRSB // the RSB stuffed
	siteL1D = sites.SiteL1D // IA32_FLUSH_CMD.L1D_FLUSH
)

// MitigationPlan is how a set of knobs runs on a CPU: the trampoline's
// sites, IA32_SPEC_CTRL's bits set once for the run, and the tasks
// kernel's context-switch knobs.
type MitigationPlan struct {
	Sites    uint64 // entryData.Sites
	SpecOnce uint64 // IA32_SPEC_CTRL bits set for the whole run (eIBRS's IBRS, BHI_DIS_S)
	IBPB     bool   // IA32_PRED_CMD.IBPB on a switch to another process
	RSB      bool   // RSB stuffing on a switch to another process
}

// Has reports whether a CPU with caps has what a knob needs
// (experiment.KnobRow.Needs).
func (caps SpecCaps) Has(n experiment.Need) bool {
	switch n {
	case experiment.NeedsSpecCtrl:
		return caps.SpecCtrl
	case experiment.NeedsPredCmd:
		return caps.PredCmd
	case experiment.NeedsFlushCmd:
		return caps.FlushCmd
	}
	return true
}

// CPUHas reports whether this CPU has what n names: FRED and LASS from
// CPUID, the speculation controls as Setup read them (SpecCaps.Has).
func CPUHas(n experiment.Need) bool {
	switch n {
	case experiment.NeedsFRED:
		return amd64.Features.FRED
	case experiment.NeedsLASS:
		return amd64.Features.LASS
	}
	return specCaps.Has(n)
}

// CheckKnobs says which knob of k a CPU with caps lacks what it needs
// for, as "<knob>: <its row's NeedText>" wrapping ErrUnsupported; nil when
// it has all they need. Both worlds check their knobs by it.
func CheckKnobs(k experiment.Knobs, caps SpecCaps) error {
	for _, m := range k.List() {
		if r := m.Row(); !caps.Has(r.Needs) {
			return fmt.Errorf("%v: %s: %w", m, r.NeedText, ErrUnsupported)
		}
	}
	return nil
}

// PlanMitigations decides how knobs k run on a CPU with caps, or says
// which knob it lacks (CheckKnobs): ibrs needs IA32_SPEC_CTRL, ibpb
// IA32_PRED_CMD; the others are instructions every x86-64 CPU runs (verw
// clears buffers only with MD_CLEAR). Where a knob acts is its row's
// (experiment.KnobRow.Acts): a process-switch knob is the tasks kernel's,
// the others the trampoline's sites, but for ibrs with eIBRS and bhb with
// BHI_DIS_S, set once for the run in IA32_SPEC_CTRL.
func PlanMitigations(k experiment.Knobs, caps SpecCaps) (MitigationPlan, error) {
	var p MitigationPlan
	if err := CheckKnobs(k, caps); err != nil {
		return p, err
	}
	for _, m := range k.List() {
		switch {
		case m == experiment.IBRS && caps.EIBRS:
			p.SpecOnce |= amd64.SPEC_CTRL_IBRS // eIBRS: set once, the sites stay off
		case m == experiment.BHB && caps.BHIDisS:
			p.SpecOnce |= amd64.SPEC_CTRL_BHI_DIS_S
		case m.Row().Acts&experiment.AtProcessSwitch != 0:
			p.IBPB = p.IBPB || m == experiment.IBPB
			p.RSB = p.RSB || m == experiment.RSB
		default: // the trampoline's (entry, exit, dispatch): the site's bit is the knob's
			p.Sites |= uint64(m.Site())
		}
	}
	return p, nil
}

// How describes how knob m runs on a CPU with caps, for the tables: ""
// when as its name says, else the variant ("eIBRS: set once", "BHI_DIS_S:
// set once", "no MD_CLEAR: clears nothing").
func How(m experiment.Mitigation, caps SpecCaps) string {
	switch {
	case m == experiment.VERW && !caps.MDClear:
		return "no MD_CLEAR: VERW clears nothing"
	case m == experiment.IBRS && caps.SpecCtrl && caps.EIBRS:
		return "eIBRS: set once for the run"
	case m == experiment.BHB && caps.BHIDisS:
		return "BHI_DIS_S set once for the run"
	}
	return ""
}

// setSpecCtrl writes IA32_SPEC_CTRL's run value for plan p, the value the
// IBRS sites write on entry and before the return, and returns the value
// to restore after the run and whether to; without IA32_SPEC_CTRL there
// is nothing to write.
func setSpecCtrl(d *entryData, p MitigationPlan) (restore uint64, write bool) {
	d.SpecCtrlEntry, d.SpecCtrlExit = 0, 0
	if !specCaps.SpecCtrl || p.SpecOnce == 0 && p.Sites&siteIBRS == 0 {
		return 0, false
	}
	prior, ok := amd64.ReadMSRSafe(amd64.MSR_IA32_SPEC_CTRL)
	if !ok {
		return 0, false
	}
	base := prior | p.SpecOnce
	d.SpecCtrlEntry, d.SpecCtrlExit = base|amd64.SPEC_CTRL_IBRS, base
	amd64.WRMSR(amd64.MSR_IA32_SPEC_CTRL, base)
	return prior, true
}
