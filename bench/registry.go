package bench

import (
	"fmt"
	"slices"
	"strings"
)

// Benchmark is a benchmark of the registry: written once, run in each of
// its worlds under its own plan name there.
type Benchmark struct {
	// Name is its plan name in the 64-bit world; in the 32-bit world its
	// plan name is Name+"32".
	Name string
	// Summary says what it measures, in a line (the README's plan table).
	Summary string
	// Worlds are the widths of the worlds it runs in (64, 32).
	Worlds []int
	// Keys are the plan keys it reads.
	Keys []string
	// Run runs it in x.World and returns its results, for the post-steps.
	Run func(x *Ctx) any
	// Optional leaves it out of the default plan.
	Optional bool
	// TaskRepeats: its ring-3 loops keep each repeat's count in the task's
	// data pages, so a run of it fails where r + warmup exceeds its
	// world's User().MaxRepeats (Plan.Warnings).
	TaskRepeats bool
}

// PostStep is a table made from several benchmarks' results, once every
// one it needs has run.
type PostStep struct {
	Name    string
	Summary string   // what it shows, in a line (the README)
	Needs   []string // plan names
	Run     func(x *Ctx, results map[string]any)
}

// The registry: the benchmarks a plan may name, in the default plan's
// order, and the post-steps, in the order they run. Benchmark families
// register theirs (Register, RegisterPostSteps); the order is the order
// of registration, which one list fixes (package bench/all registers
// every family's, in its order), not Go's order of package
// initialization.
var (
	registry  []Benchmark
	postSteps []PostStep
)

// Register adds bs to the registry, after the benchmarks registered
// before. It panics on a benchmark without a name, summary, world or Run
// function, on a plan name registered already and on a plan key that is
// neither the engine's nor registered (NewKey): the registry is filled
// at initialization, where such a mistake is the program's.
func Register(bs ...Benchmark) {
	for _, b := range bs {
		if b.Name == "" || b.Summary == "" || b.Run == nil || len(b.Worlds) == 0 {
			panic(fmt.Sprintf("bench: benchmark %q: a name, a summary, its worlds and a Run function", b.Name))
		}
		for _, w := range b.Worlds {
			if _, ok := lookup(PlanName(b.Name, w)); ok {
				panic("bench: benchmark " + PlanName(b.Name, w) + " registered twice")
			}
			if _, ok := Worlds[w]; !ok {
				panic(fmt.Sprintf("bench: benchmark %s: no %d-bit world", b.Name, w))
			}
		}
		for _, k := range b.Keys {
			if !isKey(k) {
				panic("bench: benchmark " + b.Name + " reads plan key " + k + ", which is not registered")
			}
		}
		registry = append(registry, b)
	}
}

// RegisterPostSteps adds ss to the post-steps, after those registered
// before: they run in this order. It panics on a step that needs a
// benchmark not registered.
func RegisterPostSteps(ss ...PostStep) {
	for _, s := range ss {
		for _, n := range s.Needs {
			if _, ok := lookup(n); !ok {
				panic("bench: post-step " + s.Name + " needs " + n + ", which is not registered")
			}
		}
		postSteps = append(postSteps, s)
	}
}

// PlanName is a benchmark's plan name in the world of width.
func PlanName(name string, width int) string {
	if width == 32 {
		return name + "32"
	}
	return name
}

// entry is a plan name's benchmark and world.
type entry struct {
	b     *Benchmark
	width int
}

// lookup finds the benchmark and world of a plan name.
func lookup(name string) (entry, bool) {
	for i := range registry {
		b := &registry[i]
		for _, w := range b.Worlds {
			if PlanName(b.Name, w) == name {
				return entry{b, w}, true
			}
		}
	}
	return entry{}, false
}

// PlanNames lists the plan names of the registry: each benchmark's, in
// its worlds, 64-bit ones first, in the registry's order; with optional,
// those left out of the default plan too.
func PlanNames(optional bool) []string {
	var out []string
	for _, width := range []int{64, 32} {
		for _, b := range registry {
			if slices.Contains(b.Worlds, width) && (optional || !b.Optional) {
				out = append(out, PlanName(b.Name, width))
			}
		}
	}
	return out
}

// PlanTable returns the lines of the README's table of benchmarks: one
// per benchmark, with its plan names, what it measures and the plan keys
// it reads; then one per post-step, with the benchmarks it needs.
func PlanTable() []string {
	out := []string{"| names | what it measures | plan keys |", "|---|---|---|"}
	for _, b := range registry {
		var names []string
		for _, w := range b.Worlds {
			names = append(names, "`"+PlanName(b.Name, w)+"`")
		}
		keys := "-"
		if len(b.Keys) > 0 {
			keys = "`" + strings.Join(b.Keys, "`, `") + "`"
		}
		out = append(out, fmt.Sprintf("| %s | %s | %s |", strings.Join(names, ", "), b.Summary, keys))
	}
	for _, s := range postSteps {
		out = append(out, fmt.Sprintf("| after `%s` | %s | - |", strings.Join(s.Needs, "` and `"), s.Summary))
	}
	return out
}

// AppliesTo lists the plan names of the benchmarks that read plan key k,
// as the README's plan table gives them.
func AppliesTo(k string) string {
	var names []string
	for _, width := range []int{64, 32} {
		for _, b := range registry {
			if slices.Contains(b.Worlds, width) && slices.Contains(b.Keys, k) {
				names = append(names, PlanName(b.Name, width))
			}
		}
	}
	return strings.Join(names, ", ")
}
