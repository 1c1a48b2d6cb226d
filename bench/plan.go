// Package bench runs ptilab's measurements and reports them: the run plan
// read from the boot volume, the result records (a human line and a
// `PTILAB {json}` line each) and the final `PTILAB-END {json}` line.
package bench

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/pmu"
	"github.com/ptilab/ptilab/tlb"
)

// PlanFile is the plan's path on the boot volume.
const PlanFile = "/ptilab.plan"

// Plan is what a run does. The zero plan is not valid: start from
// DefaultPlan.
type Plan struct {
	// Fault triggers a deliberate CPU exception after the machine line:
	// "pf" (a read of page 0, never mapped) or "gp" (a read of a
	// non-canonical address) in Go code, which continues as a Go panic
	// with a traceback; "kernel-pf" and "kernel-gp" do the same in kernel
	// mode (in the system-call handler), which ends the run at once.
	// Empty: none.
	Fault string
	// End is how the run ends: EndAuto exits QEMU through its debug-exit
	// device and returns to the firmware on a PC; the other actions act
	// under QEMU too.
	End board.EndAction
	// Screen selects whether the console is also drawn on the displays.
	Screen bool
	// Benchmarks are the plan names of the benchmarks to run, in this
	// order (Registry; PlanNames lists them).
	Benchmarks []string

	// The matrix every benchmark of the registry runs over: the isolation
	// modes (off first: the others are compared with it), the trampoline
	// flavours and the global-page settings (the benchmarks that take
	// them), calls per repeat, measured repeats and warm-up repeats.
	Modes    []experiment.Mode
	Flavours []experiment.Flavour
	Globals  []bool
	N, R     int
	Warmup   int

	// The work curve's calls per repeat and points (ns spent in the kernel
	// per call).
	WorkN  int
	WorkNs []int64
	// PingPongN is the ping-pong's round trips per repeat.
	PingPongN int
	// Messaging's groups, loops and message size in bytes, and its IPC:
	// IPCSocket (perf's default) or IPCPipe (perf -p).
	MsgGroups, MsgLoops, MsgSize int
	MsgIPC                       string

	// PState is what the run does to the core's P-state before the
	// benchmarks: cpustate.PStateNominal (request the maximum non-turbo
	// ratio, restore the firmware's request at the end) or
	// cpustate.PStateLeave (touch nothing).
	PState string

	// PMU says whether the 64-bit figures count with the performance
	// counters (where the CPU has them, startPMU); PMUEvents are the
	// model's events to count on the programmable counters (names of
	// pmu.EventNames), nil for its table's first ones.
	PMU       bool
	PMUEvents []string

	// The leak oracle's calibration samples (each a hit and a miss) and
	// its attempts per secret byte where cache timing is observable.
	OracleSamples, OracleAttempts int
	// The TLB sweep's points: pages ring 3 touches between calls
	// (SweepPages, 0 to tlb.SweepMaxPages each), on the user page sizes of
	// SweepSizes (sweepSizeNames: "4k", "2m"); the kernel pages the touch
	// call reads (SweepKernelPages; none: no kernel sweep); calls per
	// repeat (SweepN).
	SweepPages, SweepKernelPages []int
	SweepSizes                   []string
	SweepN                       int
	// Mitigations are the mitigation ladder's rungs (the ladder
	// benchmark): "none" first, then knobs (experiment.Mitigations's names)
	// alone and stacked in this order, and "linux", the set Linux would
	// enable on this CPU (MitigationNames).
	Mitigations []string
}

