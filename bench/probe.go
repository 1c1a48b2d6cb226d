package bench

import (
	"fmt"
	"slices"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/pti"
)

// The isolation probe: ring 3 reads kernel addresses and its own page
// under each mode, and the page fault says whether the page was mapped.

// ProbeTarget is an address the isolation probe reads from ring 3, and
// what the read must do.
type ProbeTarget struct {
	Name    string
	Address uint64
	Kind    TargetKind
}

// TargetKind says how a probe target is mapped, and so what a ring-3
// read of it does.
type TargetKind uint8

const (
	// KernelOnly: mapped supervisor-only in the kernel's tables only: a
	// read faults with P=1 (protection) without isolation and P=0 (not
	// mapped) with it.
	KernelOnly TargetKind = iota
	// EntryArea: mapped supervisor-only in both tables: a read faults
	// with P=1 in every mode.
	EntryArea
	// OwnPage: the task's own data: the read succeeds.
	OwnPage
	// DeferredArea: the deferred modes' pages of the entry area
	// (pti.DeferredAreas), mapped supervisor-only in both tables of those
	// modes and in no table of the others: a read faults with P=1 under a
	// deferred mode and P=0 under the others, off included.
	DeferredArea
)

// expected reports whether exit is what a ring-3 read of t under mode
// must give.
func (t ProbeTarget) expected(mode experiment.Mode, e Exit) bool {
	if t.Kind == OwnPage {
		return e.OK()
	}
	present := t.Kind == EntryArea || !mode.Isolated()
	if t.Kind == DeferredArea {
		present = mode.Deferred()
	}
	return e.Faulted && e.Vector == amd64.VectorPF && e.FromUser() && e.CR2 == t.Address &&
		(e.ErrorCode&amd64.PF_P != 0) == present
}

// prober is a world with targets for the isolation probe, and checks of
// its own kernel's exceptions to run after it.
type prober interface {
	ProbeTargets() []ProbeTarget
}

// kernelChecker is a world whose kernel's exception paths the probe
// checks too.
type kernelChecker interface {
	kernelChecks(x *Ctx, probeOK bool)
}

// probe reads each of the world's targets from ring 3 under the plan's
// modes and on (modes the world cannot have at all are left out; those
// the CPU lacks say so) and prints what happened: under off a kernel
// address faults as a protection violation (present, supervisor-only),
// under isolation as not present; the entry area is present and
// supervisor-only in every mode; the task's own page reads. An outcome
// other than that is marked UNEXPECTED; the deferred modes' area is
// present under those modes only. Then, in a world that says what its
// modes expose, that list, and in a world with its own kernel checks,
// those.
func probe(x *Ctx) any {
	w := x.World
	pw, ok := w.(prober)
	if !ok {
		x.Fail(contract.Error{Name: x.Name, Error: "this world has no probe targets"})
		return false
	}
	var modes []experiment.Mode
	for _, m := range append(slices.Clone(x.Plan.Modes), experiment.On) {
		if !slices.Contains(modes, m) && !NotInWorld(ConfigOf(m, w.Entries()[0], experiment.Minimal)) {
			modes = append(modes, m)
		}
	}
	all := true
	for _, t := range pw.ProbeTargets() {
		for _, mode := range modes {
			c := ConfigOf(mode, w.Entries()[0], experiment.Minimal)
			s := x.Subject("probe", c)
			s.Entry, s.Flavour, s.Target = "", "", t.Name // the probe's entry is the world's business
			addr := fmt.Sprintf("%#x", t.Address)
			sw, err := w.Plan(c)
			if err != nil {
				x.Record(contract.Unsupported{Subject: s, Address: addr, Reason: mode.String() + ": " + ReasonOf(err)})
				continue
			}
			e, err := w.Probe(sw, t.Address)
			if err != nil {
				x.Fail(contract.Error{Name: x.Name + " " + t.Name + " " + mode.String(), Error: err.Error(), Subject: &s})
				all = false
				continue
			}
			good := t.expected(mode, e)
			rec := contract.Probe{Subject: s, Address: addr, Faulted: e.Faulted, AsExpected: &good}
			if e.Faulted {
				rec.ProbeFault = &contract.ProbeFault{
					Vector: e.Vector, ErrorCode: e.ErrorCode, Present: e.ErrorCode&amd64.PF_P != 0,
					CR2: fmt.Sprintf("%#x", e.CR2), User: e.FromUser(),
				}
			}
			if !good {
				all = false
			}
			x.Record(rec)
		}
	}
	if e, ok := w.(exposer); ok {
		recordExposure(x, e, modes)
	}
	if k, ok := w.(kernelChecker); ok {
		k.kernelChecks(x, all)
	}
	return all
}

// exposer is a world that says what each mode's user table maps beyond
// on's.
type exposer interface {
	Exposure(mode experiment.Mode) []pti.Area
}

// recordExposure records, after the probe, what the user table of each
// of modes maps beyond on's (the areas the world's tables are built from;
// the host tests walk the tables against them).
func recordExposure(x *Ctx, e exposer, modes []experiment.Mode) {
	for _, m := range modes {
		areas := e.Exposure(m)
		rec := contract.Exposure{Subject: contract.Subject{Bench: x.Name, Width: x.World.Width(), Mode: m.String(),
			Emulated: x.Clock.Emulated(), Icount: x.Clock.Icount}, Areas: []contract.ExposureArea{}}
		for _, a := range areas {
			ea := contract.ExposureArea{Name: a.Name, Pages: a.Pages, Holds: a.Holds}
			if a.Pages > 0 {
				ea.Start, ea.End = fmt.Sprintf("%#x", a.VA), fmt.Sprintf("%#x", a.VA+uint64(a.Pages)*amd64.PageSize)
			}
			rec.Areas = append(rec.Areas, ea)
		}
		x.Record(rec)
	}
}
