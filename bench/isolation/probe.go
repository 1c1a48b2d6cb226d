// Package isolation holds the benchmark family of isolation: the probe
// (ring-3 reads of kernel, entry-area and own pages, and the 32-bit
// kernel's exception checks) and the leak oracle, with the oracle's plan
// keys.
package isolation

import (
	"fmt"
	"slices"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/pti"
)

// Probe is the isolation probe's registry row.
var Probe = bench.Benchmark{Name: "probe", Summary: "the isolation probe: ring 3 reads a kernel address, the entry area and its own page; in the 64-bit world also the deferred modes' trampoline stack and a sensitive page (user data in ASI's sensitive blocks), the same reads by FRED where the plan runs it, and the list of what each mode's user table maps beyond on's; in the 32-bit world also a page fault and a double fault in its kernel and 100 round trips out of long mode",
	Worlds: []int{64, 32}, Keys: []string{"modes", "entries"}, Run: probe}

// The isolation probe: ring 3 reads kernel addresses and its own page
// under each mode, and the page fault says whether the page was mapped.

// expected reports whether exit is what a ring-3 read of t under mode
// must give: a page fault that says whether mode's user table maps the
// page (bench.TargetKind.Mapped), or, under lass, #GP(0) for an address
// in the upper half.
func expected(t bench.ProbeTarget, mode experiment.Mode, e bench.Exit) bool {
	if t.Kind == bench.OwnPage {
		return e.OK()
	}
	if mode.Row().LASS && amd64.LASSBlocksUser(t.Address) {
		// LASS's #GP, before any page walk (SDM Vol. 3A, chapter 4).
		return e.Faulted && e.Vector == amd64.VectorGP && e.ErrorCode == 0 && e.FromUser()
	}
	return e.Faulted && e.Vector == amd64.VectorPF && e.FromUser() && e.CR2 == t.Address &&
		(e.ErrorCode&amd64.PF_P != 0) == t.Kind.Mapped(mode)
}

// prober is a world with targets for the isolation probe.
type prober interface {
	ProbeTargets() []bench.ProbeTarget
}

// probe reads each of the world's targets from ring 3 under the plan's
// modes and on (modes the world cannot have at all are left out; those
// the CPU lacks say so) and prints what happened: under off a kernel
// address faults as a protection violation (present, supervisor-only),
// under isolation as not present, but under asi, whose user table maps
// the nonsensitive kernel, present; a sensitive page (user data not the
// task's) is present under off only (and lass, off's table); the entry
// area is present and supervisor-only in every mode; the task's own page
// reads. An outcome other than that is marked UNEXPECTED; the deferred
// modes' area is present under those modes only; by an entry that delivers the faults
// itself (FRED: experiment.EntryRow.Events, where the plan runs it) the
// same reads again, each fault delivered by it; under lass an upper-half address (the
// entry area, the deferred modes' area) is LASS's #GP(0), the kernel
// text in the lower half a present page as under off. Then, in a world that says what its
// modes expose, that list, and in the 32-bit world the checks of its
// kernel's exceptions (kernelChecks32).
func probe(x *bench.Ctx) any {
	w := x.World
	pw, ok := w.(prober)
	if !ok {
		x.Fail(contract.Error{Name: x.Name, Error: "this world has no probe targets"})
		return false
	}
	var modes []experiment.Mode
	for _, m := range append(slices.Clone(x.Plan.Modes), experiment.On) {
		if !slices.Contains(modes, m) && !bench.NotInWorld(bench.ConfigOf(m, w.ProbeEntry(), experiment.Minimal)) {
			modes = append(modes, m)
		}
	}
	all := true
	for _, e := range faultEntries(x, w.ProbeEntry()) {
		if !probeTargets(x, pw, e, modes) {
			all = false
		}
	}
	if e, ok := w.(exposer); ok {
		recordExposure(x, e, modes)
	}
	if w == bench.World32 {
		kernelChecks32(x, all)
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
func recordExposure(x *bench.Ctx, e exposer, modes []experiment.Mode) {
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

// faultEntries are the entries the probe and the oracle read their
// faults by: the world's probe entry first, then the plan's entries that
// deliver the faults themselves (FRED: experiment.EntryRow.Events).
func faultEntries(x *bench.Ctx, first experiment.Entry) []experiment.Entry {
	out := []experiment.Entry{first}
	for _, e := range x.Plan.EntriesOf(x.World) {
		if e.Row().Events && e != first {
			out = append(out, e)
		}
	}
	return out
}

// probeTargets reads each of the world's targets from ring 3 under modes,
// entering by entry, records each read and reports whether all were as
// expected.
func probeTargets(x *bench.Ctx, pw prober, entry experiment.Entry, modes []experiment.Mode) bool {
	w := x.World
	all := true
	for _, t := range pw.ProbeTargets() {
		for _, mode := range modes {
			c := bench.ConfigOf(mode, entry, experiment.Minimal)
			s := x.Subject("probe", c)
			s.Flavour, s.Target = "", t.Name // the probe program is neither flavour
			addr := fmt.Sprintf("%#x", t.Address)
			sw, err := w.Plan(c)
			if err != nil {
				x.Record(contract.Unsupported{Subject: s, Address: addr, Reason: mode.String() + ": " + bench.ReasonOf(err)})
				continue
			}
			e, err := w.Probe(sw, t.Address)
			if err != nil {
				x.Fail(contract.Error{Name: x.Name + " " + t.Name + " " + mode.String() + " " + entry.String(), Error: err.Error(), Subject: &s})
				all = false
				continue
			}
			good := expected(t, mode, e)
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
	return all
}
