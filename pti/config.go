package pti

import (
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
)

// ErrUnsupported is returned for a configuration the CPU cannot run.
var ErrUnsupported = errors.New("not supported by this CPU")

// Switch is what the 64-bit world switches for one configuration, decided
// once by Plan, as gVisor's ring0 SwitchOpts: the SYSCALL trampoline (a
// routine of the entry text or of the deferred entry text, resolved to
// its address when a run starts), the tables (the mode's table class and
// global pages: Process.space), how the CR3 values are composed (KernelCR3
// and UserCR3 of the mode's row: PCID or not, isolated or not), CR4's
// PGE and PCIDE, the dispatcher of the deferred trampolines, and the
// mitigation plan: the trampoline's site bits, IA32_SPEC_CTRL's bits set
// once for the run, IBPB and RSB stuffing on a switch between processes.
// Its fields are unexported: a Switch is a validated configuration and
// cannot be changed into one that is not.
type Switch struct {
	c     experiment.Config
	tramp trampoline
	mit   MitigationPlan
	// asiActions are the asi actions' site bits (entryData.ASIActions).
	asiActions uint64
}

// Plan validates c once for this CPU and returns what to switch for it:
// c.Check first (any CPU: the world, the mode's trampolines, the knobs'
// flavour), then this CPU's features: FRED for the FRED entry and LASS
// for the lass mode (their rows' Needs), CPUID.01H:ECX.PCID for a PCID mode
// (SDM Vol. 3A, 4.10.1), PGE for global pages, and what each knob needs
// (its row's Needs, said by its NeedText). An unsupported configuration
// is an error wrapping ErrUnsupported, or the model's error (ErrNoTrampoline)
// that says why no CPU runs it.
func Plan(c experiment.Config) (Switch, error) {
	if c.World != experiment.W64 {
		return Switch{}, fmt.Errorf("%v: the 64-bit world enters by SYSCALL or FRED only: %w", c, ErrUnsupported)
	}
	if err := c.Check(); err != nil {
		return Switch{}, err
	}
	t, ok := trampolines[trampolineKey{c.Entry, c.Flavour, c.Mode}]
	if !ok {
		return Switch{}, fmt.Errorf("%v: %w", c, experiment.ErrNoTrampoline)
	}
	if r := c.Entry.Row(); !CPUHas(r.Needs) {
		return Switch{}, fmt.Errorf("%v: %s: %w", c, r.NeedText, ErrUnsupported)
	}
	if r := c.Mode.Row(); !CPUHas(r.Needs) {
		return Switch{}, fmt.Errorf("%v: %s: %w", c, r.NeedText, ErrUnsupported)
	}
	if c.Mode.PCID() && !amd64.Features.PCID {
		return Switch{}, fmt.Errorf("%v: PCID: %w", c, ErrUnsupported)
	}
	if c.Global && !amd64.Features.PGE {
		return Switch{}, fmt.Errorf("%v: global pages: %w", c, ErrUnsupported)
	}
	mit, err := PlanMitigations(c.Knobs, specCaps)
	if err != nil {
		return Switch{}, fmt.Errorf("%v: %w", c, err)
	}
	if err := CheckKnobs(c.ASIActions, specCaps); err != nil {
		return Switch{}, fmt.Errorf("%v: asi actions: %w", c, err)
	}
	return Switch{c: c, tramp: t, mit: mit, asiActions: asiSites(c.ASIActions)}, nil
}

// Config is the configuration s was planned for.
func (s Switch) Config() experiment.Config { return s.c }

// Mitigations is how s's knobs run on this CPU.
func (s Switch) Mitigations() MitigationPlan { return s.mit }

// RegsInR11 reports whether s's trampoline passes its pt_regs frame's
// address to the handlers in R11 (the deferred linux trampolines, whose
// frame is on the trampoline stack while the handler runs on the kernel
// stack) rather than leaving the frame just above the handler's return
// address (SYS_LINUX).
func (s Switch) RegsInR11() bool { return s.c.Mode.Deferred() && s.c.Flavour == experiment.Linux }

// runCR4 is CR4 during a run under s, from Go's cr4: PGE where the CPU
// has it (the G bits decide what is global), PCIDE with a PCID mode, FRED
// with the FRED entry, and neither TSD (ring 3 reads the TSC) nor SMAP
// (the tasks kernel copies user memory without STAC).
func (s Switch) runCR4(cr4 uint64) uint64 {
	cr4 &^= amd64.CR4_PGE | amd64.CR4_PCIDE | amd64.CR4_TSD | amd64.CR4_SMAP | amd64.CR4_FRED
	if amd64.Features.PGE {
		cr4 |= amd64.CR4_PGE
	}
	if s.c.Mode.PCID() {
		cr4 |= amd64.CR4_PCIDE
	}
	if usesFRED(s.c) {
		cr4 |= amd64.CR4_FRED
	}
	return cr4
}
