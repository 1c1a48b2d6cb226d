package bench

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/i386pae"
	"github.com/ptilab/ptilab/i386pae/layout"
)

// Timing loops: the null call, the work curve and lseek time a system
// call in a ring-3 loop; the copy methods and the phase breakdown time
// the null call through the 32-bit world's other trampolines.

// PhaseCount is the number of phases an instrumented trampoline times:
// the CR3 switch in, the copy in, the dispatch, the copy out, the CR3
// switch out (layout.Phase*).
const PhaseCount = layout.PhaseCount

// PhaseDispatch is the phase of the system call's own work: the rest is
// the entry path.
const PhaseDispatch = layout.PhaseDispatch

// Stamps are an instrumented trampoline's phases over a run: the
// phases' cycles, the calls stamped and the stamps' own cost per phase,
// calibrated in the run (the 32-bit world's, package i386pae).
type Stamps = i386pae.Stamps

// PhaseNames name the phases in records.
var PhaseNames = [PhaseCount]string{
	layout.PhaseCR3In: "cr3_in", layout.PhaseCopyIn: "copy_in", layout.PhaseDispatch: "dispatch",
	layout.PhaseCopyOut: "copy_out", layout.PhaseCR3Out: "cr3_out",
}

// Measurement is one configuration's figure: cycles per call over R
// repeats of N calls.
type Measurement struct {
	Width  int // the world's
	Config experiment.Config
	Bench  string // the benchmark's plan name: "null", "work32", ...
	// WorkNs is the work curve's point: the time the call spends in the
	// kernel (HasWork).
	WorkNs  int64
	HasWork bool
	N, R    int
	Stats   Stats   // cycles per call, loop overhead subtracted
	Disturb Disturb // the core clock and the disturbances over the measured repeats
	Empty   float64 // cycles per iteration of the empty loop
	// Phases are the instrumented trampoline's cycles per call in each
	// phase, with Config.Stamps, less what its stamps cost (StampCost,
	// calibrated in the same run); PhaseCall is the whole call over the
	// same calls, stamps included: every repeat, warm-up included, less
	// the empty loop.
	Phases    [PhaseCount]float64
	StampCost [PhaseCount]float64
	PhaseCall float64
	// ASITransitions are an asi mode's switches to the sensitive table
	// over the timed program's calls (warm-up included).
	ASITransitions uint64
	xcheck         xcheckIn // the counter deltas of the PMU cross-check (pmucheck.go)
	Unsup          error    // the world or the CPU cannot run the configuration
	Failure        error    // the run went wrong
}

func (m *Measurement) OK() bool { return m.Unsup == nil && m.Failure == nil }

// Measure times call under c in world w, planned once (World.Plan): warm-up repeats, then r repeats
// of n calls, less the empty loop's cost per iteration (the median of its
// repeats, measured the same way). A run whose last call did not return
// what the call returns fails, where the world's loop keeps it. With
// c.Stamps it also gives the phases' cycles per call, over every call of
// the run.
func Measure(w World, c experiment.Config, call Call, n, r, warmup int) Measurement {
	m := Measurement{Width: w.Width(), Config: c, N: n, R: r}
	s, err := w.Plan(c)
	if err != nil {
		m.Unsup = err
		return m
	}
	if max := w.User().MaxRepeats; r+warmup > max {
		m.Failure = fmt.Errorf("%d repeats: the task's data pages hold at most %d", r+warmup, max)
		return m
	}
	empty, err := w.Loop(s, call, n, r+warmup, true)
	if err != nil {
		m.Unsup, m.Failure = SplitErr(err)
		return m
	}
	m.Empty = Summarize(PerOp(empty.Cycles[warmup:], n, 0)).Median
	calls, err := w.Loop(s, call, n, r+warmup, false)
	if err != nil {
		m.Unsup, m.Failure = SplitErr(err)
		return m
	}
	if want := call.want(); n > 0 && calls.HasValue && calls.Value != want {
		m.Failure = fmt.Errorf("the %s call returned %d, want %d", callNames[call.Op], calls.Value, want)
		return m
	}
	m.ASITransitions = calls.ASITransitions
	perOp := PerOp(calls.Cycles[warmup:], n, m.Empty)
	m.Stats = Summarize(perOp)
	m.Disturb = DisturbOf(perOp, calls.Samples, r, warmup, n)
	m.xcheck = xcheckOf(calls.Samples, empty.Samples, r, warmup)
	if c.Stamps && calls.Stamps.Calls() > 0 {
		all := float64(n * (r + warmup))
		for i := range PhaseCount {
			m.Phases[i] = calls.Stamps.Net(i) / all
		}
		m.StampCost = calls.Stamps.Cost
		var total uint64
		for _, c := range calls.Cycles {
			total += c
		}
		m.PhaseCall = float64(total)/all - m.Empty
	}
	return m
}

var callNames = [...]string{Getppid: "getppid", Work: "work", Lseek: "lseek"}

