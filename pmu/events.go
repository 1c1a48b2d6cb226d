package pmu

import "fmt"

// Event is a model-specific event for a programmable counter: its name
// as Intel's event list spells it, its event code and umask (no counter
// mask, edge or invert: the events below need none), and where the
// values come from.
type Event struct {
	Name  string
	Code  uint8
	Umask uint8
	// Source is the event list (a file of github.com/intel/perfmon) the
	// code and umask were read from, under Name.
	Source string
}

// Model is the events of one microarchitecture and the CPUs (DisplayFamily
// 06H, DisplayModel, steppings) they apply to, as intel/perfmon's
// mapfile.csv maps them.
type Model struct {
	Name   string
	Models []uint8 // DisplayModel values of family 06H
	// MaxStepping is the highest stepping the table applies to (0xF: all);
	// 06_55H steppings 5 and later are Cascade Lake, with its own list.
	MaxStepping uint8
	// Events in the order a plan without pmu_events counts them: the
	// first CPUID.0AH:EAX[15:8] of them.
	Events []Event
}

// The event lists, files of github.com/intel/perfmon, each the one its
// mapfile.csv names for the family-model (06_3A IVB, 06_3E IVT,
// 06_4E/5E/8E/9E SKL, 06_55 steppings 0-4 SKX; 06_55 steppings 5 and
// later map to CLX/events/cascadelakex_core.json, not tabled here).
const (
	srcIVB = "intel/perfmon IVB/events/ivybridge_core.json"
	srcIVT = "intel/perfmon IVT/events/ivytown_core.json"
	srcSKL = "intel/perfmon SKL/events/skylake_core.json"
	srcSKX = "intel/perfmon SKX/events/skylakex_core.json"
)

// Models are the reference boxes' tables. On Ivy Bridge the page-walk
// cycles are *.WALK_DURATION (cycles the page-miss handler is busy); on
// Skylake *.WALK_PENDING (per cycle, the number of walks in progress:
// divided by WALK_COMPLETED it is cycles per walk). Ivy Bridge counts
// load STLB hits with event 5FH, Skylake with 08H umask 20H. The server
// parts' lists give the same codes and umasks as their client cores';
// each table still names the file it was checked against.
var Models = []Model{
	{Name: "Ivy Bridge", Models: []uint8{0x3a}, MaxStepping: 0xf, Events: tlbEvents(archIvyBridge, srcIVB)},
	{Name: "Ivy Bridge-EP (Ivytown)", Models: []uint8{0x3e}, MaxStepping: 0xf, Events: tlbEvents(archIvyBridge, srcIVT)},
	{Name: "Skylake (client)", Models: []uint8{0x4e, 0x5e, 0x8e, 0x9e}, MaxStepping: 0xf, Events: tlbEvents(archSkylake, srcSKL)},
	{Name: "Skylake-SP", Models: []uint8{0x55}, MaxStepping: 4, Events: tlbEvents(archSkylake, srcSKX)},
}

// The microarchitectures of tlbEventRows' columns.
const (
	archIvyBridge = iota
	archSkylake
)

// tlbEventRows are the counted quantities, one a row in the order a plan
// counts them, each with its event on Ivy Bridge and on Skylake. The
// server parts' lists give the same codes and umasks as their client
// cores' (IVT as IVB, SKX as SKL).
var tlbEventRows = [...][2]Event{
	{{Name: "DTLB_LOAD_MISSES.WALK_COMPLETED", Code: 0x08, Umask: 0x82}, {Name: "DTLB_LOAD_MISSES.WALK_COMPLETED", Code: 0x08, Umask: 0x0e}},
	{{Name: "ITLB_MISSES.WALK_COMPLETED", Code: 0x85, Umask: 0x02}, {Name: "ITLB_MISSES.WALK_COMPLETED", Code: 0x85, Umask: 0x0e}},
	{{Name: "DTLB_LOAD_MISSES.STLB_HIT", Code: 0x5f, Umask: 0x04}, {Name: "DTLB_LOAD_MISSES.STLB_HIT", Code: 0x08, Umask: 0x20}},
	{{Name: "DTLB_LOAD_MISSES.WALK_DURATION", Code: 0x08, Umask: 0x84}, {Name: "DTLB_LOAD_MISSES.WALK_PENDING", Code: 0x08, Umask: 0x10}},
	{{Name: "ITLB_MISSES.WALK_DURATION", Code: 0x85, Umask: 0x04}, {Name: "ITLB_MISSES.WALK_PENDING", Code: 0x85, Umask: 0x10}},
	{{Name: "ITLB_MISSES.STLB_HIT", Code: 0x85, Umask: 0x10}, {Name: "ITLB_MISSES.STLB_HIT", Code: 0x85, Umask: 0x20}},
}

// tlbEvents returns column arch of tlbEventRows, each event marked as
// read from the event list src.
func tlbEvents(arch int, src string) []Event {
	out := make([]Event, len(tlbEventRows))
	for i, row := range tlbEventRows {
		out[i] = row[arch]
		out[i].Source = src
	}
	return out
}

// EventNames returns every event name of every table, each once, in
// table order: what a plan's pmu_events may name.
func EventNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range Models {
		for _, e := range m.Events {
			if !seen[e.Name] {
				seen[e.Name] = true
				out = append(out, e.Name)
			}
		}
	}
	return out
}

// Signature is CPUID.01H:EAX decoded (SDM Vol. 2A, CPUID, Figure 3-6):
// DisplayFamily, DisplayModel and stepping.
type Signature struct {
	Family, Model, Stepping uint8
}

func (s Signature) String() string {
	return fmt.Sprintf("%02X_%02XH stepping %d", s.Family, s.Model, s.Stepping)
}

// ReadSignature decodes CPUID.01H:EAX: DisplayFamily = family + extended
// family when family is 0FH; DisplayModel = extended model << 4 + model
// when family is 06H or 0FH.
func ReadSignature(c CPU) Signature {
	a, _, _, _ := c.CPUID(1, 0)
	base := uint8(a>>8) & 0xf
	fam, mod := base, uint8(a>>4)&0xf
	if base == 0xf {
		fam += uint8(a >> 20)
	}
	if base == 0x6 || base == 0xf {
		mod |= (uint8(a>>16) & 0xf) << 4
	}
	return Signature{fam, mod, uint8(a) & 0xf}
}

// ModelFor returns the table for sig, or nil and why there is none.
func ModelFor(sig Signature) (*Model, string) {
	if sig.Family == 6 {
		for i := range Models {
			m := &Models[i]
			for _, id := range m.Models {
				if id == sig.Model && sig.Stepping <= m.MaxStepping {
					return m, ""
				}
			}
		}
	}
	return nil, "no event table for CPU " + sig.String()
}

// Lookup returns the events of m named in names, in that order, and the
// names m has no event for; with names nil, m's events in table order.
func (m *Model) Lookup(names []string) (events []Event, unknown []string) {
	if names == nil {
		return append([]Event(nil), m.Events...), nil
	}
	for _, n := range names {
		found := false
		for _, e := range m.Events {
			if e.Name == n {
				events = append(events, e)
				found = true
				break
			}
		}
		if !found {
			unknown = append(unknown, n)
		}
	}
	return events, unknown
}