// DefaultPlan is the plan without a plan file: every benchmark of the
// registry but the optional ones, in both worlds.
func DefaultPlan() Plan {
	return Plan{
		End:        board.EndAuto,
		Screen:     true,
		Benchmarks: PlanNames(false),
		Modes:      []experiment.Mode{experiment.Off, experiment.On, experiment.OnPCID},
		Flavours:   []experiment.Flavour{experiment.Minimal, experiment.Linux},
		Globals:    []bool{false, true},
		N:          1000,
		R:          10,
		Warmup:     2,
		WorkN:      200,
		WorkNs:     []int64{0, 100, 500, 2000, 5000},
		PingPongN:  200,
		// Small enough for the emulator; perf's defaults are 10 groups
		// and 100 loops, the reference figures' 20 groups.
		MsgGroups: 2, MsgLoops: 10, MsgSize: 100, MsgIPC: IPCSocket,
		PState:        cpustate.PStateNominal,
		PMU:           true,
		Mitigations:   MitigationNames(),
		OracleSamples: 1000, OracleAttempts: 100,
		// lmbench's lat_ctx -s and Gregg's sweep span a working set from
		// nothing to beyond the STLB (1536 entries on Skylake).
		SweepPages:       []int{0, 1, 4, 16, 64, 256, 1024, 4096},
		SweepKernelPages: []int{0, 1, 4, 16, 64, 256, 1024, 4096},
		SweepSizes:       sweepSizeNames,
		SweepN:           100,
	}
}

// listOf parses a comma-separated list of values, each by parse (the
// model's Parse functions: experiment.ParseMode, ParseFlavour, ...), in
// the order given, without repeats; a value parse refuses makes an error
// that lists the valid names (names, sorted).
func listOf[T comparable](v string, parse func(string) (T, error), names []string, what string) ([]T, error) {
	var out []T
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		x, err := parse(f)
		if err != nil {
			sorted := slices.Sorted(slices.Values(names))
			return nil, fmt.Errorf("%s must be a comma-separated list of %s", what, strings.Join(sorted, ", "))
		}
		if slices.Contains(out, x) {
			return nil, fmt.Errorf("%s lists %s twice", what, f)
		}
		out = append(out, x)
	}
	return out, nil
}

// namesOf are the names of xs (the model's rows).
func namesOf[T fmt.Stringer](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
}

// oneOf parses a name that must be one of names.
func oneOf(names []string) func(string) (string, error) {
	return func(n string) (string, error) {
		if !slices.Contains(names, n) {
			return "", fmt.Errorf("%q is not one of %s", n, strings.Join(names, ", "))
		}
		return n, nil
	}
}

// intIn parses an integer between lo and hi.
func intIn(v, what string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s must be an integer from %d to %d", what, lo, hi)
	}
	return n, nil
}

// PlanError is a line of the plan file that could not be used; the run
// goes on without it.
type PlanError struct {
	Line int    // 1-based line number
	Text string // the line as written
	Err  string // what is wrong with it
	// Kept is the line whose value the key keeps (a key given twice), 0
	// when the key keeps its default.
	Kept int
}

func (e PlanError) Error() string {
	return fmt.Sprintf("plan line %d %q: %s", e.Line, e.Text, e.Err)
}

// Consequence says what the run does instead of the line.
func (e PlanError) Consequence() string {
	if e.Kept > 0 {
		return fmt.Sprintf("keeping line %d's value", e.Kept)
	}
	return "using the default"
}

