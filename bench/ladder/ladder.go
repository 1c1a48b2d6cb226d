// Package ladder holds the speculation-mitigation ladder, a benchmark of
// both worlds, with its plan key (mitigations).
package ladder

import (
	"fmt"
	"math"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/bench/taskbench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/pti"
)

// Ladder is the mitigation ladder's registry row, with its key.
var Ladder = bench.Benchmark{Name: "ladder", TaskRepeats: true, Summary: "the speculation-mitigation ladder: the null call and the ping-pong between processes under the mitigated flavour, each knob of `mitigations` alone, stacked in its order and as the set Linux would enable on this CPU, each rung's increment over the one below; knobs the CPU lacks unsupported; in the 32-bit world by SYSENTER, with the knobs Linux's entry_32.S has (verw, ibpb, rsb, retpoline; the others unsupported: not in 32-bit Linux's entry)",
	Worlds: []int{64, 32}, Keys: []string{"modes", mitigations.Name(), "n", taskbench.PingPongN.Name(), "r", "warmup", "loop_offset"}, Run: ladder, Optional: true}

// The mitigation ladder (issue 14 item 4): the null call and the
// ping-pong between processes under the mitigated flavour (package pti's
// SYS_MITIGATED and the tasks kernel's context switch), with each knob of
// the plan's mitigations alone, stacked one by one in the plan's order,
// and as the set Linux would enable on this CPU (cpustate.LinuxKnobs);
// each rung's cost is its increment over the rung it is compared with:
// a knob alone over none, a stacked rung over the rung below it, none
// over the linux flavour (the cost of the disabled sites). An optional
// benchmark of both worlds: in the 32-bit one (ladder32) by SYSENTER,
// the direct linux trampoline's mitigated variant (i386pae), with the
// knobs Linux's entry_32.S has (experiment.Knobs32); the others are
// unsupported there, "not in 32-bit Linux's entry", whatever the CPU.

// Names of the plan's mitigations list besides the knobs.
const (
	rungNone  = "none"  // the mitigated flavour with every site disabled
	rungLinux = "linux" // the knobs Linux would enable here
)

// MitigationNames are what the plan's mitigations key takes: none, the
// knobs (experiment.Mitigations) and linux.
func MitigationNames() []string {
	out := []string{rungNone}
	for _, m := range experiment.EntryMitigations() {
		out = append(out, m.String())
	}
	return append(out, rungLinux)
}

// mitigations is the plan key of the ladder's rungs: "none" first, then
// knobs (experiment.Mitigations's names) alone and stacked in this
// order, and "linux", the set Linux would enable on this CPU.
var mitigations = bench.NewKey("mitigations", MitigationNames(), func(v string) ([]string, error) {
	m, err := bench.ListOf(v, parseRung, MitigationNames(), "mitigations")
	if err == nil && m[0] != rungNone {
		return nil, fmt.Errorf("mitigations must start with none: the knobs are compared with it")
	}
	return m, err
})

// parseRung parses a rung's name of the plan's mitigations: none, linux
// or a knob (experiment.ParseMitigation).
func parseRung(n string) (string, error) {
	if n == rungNone || n == rungLinux {
		return n, nil
	}
	m, err := experiment.ParseMitigation(n)
	return m.String(), err
}

// Parts of a ladder table (contract.Ladder.Part).
const (
	partFlavour = "flavour" // the linux flavour, no sites at all
	partNone    = "none"
	partAlone   = "alone"
	partStacked = "stacked"
	partLinux   = "linux"
)

// rung is a row of a ladder table: its flavour and knobs, its part, and
// the rung its increment is over (an index of the same ladder, -1 for
// none).
type rung struct {
	Part    string
	Flavour experiment.Flavour
	Knobs   experiment.Knobs
	Over    int
}

// label names r in tables and records: "linux flavour" or its knobs.
func (r rung) label() string {
	if r.Flavour != experiment.Mitigated {
		return r.Flavour.String() + " flavour"
	}
	return r.Knobs.String()
}

