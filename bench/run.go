package bench

import (
	"fmt"
	"slices"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
)

// Ctx is what a benchmark runs with: the reporter, the plan, the clock,
// the world it runs in and its plan name there.
type Ctx struct {
	*Reporter
	Plan  Plan
	Clock Clock
	World World
	Name  string
	// Rung is the mitigation ladder's rung whose records are being
	// written: NotMeasured puts it in an unsupported or error record.
	Rung *contract.Rung
	// LoopOffset is how many bytes further than by default the world's
	// ring-3 programs run (plan key loop_offset, World.Place): Subject
	// puts it in every record.
	LoopOffset int
}

// Worlds are the worlds benchmarks run in, by width (the post-steps
// find theirs here).
var Worlds = map[int]World{64: World64, 32: World32}

// setupNames name a world's setup in error records.
var setupNames = map[int]string{64: "ring3 setup", 32: "32-bit setup"}

// RunPlan runs the plan's benchmarks in its order, each in its world (set
// up before its first benchmark), then the post-steps whose benchmarks
// all ran, in their order; it prints a line and writes a record of how the benchmarks
// time first.
func RunPlan(r *Reporter, plan Plan, clk Clock) {
	if len(plan.Benchmarks) == 0 {
		return
	}
	plan, modesLeft := plan.ModesFor(Worlds[64].Has)
	lfence := amd64.SerializeLFENCE()
	r.Printf("ptilab: LFENCE serializing: %s", lfence)
	r.Record(contract.Timing{LFENCE: lfence, TSCHz: clk.Hz, TSCSource: clk.Source, TSCInvariant: amd64.Features.InvariantTSC,
		RDTSCP: amd64.Features.RDTSCP, Emulated: clk.Emulated(), Emulator: clk.Emulator, Icount: clk.Icount, Modes: modeNames(plan),
		Entries: entryNames(plan)})
	for _, l := range modesLeft {
		r.Printf("ptilab: mode %s: left out of the plan (name it in modes for its unsupported rows)", l)
	}
	for _, width := range []int{64, 32} {
		for _, l := range plan.DefaultLeftOut(Worlds[width]) {
			r.Printf("ptilab: entry %s: left out of the plan (name it in entries for its unsupported rows)", l)
		}
	}
	results := map[string]any{}
	ready := map[int]error{}
	pmuStarted := false
	for _, name := range plan.Benchmarks {
		e, ok := lookup(name)
		if !ok {
			r.Fail(contract.Error{Name: name, Error: "no such benchmark"})
			continue
		}
		w := Worlds[e.width]
		err, done := ready[e.width]
		if !done {
			err = w.Setup()
			ready[e.width] = err
			if err != nil {
				r.Fail(contract.Error{Name: setupNames[e.width], Error: err.Error()})
				r.Printf("ptilab: %v", err)
			}
		}
		if err != nil {
			continue
		}
		if !pmuStarted {
			pmuStarted = true
			startPMU(r, plan, PMUCPU)
			defer stopPMU(PMUCPU)
		}
		x := &Ctx{Reporter: r, Plan: plan, Clock: clk, World: w, Name: name}
		results[name] = e.b.Run(x)
		if slices.Contains(e.b.Keys, "loop_offset") {
			runShifted(x, e.b)
		}
	}
	for _, s := range postSteps {
		all := true
		for _, n := range s.Needs {
			if _, ok := results[n]; !ok {
				all = false
			}
		}
		if all {
			s.Run(&Ctx{Reporter: r, Plan: plan, Clock: clk, Name: s.Name}, results)
		}
	}
}

// runShifted runs benchmark b, which x ran at the programs' default
// places, again at each of the plan's other loop offsets, with the
// world's ring-3 programs that many bytes further (World.Place; its
// records carry the offset, and its results are not the post-steps'),
// then puts the programs back.
func runShifted(x *Ctx, b *Benchmark) {
	offs := x.Plan.LoopOffsets
	if len(offs) < 2 {
		return
	}
	for _, off := range offs[1:] {
		name := fmt.Sprintf("%s at loop offset %d", x.Name, off)
		if err := x.World.Place(off); err != nil {
			x.Fail(contract.Error{Name: name, Error: err.Error()})
			continue
		}
		x.Printf("ptilab: %s: the ring-3 programs %d bytes further", x.Name, off)
		shifted := *x
		shifted.LoopOffset = off
		b.Run(&shifted)
	}
	if err := x.World.Place(0); err != nil {
		x.Fail(contract.Error{Name: x.Name + " back at loop offset 0", Error: err.Error()})
	}
}

// entryNames are the entries plan runs, both worlds', by name (the
// tables give the 64-bit world an entry column when it has several).
func entryNames(plan Plan) []string {
	var out []string
	for _, width := range []int{64, 32} {
		for _, e := range plan.EntriesOf(Worlds[width]) {
			out = append(out, e.String())
		}
	}
	return out
}

// modeNames are the plan's modes' names, an asi mode's with each set of
// asi actions (experiment.Config.ModeName), for the timing record (the
// tables' mode column is as wide as the longest).
func modeNames(plan Plan) []string {
	var out []string
	for _, m := range plan.Modes {
		for _, c := range plan.ConfigsOf(experiment.Config{Mode: m}) {
			out = append(out, c.ModeName())
		}
	}
	return out
}