// subject is the record subject of a configuration of x's world.
func (x *Ctx) Subject(bench string, c experiment.Config) contract.Subject {
	s := x.Clock.Mark(contract.Subject{
		Bench: bench, Width: x.World.Width(), Mode: c.Mode.String(), Entry: c.Entry.String(),
		Flavour: c.Flavour.String(), Global: c.Global, Stamps: c.Stamps, LoopOffset: x.LoopOffset,
	})
	if len(x.World.Copies()) > 0 && c.Flavour == experiment.Linux {
		s.Copy = c.Copy.String()
	}
	if c.Flavour == experiment.Mitigated {
		s.Mitigations = c.Knobs.String()
	}
	if c.Mode.ASI() {
		s.ASIActions = c.ASIActions.String()
	}
	return s
}

// stats is the record form of s, in the clock's unit, with the ratio to
// off (absent when 0), the core clock and disturbances d, and the
// repeats themselves.
func (x *Ctx) StatsOf(s Stats, d Disturb, ratio float64) contract.Stats {
	return contract.Stats{
		Unit: x.Clock.Unit(), Mean: Round(s.Mean), Stddev: Round(s.Stddev), StddevPct: Round(s.StddevPct()),
		PerfPct: Round(s.PerfPct()), Median: Round(s.Median), Min: Round(s.Min), Max: Round(s.Max),
		TSCHz: x.Clock.Hz, RatioToOff: Round(ratio), Core: d.CoreRecord(x.Clock.Hz), Repeats: Rounded(s.Values),
	}
}

// Rounded is xs, each value Round's.
func Rounded(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = Round(x)
	}
	return out
}

// NotMeasured records what a configuration that did not run: an
// "unsupported" record with the reason, or an error named name (either
// with the ladder's rung being written, if any); and reports whether it
// did not.
func (x *Ctx) NotMeasured(name string, s contract.Subject, n, r int, unsup, failure error) bool {
	switch {
	case unsup != nil:
		x.Record(contract.Unsupported{Subject: s, Rung: x.Rung, N: n, R: r, Warmup: x.Plan.Warmup, Reason: unsup.Error()})
	case failure != nil:
		x.Fail(contract.Error{Name: name, Error: failure.Error(), Subject: &s, Rung: x.Rung, N: n, R: r})
	default:
		return false
	}
	return true
}

// measurement writes m's record.
func (x *Ctx) RecordMeasurement(m Measurement, ratio float64) {
	s := x.Subject(m.Bench, m.Config)
	if m.HasWork {
		s.WorkNs = &m.WorkNs
	}
	if x.NotMeasured(m.Bench+" "+m.Config.String(), s, m.N, m.R, m.Unsup, m.Failure) {
		return
	}
	rec := contract.Syscall{
		Subject: s, N: m.N, R: m.R, Warmup: x.Plan.Warmup, Stats: x.StatsOf(m.Stats, m.Disturb, ratio),
		NsPerCall: Round(x.Clock.Ns(m.Stats.Mean)), EmptyLoopCycles: Round(m.Empty),
		PMUCheck: x.pmuCheck(m),
	}
	if m.Config.Mode.ASI() {
		rec.ASITransitions = &m.ASITransitions
	}
	if m.Config.Stamps {
		rec.Phases, rec.StampCost = PhaseMap(m.Phases), PhaseMap(m.StampCost)
		rec.PhaseCall = Round(m.PhaseCall)
	}
	x.Record(rec)
}

// PhaseMap is a figure per phase by the phases' record names (PhaseNames),
// each Round's.
func PhaseMap(xs [PhaseCount]float64) map[string]float64 {
	m := make(map[string]float64, PhaseCount)
	for i, x := range xs {
		m[PhaseNames[i]] = Round(x)
	}
	return m
}

func Round(x float64) float64 {
	if x < 0 {
		return -Round(-x)
	}
	return float64(int64(x*1000+0.5)) / 1000
}

// ratio is m's mean over base's, or 0 when either did not measure.
func Ratio(m, base *Measurement) float64 {
	if m == nil || base == nil || !m.OK() || !base.OK() {
		return 0
	}
	return m.Stats.Mean / base.Stats.Mean
}

// find returns the measurement of c among ms, or nil.
func Find(ms []Measurement, c experiment.Config) *Measurement {
	for i := range ms {
		if ms[i].Config == c {
			return &ms[i]
		}
	}
	return nil
}

// OffOf is c under PTI off: the configuration c is compared with (off
// has no asi actions).
func OffOf(c experiment.Config) experiment.Config {
	c.Mode, c.ASIActions = experiment.Off, 0
	return c
}

// plural says k things.
func plural(k int, one, many string) string {
	if k == 1 {
		return fmt.Sprintf("%d %s", k, one)
	}
	return fmt.Sprintf("%d %s", k, many)
}

func yn(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// SplitErr sorts a run's error: one the world refused it with when it
// started (wrapping ErrUnsupported: pti's lass run of a Go handler) is
// the configuration's reason to be unsupported; any other is its failure.
func SplitErr(err error) (unsup, failure error) {
	if errors.Is(err, ErrUnsupported) {
		return err, nil
	}
	return nil, err
}

// ReasonOf shortens an unsupported configuration's error to its cause.
func ReasonOf(err error) string {
	s := err.Error()
	if i := strings.Index(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// The engine's own names for Round, SampledRepeat and Subject, which
// pmucheck.go uses.
var round = Round

const sampledRepeat = SampledRepeat

func (x *Ctx) subject(bench string, c experiment.Config) contract.Subject { return x.Subject(bench, c) }