// planKeys lists the keys a plan may set, each with its parser.
var planKeys = map[string]func(p *Plan, v string) error{
	"fault": func(p *Plan, v string) error {
		switch v {
		case "none":
			p.Fault = ""
		case "pf", "gp", "kernel-pf", "kernel-gp":
			p.Fault = v
		default:
			return fmt.Errorf("fault must be none, pf, gp, kernel-pf or kernel-gp")
		}
		return nil
	},
	"end": func(p *Plan, v string) error {
		a, ok := map[string]board.EndAction{
			"auto": board.EndAuto, "return": board.EndReturn,
			"poweroff": board.EndPowerOff, "reset": board.EndReset,
		}[v]
		if !ok {
			return fmt.Errorf("end must be auto, return, poweroff or reset")
		}
		p.End = a
		return nil
	},
	"screen": func(p *Plan, v string) error {
		switch v {
		case "on":
			p.Screen = true
		case "off":
			p.Screen = false
		default:
			return fmt.Errorf("screen must be on or off")
		}
		return nil
	},
	"benchmarks": func(p *Plan, v string) error {
		if v == "none" {
			p.Benchmarks = nil
			return nil
		}
		names := PlanNames(true)
		b, err := listOf(v, oneOf(names), names, "benchmarks")
		if err == nil {
			p.Benchmarks = b
		}
		return err
	},
	"modes": func(p *Plan, v string) error {
		m, err := listOf(v, experiment.ParseMode, namesOf(experiment.Modes()), "modes")
		if err == nil && m[0] != experiment.Off {
			return fmt.Errorf("modes must start with off: the other modes are compared with it")
		}
		if err == nil {
			p.Modes = m
		}
		return err
	},
	"flavours": func(p *Plan, v string) error {
		f, err := listOf(v, experiment.ParseFlavour, namesOf(experiment.Flavours()), "flavours")
		if err == nil {
			p.Flavours = f
		}
		return err
	},
	"pstate": func(p *Plan, v string) error {
		switch v {
		case cpustate.PStateNominal, cpustate.PStateLeave:
			p.PState = v
			return nil
		}
		return fmt.Errorf("pstate must be nominal or leave")
	},
	"pmu": func(p *Plan, v string) error {
		switch v {
		case "on":
			p.PMU = true
		case "off":
			p.PMU = false
		default:
			return fmt.Errorf("pmu must be on or off")
		}
		return nil
	},
	"pmu_events": func(p *Plan, v string) error {
		if v == "default" {
			p.PMUEvents = nil
			return nil
		}
		names := pmu.EventNames()
		e, err := listOf(v, oneOf(names), names, "pmu_events")
		if err == nil {
			p.PMUEvents = e
		}
		return err
	},
	"global": func(p *Plan, v string) error {
		g, ok := map[string][]bool{"off": {false}, "on": {true}, "both": {false, true}}[v]
		if !ok {
			return fmt.Errorf("global must be off, on or both")
		}
		p.Globals = g
		return nil
	},
	"n":                intKey("n", 1, 1_000_000, func(p *Plan) *int { return &p.N }),
	"r":                intKey("r", 1, 4000, func(p *Plan) *int { return &p.R }),
	"warmup":           intKey("warmup", 0, 100, func(p *Plan) *int { return &p.Warmup }),
	"pingpong_n":       intKey("pingpong_n", 1, 1_000_000, func(p *Plan) *int { return &p.PingPongN }),
	"messaging_groups": intKey("messaging_groups", 1, MaxGroups, func(p *Plan) *int { return &p.MsgGroups }),
	"messaging_loops":  intKey("messaging_loops", 1, 100_000, func(p *Plan) *int { return &p.MsgLoops }),
	"messaging_size":   intKey("messaging_size", 8, MaxMessageSize, func(p *Plan) *int { return &p.MsgSize }),
	"messaging_ipc": func(p *Plan, v string) error {
		if v != IPCSocket && v != IPCPipe {
			return fmt.Errorf("messaging_ipc must be %s or %s", IPCSocket, IPCPipe)
		}
		p.MsgIPC = v
		return nil
	},
	"mitigations": func(p *Plan, v string) error {
		m, err := listOf(v, parseRung, MitigationNames(), "mitigations")
		if err == nil && m[0] != rungNone {
			return fmt.Errorf("mitigations must start with none: the knobs are compared with it")
		}
		if err == nil {
			p.Mitigations = m
		}
		return err
	},
	"tlbsweep_pages": func(p *Plan, v string) error {
		n, err := intList(v, "tlbsweep_pages", 0, tlb.SweepMaxPages, false)
		if err == nil {
			p.SweepPages = n
		}
		return err
	},
	"tlbsweep_kernel_pages": func(p *Plan, v string) error {
		n, err := intList(v, "tlbsweep_kernel_pages", 0, tlb.SweepMaxPages, true)
		if err == nil {
			p.SweepKernelPages = n
		}
		return err
	},
	"tlbsweep_sizes": func(p *Plan, v string) error {
		sz, err := listOf(v, oneOf(sweepSizeNames), sweepSizeNames, "tlbsweep_sizes")
		if err == nil {
			p.SweepSizes = sz
		}
		return err
	},
	"tlbsweep_n": intKey("tlbsweep_n", 1, 1_000_000, func(p *Plan) *int { return &p.SweepN }),
	"work_n":     intKey("work_n", 1, 1_000_000, func(p *Plan) *int { return &p.WorkN }),
	"work_ns": func(p *Plan, v string) error {
		var ws []int64
		for _, f := range strings.Split(v, ",") {
			n, err := intIn(strings.TrimSpace(f), "work_ns", 0, 1_000_000)
			if err != nil {
				return fmt.Errorf("work_ns must be a comma-separated list of integers from 0 to 1000000")
			}
			ws = append(ws, int64(n))
		}
		p.WorkNs = ws
		return nil
	},
	"oracle_samples":  intKey("oracle_samples", 10, MaxOracleSamples, func(p *Plan) *int { return &p.OracleSamples }),
	"oracle_attempts": intKey("oracle_attempts", 1, 1000, func(p *Plan) *int { return &p.OracleAttempts }),
}