// ladderRungs lays out a ladder over the knobs of order (the plan's
// mitigations, none and linux left out) that act on the benchmark
// (acts): the linux flavour; none over it; each knob alone over none;
// the knobs the CPU supports (supported) stacked one by one, each rung
// over the one below (the first rung is the first knob alone); and, with
// withLinux, linux's set over none.
func ladderRungs(order []experiment.Mitigation, acts, supported func(experiment.Mitigation) bool, linux experiment.Knobs, withLinux bool) []rung {
	rs := []rung{{Part: partFlavour, Flavour: experiment.Linux, Over: -1}, {Part: partNone, Flavour: experiment.Mitigated, Over: 0}}
	alone := map[experiment.Mitigation]int{}
	for _, m := range order {
		if acts(m) {
			alone[m] = len(rs)
			rs = append(rs, rung{Part: partAlone, Flavour: experiment.Mitigated, Knobs: experiment.KnobsOf(m), Over: 1})
		}
	}
	var acc experiment.Knobs
	below := 1
	for _, m := range order {
		if !acts(m) || !supported(m) {
			continue
		}
		if acc == 0 {
			acc, below = experiment.KnobsOf(m), alone[m]
			continue
		}
		acc |= experiment.KnobsOf(m)
		rs = append(rs, rung{Part: partStacked, Flavour: experiment.Mitigated, Knobs: acc, Over: below})
		below = len(rs) - 1
	}
	if withLinux {
		rs = append(rs, rung{Part: partLinux, Flavour: experiment.Mitigated, Knobs: linux, Over: 1})
	}
	return rs
}

// increments are each rung's mean less the mean of the rung it is over,
// NaN where either did not measure (ok false) or it is over none.
func increments(rs []rung, mean []float64, ok []bool) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = math.NaN()
		if r.Over >= 0 && ok[i] && ok[r.Over] {
			out[i] = mean[i] - mean[r.Over]
		}
	}
	return out
}

// ladderOrder is the plan's knobs in its order, and whether it lists
// linux.
func ladderOrder(names []string) (order []experiment.Mitigation, withLinux bool) {
	for _, n := range names {
		if m, err := experiment.ParseMitigation(n); err == nil {
			order = append(order, m)
		}
		withLinux = withLinux || n == rungLinux
	}
	return order, withLinux
}

// linuxKnobs is the set of cpustate's decisions that are on.
func linuxKnobs(ks []cpustate.LinuxKnob) experiment.Knobs {
	var k experiment.Knobs
	for _, m := range experiment.EntryMitigations() {
		for _, lk := range ks {
			if lk.On && lk.Name == m.String() {
				k |= experiment.KnobsOf(m)
			}
		}
	}
	return k
}

// onEntry reports whether knob m acts on the system-call path (the
// others act in the context switch).
func onEntry(m experiment.Mitigation) bool { return m != experiment.IBPB && m != experiment.RSB }

// ladderTable measures one ladder under mode and writes its records in
// table order (the linux flavour, none, the knobs alone, the stacked
// rungs top first so that each is over the line below it, linux): each
// rung's measurement record (record, with its ratio to none; an
// unsupported or error record carries the rung's part and what it is
// over) and, when it measured, its ladder record with its increment over
// the rung it is compared with. Package tables renders them.
func ladderTable(x *bench.Ctx, mode experiment.Mode, rs []rung, tasks string, measure func(c experiment.Config) (mean float64, ok bool, record func(ratio float64))) {
	mean := make([]float64, len(rs))
	ok := make([]bool, len(rs))
	records := make([]func(float64), len(rs))
	for i, r := range rs {
		c := ladderConfig(x.World, mode, r.Flavour)
		c.Knobs = r.Knobs
		mean[i], ok[i], records[i] = measure(c)
	}
	inc := increments(rs, mean, ok)
	order := make([]int, 0, len(rs))
	var stacked []int
	for i, r := range rs {
		if r.Part == partStacked {
			stacked = append([]int{i}, stacked...)
			continue
		}
		if r.Part == partLinux {
			order = append(order, stacked...)
			stacked = nil
		}
		order = append(order, i)
	}
	order = append(order, stacked...)
	for _, i := range order {
		r := rs[i]
		over := ""
		if r.Over >= 0 {
			over = rs[r.Over].label()
		}
		q := 0.0
		if ok[i] && ok[1] {
			q = mean[i] / mean[1]
		}
		x.Rung = &contract.Rung{Part: r.Part, Over: over}
		records[i](q)
		x.Rung = nil
		if ok[i] {
			rec := contract.Ladder{Subject: x.Subject(x.Name, ladderConfig(x.World, mode, r.Flavour)), Rung: contract.Rung{Part: r.Part, Over: over},
				Unit: x.Clock.Unit(), Mean: bench.Round(mean[i]), Sites: ladderSites(x.World)}
			rec.Mitigations, rec.Tasks = "", tasks
			if r.Flavour == experiment.Mitigated {
				rec.Mitigations = r.Knobs.String()
			}
			if !math.IsNaN(inc[i]) {
				v := bench.Round(inc[i])
				rec.Increment = &v
			}
			x.Record(rec)
		}
	}
}

