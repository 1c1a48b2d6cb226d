package pti

import (
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
)

// Flavour is a shape of the system-call trampoline.
type Flavour uint8

const (
	// Minimal: SWAPGS, stack switch, CR3 switch, dispatch, switch back,
	// SYSRETQ: the mechanism alone.
	Minimal Flavour = iota
	// Linux: also saves and restores a full pt_regs frame, clears the
	// registers and checks that SYSRET is safe, as Linux's
	// entry_SYSCALL_64.
	Linux
	// Mitigated: the linux flavour's trampoline with a site for each
	// speculation mitigation of Linux's entry (mitigations.go), turned on
	// by Config.Knobs.
	Mitigated
)

var flavourNames = [...]string{Minimal: "minimal", Linux: "linux", Mitigated: "mitigated"}

// PtRegs reports whether the flavour's trampoline builds a pt_regs frame,
// which the tasks kernel's context switch needs.
func (f Flavour) PtRegs() bool { return f == Linux || f == Mitigated }

// Flavours returns every trampoline flavour: what a plan may name.
func Flavours() []Flavour {
	out := make([]Flavour, len(flavourNames))
	for i := range out {
		out[i] = Flavour(i)
	}
	return out
}

func (f Flavour) String() string {
	if int(f) < len(flavourNames) {
		return flavourNames[f]
	}
	return fmt.Sprintf("flavour(%d)", f)
}

// Config is one configuration of the kernel a task runs under.
type Config struct {
	Mode    Mode
	Flavour Flavour
	// Global makes the entry area and the kernel text global pages
	// (PTE.G with CR4.PGE): their TLB entries survive CR3 writes.
	Global bool
	// Knobs are the mitigated flavour's speculation mitigations (none for
	// the other flavours).
	Knobs Knobs
}

func (c Config) String() string {
	if c.Flavour == Mitigated {
		return fmt.Sprintf("%v/%v/%s/%v", c.Mode, c.Flavour, GlobalName(c.Global), c.Knobs)
	}
	return fmt.Sprintf("%v/%v/%s", c.Mode, c.Flavour, GlobalName(c.Global))
}

// GlobalName names a configuration's global-pages setting, as the names of
// configurations of both worlds spell it: "global" or "nonglobal".
func GlobalName(global bool) string {
	if global {
		return "global"
	}
	return "nonglobal"
}

// ErrUnsupported is returned for a configuration the CPU cannot run.
var ErrUnsupported = errors.New("not supported by this CPU")

// Supported reports whether the CPU can run c: there must be a trampoline
// for its flavour and mode (trampolines, deferTrampolines), its mode may
// need PCID (Mode.PCID), Global needs PGE, and its knobs (mitigated
// flavour only) the speculation controls they use (PlanMitigations).
func Supported(c Config) error {
	if _, ok := trampolineAt(trampolineKey{c.Flavour, c.Mode}); !ok {
		return fmt.Errorf("%v: no such trampoline", c)
	}
	if c.Mode.PCID() && !amd64.Features.PCID {
		return fmt.Errorf("%v: PCID: %w", c, ErrUnsupported)
	}
	if c.Global && !amd64.Features.PGE {
		return fmt.Errorf("%v: global pages: %w", c, ErrUnsupported)
	}
	if c.Knobs != 0 && c.Flavour != Mitigated {
		return fmt.Errorf("%v: mitigations %v need the mitigated flavour", c, c.Knobs)
	}
	if _, err := PlanMitigations(c.Knobs, specCaps); err != nil {
		return fmt.Errorf("%v: %w", c, err)
	}
	return nil
}