// intList parses a comma-separated list of integers from lo to hi,
// without repeats; with none, "none" is the empty list.
func intList(v, what string, lo, hi int, none bool) ([]int, error) {
	if none && v == "none" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := intIn(strings.TrimSpace(f), what, lo, hi)
		if err != nil {
			msg := fmt.Sprintf("%s must be a comma-separated list of integers from %d to %d", what, lo, hi)
			if none {
				msg += ", or none"
			}
			return nil, errors.New(msg)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("%s lists %d twice", what, n)
		}
		out = append(out, n)
	}
	return out, nil
}

// PlanKeys returns the keys a plan may set, sorted.
func PlanKeys() []string {
	keys := make([]string, 0, len(planKeys))
	for k := range planKeys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// intKey parses the integer key name, from lo to hi, into the field of
// the plan that at gives, which keeps its value when the value is bad.
func intKey(name string, lo, hi int, at func(*Plan) *int) func(*Plan, string) error {
	return func(p *Plan, v string) error {
		n, err := intIn(v, name, lo, hi)
		if err == nil {
			*at(p) = n
		}
		return err
	}
}

// ParsePlan reads a plan file: one `key = value` per line; '#' starts a
// comment that runs to the end of the line, and blank lines are ignored. It returns the plan, starting from
// DefaultPlan, and one PlanError per line it could not use (unknown key,
// missing '=', bad value, key given twice): that key keeps its default or
// earlier value.
func ParsePlan(data []byte) (Plan, []PlanError) {
	p := DefaultPlan()
	var errs []PlanError
	seen := map[string]int{}
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // a UTF-8 byte-order mark, as some editors write
	for i, raw := range bytes.Split(data, []byte("\n")) {
		text := strings.TrimRight(string(raw), "\r")
		line, _, _ := strings.Cut(text, "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		fail := func(msg string) { errs = append(errs, PlanError{Line: i + 1, Text: text, Err: msg}) }
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			fail("expected key = value")
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		set, known := planKeys[key]
		if !known {
			fail(fmt.Sprintf("unknown key %q", key))
			continue
		}
		if prev, dup := seen[key]; dup {
			errs = append(errs, PlanError{i + 1, text, fmt.Sprintf("%s already set on line %d", key, prev), prev})
			continue
		}
		if err := set(&p, val); err != nil {
			fail(err.Error())
			continue
		}
		seen[key] = i + 1
	}
	return p, errs
}
