package i386pae

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/pti"
)

// Switch is what the 32-bit world switches for one configuration, decided
// once by Plan, as gVisor's ring0 SwitchOpts (and pti.Switch): the blob
// offsets of the SYSENTER trampoline (SYSENTER_EIP) and of the INT 0x80
// gate's target, the tables (isolated or not, global pages: the mode's
// row and the configuration; PAE has no PCID, so CR3 is the PDPT alone),
// the entry the ring-3 programs make their calls by (layout.Entry*) and
// the mitigated trampoline's site bits (layout.CPUData.Sites, numbered by
// package experiment/sites: IBPB and RSB act on a switch to another
// process). Its fields are unexported: a Switch is a validated
// configuration.
type Switch struct {
	c               experiment.Config
	sysenter, int80 uint32 // blob offsets
	entry           uint32 // layout.EntrySysenter or layout.EntryInt80
	sites           uint32 // layout.CPUData.Sites
}

// Plan validates c once for this CPU and returns what to switch for it:
// c.Check first (whatever the CPU: a mode the 32-bit kernel lacks is
// experiment.ErrNotInPAE, a knob Linux's 32-bit entry lacks
// experiment.ErrNotIn32BitEntry), then this CPU's features: SEP for
// SYSENTER, PGE for global pages, and what each knob needs (its row's
// Needs: ibpb's IA32_PRED_CMD, by pti.CheckKnobs), each an error wrapping
// pti.ErrUnsupported.
func Plan(c experiment.Config) (Switch, error) {
	if c.World != experiment.W32 {
		return Switch{}, fmt.Errorf("%v: the 32-bit world enters by SYSENTER or INT 0x80: %w", c, pti.ErrUnsupported)
	}
	if err := c.Check(); err != nil {
		return Switch{}, err
	}
	t, ok := trampolines[trampolineKey{c.Flavour, c.Mode}]
	sysenter, okS := t.sysenter[copyKey{c.Copy, c.Stamps}]
	entry, okE := entries[c.Entry]
	if !ok || !okS || !okE {
		return Switch{}, fmt.Errorf("%v: %w", c, experiment.ErrNoTrampoline)
	}
	switch {
	case c.Entry == experiment.Sysenter && !amd64.Features.SEP:
		return Switch{}, fmt.Errorf("%v: SYSENTER: %w", c, pti.ErrUnsupported)
	case c.Global && !amd64.Features.PGE:
		return Switch{}, fmt.Errorf("%v: global pages: %w", c, pti.ErrUnsupported)
	}
	if err := pti.CheckKnobs(c.Knobs, pti.CPUIDCaps()); err != nil {
		return Switch{}, fmt.Errorf("%v: %w", c, err)
	}
	// Check let through only the knobs the 32-bit entry has: each one's
	// site bit is its knob's.
	return Switch{c: c, sysenter: sysenter, int80: t.int80, entry: entry, sites: uint32(c.Knobs)}, nil
}

// Config is the configuration s was planned for.
func (s Switch) Config() experiment.Config { return s.c }

// CallEntry is the entry the ring-3 programs make their calls by, as
// layout.ParamEntry takes it (layout.EntrySysenter or EntryInt80).
func (s Switch) CallEntry() uint32 { return s.entry }

// entries are the 32-bit world's entries as the ring-3 programs number
// them (layout.ParamEntry).
var entries = map[experiment.Entry]uint32{
	experiment.Sysenter: layout.EntrySysenter,
	experiment.Int80:    layout.EntryInt80,
}

// trampolineKey picks one flavour's trampolines in one isolation mode.
type trampolineKey struct {
	Flavour experiment.Flavour
	Mode    experiment.Mode
}

// copyKey picks a SYSENTER trampoline of a flavour: by copy method and
// instrumented or not (experiment.Config.Stamps).
type copyKey struct {
	copy   experiment.Copy
	stamps bool
}

// entryPoints are one flavour's trampolines in one mode: the SYSENTER
// ones (the linux flavour's one per copy method, plain and instrumented;
// the minimal flavour's movsl's only, the mitigated one direct's only:
// experiment.Config.Check refuses the others) and the INT 0x80 gate's target (the
// mitigated flavour's is the linux one).
type entryPoints struct {
	sysenter map[copyKey]uint32
	int80    uint32
}

// modeRoutines are the blob offsets of one mode's trampolines: the
// minimal SYSENTER one and INT 0x80 target, the mitigated SYSENTER one,
// the linux INT 0x80 target, and the linux SYSENTER ones by copy method
// (experiment.Copy), plain and instrumented.
type modeRoutines struct {
	mode                          experiment.Mode
	sysenterMinimal, int80Minimal uint32
	sysenterMitigated, int80Linux uint32
	sysenterLinux                 map[experiment.Copy]stamped
}

// stamped are a linux SYSENTER trampoline's two routines: plain and
// instrumented (experiment.Config.Stamps).
type stamped struct{ plain, stamps uint32 }

// byFlavour makes the trampoline table from each mode's routines.
func byFlavour(ms ...modeRoutines) map[trampolineKey]entryPoints {
	t := map[trampolineKey]entryPoints{}
	for _, m := range ms {
		linux := map[copyKey]uint32{}
		for c, r := range m.sysenterLinux {
			linux[copyKey{c, false}], linux[copyKey{c, true}] = r.plain, r.stamps
		}
		t[trampolineKey{experiment.Minimal, m.mode}] = entryPoints{map[copyKey]uint32{{experiment.Movsl, false}: m.sysenterMinimal}, m.int80Minimal}
		t[trampolineKey{experiment.Linux, m.mode}] = entryPoints{linux, m.int80Linux}
		t[trampolineKey{experiment.Mitigated, m.mode}] = entryPoints{map[copyKey]uint32{{experiment.Direct, false}: m.sysenterMitigated}, m.int80Linux}
	}
	return t
}

// trampolines are the 32-bit kernel's trampolines by flavour and mode:
// the instantiations of the model's rows (experiment.Mode.In(W32) and
// Mode.Has(flavour)), which a test checks against the rows. PAE has no
// PCID, and the deferred trampolines are the 64-bit world's.
var trampolines = byFlavour(
	modeRoutines{experiment.Off, offSysenterMinimalOff, offInt80MinimalOff, offSysenterMitigatedOff, offInt80LinuxOff, map[experiment.Copy]stamped{
		experiment.Movsl: {offSysenterLinuxMovslOff, offSysenterStampMovslOff}, experiment.Movsb: {offSysenterLinuxMovsbOff, offSysenterStampMovsbOff},
		experiment.Trim: {offSysenterLinuxTrimOff, offSysenterStampTrimOff}, experiment.Direct: {offSysenterLinuxDirectOff, offSysenterStampDirectOff}}},
	modeRoutines{experiment.On, offSysenterMinimalOn, offInt80MinimalOn, offSysenterMitigatedOn, offInt80LinuxOn, map[experiment.Copy]stamped{
		experiment.Movsl: {offSysenterLinuxMovslOn, offSysenterStampMovslOn}, experiment.Movsb: {offSysenterLinuxMovsbOn, offSysenterStampMovsbOn},
		experiment.Trim: {offSysenterLinuxTrimOn, offSysenterStampTrimOn}, experiment.Direct: {offSysenterLinuxDirectOn, offSysenterStampDirectOn}}},
)