// ladderConfig is the configuration of a ladder rung of flavour f under
// mode in world w: SYSCALL in the 64-bit world; SYSENTER in the 32-bit
// one, whose mitigated trampoline is the direct linux one's variant (the
// linux flavour's rung is that direct trampoline).
func ladderConfig(w bench.World, mode experiment.Mode, f experiment.Flavour) experiment.Config {
	c := bench.ConfigOf(mode, w.Entries()[0], f)
	if c.Entry.Row().Copies {
		c.Copy = experiment.Direct
	}
	return c
}

// ladderSites are the sites of the mitigated null path in world w, each
// a TEST and a taken JE when off: 64-bit, LFENCE, IBRS twice, BHB,
// retpoline, VERW; 32-bit, the CR3-load count's save, retpoline, the
// switch's mitigations, VERW.
func ladderSites(w bench.World) int {
	if w.Width() == 32 {
		return 4
	}
	return 6
}

// ladder runs the mitigation ladder in x's world under every mode of the
// plan: the null call's (the knobs that act on the entry path), then the
// ping-pong's between processes (every knob: ibpb and rsb act in its
// context switches). It prints what the ladder is and what Linux would
// enable here (human lines); package tables renders the two tables from
// the records.
func ladder(x *bench.Ctx) any {
	p, w := x.Plan, x.World
	lk := cpustate.LinuxKnobs(cpustate.Hardware{})
	linux := linuxKnobs(lk)
	order, withLinux := ladderOrder(mitigations.Of(p))
	caps := pti.Spec()
	supported := func(m experiment.Mitigation) bool {
		c := ladderConfig(w, experiment.Off, experiment.Mitigated)
		c.Knobs = experiment.KnobsOf(m)
		_, err := w.Plan(c)
		return err == nil
	}
	x.Printf("")
	if w.Width() == 32 {
		linux &= experiment.Knobs32()
		x.Printf("mitigation ladder: the mitigated flavour (the direct linux SYSENTER trampoline with a site per knob: TEST of its bit and a JE over it when off; ibpb and rsb after the dispatch when it switched to another process)")
		x.Printf("%s; in 32-bit: linux = %v (entry_32.S has %v only)", cpustate.LinuxKnobLine(lk), linux, experiment.Knobs32())
	} else {
		x.Printf("mitigation ladder: the mitigated flavour (the linux trampoline with a site per knob: TEST of its bit and a JE over it when off) and the tasks kernel's context switch")
		x.Printf("%s", cpustate.LinuxKnobLine(lk))
	}
	for _, m := range order {
		if how := pti.How(m, caps); how != "" {
			x.Printf("%s here: %s", m, how)
		}
	}
	var all []any
	for _, mode := range p.Modes {
		rs := ladderRungs(order, onEntry, supported, linux, withLinux)
		ladderTable(x, mode, rs, "", func(c experiment.Config) (float64, bool, func(float64)) {
			m := bench.Measure(w, c, bench.Call{Op: bench.Getppid}, p.N, p.R, p.Warmup)
			m.Bench = x.Name
			all = append(all, m)
			return m.Stats.Mean, m.OK(), func(q float64) { x.RecordMeasurement(m, q) }
		})
	}
	for _, mode := range p.Modes {
		rs := ladderRungs(order, func(experiment.Mitigation) bool { return true }, supported, linux, withLinux)
		ladderTable(x, mode, rs, taskbench.TaskKind(false), func(c experiment.Config) (float64, bool, func(float64)) {
			pp := taskbench.MeasurePingPong(w, c, false, taskbench.PingPongN.Of(p), p.R, p.Warmup)
			all = append(all, pp)
			return pp.Stats.Mean, pp.OK(), func(q float64) { taskbench.RecordPingPong(x, x.Name, pp, q) }
		})
	}
	return all
}
