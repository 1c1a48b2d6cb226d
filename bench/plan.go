// Package bench is the benchmark engine: it runs ptilab's measurements
// and reports them. It holds the run plan read from the boot volume (the
// engine's keys; the families register theirs, key.go), the registry
// the families fill (registry.go; package bench/all registers them in the
// default plan's order), the two worlds behind one interface (world.go,
// world64.go, world32.go), Measure and the statistics, the counters read
// around every repeat, and the Reporter: the result records (a human line
// and a `PTILAB {json}` line each) and the final `PTILAB-END {json}` line.
// The benchmark bodies are its subpackages, by family: syscalls,
// taskbench, isolation, tlbbench, ladder, seed.
package bench

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/pmu"
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
	// device, powers Bochs off and, on a PC, waits for a key before it
	// returns to the firmware (EndKey); the other actions act under the
	// emulators too.
	End board.EndAction
	// EndWait is how long an end that waits for a key waits at most, in
	// seconds; negative: until a key.
	EndWait int
	// Screen selects whether the console is also drawn on the displays.
	Screen bool
	// Benchmarks are the plan names of the benchmarks to run, in this
	// order (the registry's plan names: PlanNames).
	Benchmarks []string

	// The matrix every benchmark of the registry runs over: the isolation
	// modes (off first: the others are compared with it), the trampoline
	// flavours and the global-page settings (the benchmarks that take
	// them), calls per repeat, measured repeats and warm-up repeats.
	Modes []experiment.Mode
	// ModesNamed: the plan has a modes line (else RunPlan adds the
	// default modes this CPU has: ModesFor).
	ModesNamed bool
	// Entries are the plan's entries (its entries line), nil for each
	// world's default ones; a world none of whose entries it names runs
	// its default ones too (EntriesOf).
	Entries  []experiment.Entry
	Flavours []experiment.Flavour
	// ASIActions are the sets of actions the asi modes' switch back runs
	// (plan key asi_actions: experiment.Config.ASIActions), each a
	// configuration of every asi-mode row of null, lseek, the ping-pong
	// and sched-messaging (ConfigsOf); none alone by default.
	ASIActions []experiment.Knobs
	Globals    []bool
	N, R       int
	Warmup     int
	// LoopOffsets are the places of the worlds' ring-3 programs, and so
	// of their timed loops: 0 (Setup's places) first, then offsets in
	// bytes (experiment.CheckLoopOffset: multiples of 32) at which
	// RunPlan runs every benchmark that reads loop_offset again, with the
	// programs that many bytes further (World.Place).
	LoopOffsets []int

	// PState is what the run does to the core's P-state before the
	// benchmarks: cpustate.PStateNominal (request the maximum non-turbo
	// ratio, restore the firmware's request at the end) or
	// cpustate.PStateLeave (touch nothing).
	PState string

	// BaselineMs is how long the disturbance baseline scans for lost time
	// before the benchmarks (RunBaseline), in milliseconds; negative:
	// BaselineAuto's.
	BaselineMs int

	// PMU says whether the figures, both worlds', count with the
	// performance counters (where the CPU has them, startPMU); PMUEvents are the
	// model's events to count on the programmable counters (names of
	// pmu.EventNames), nil for its table's first ones.
	PMU       bool
	PMUEvents []string

	// EmulatorBuild is the emulator build the host runner says runs the
	// image ("bochs 3.0.devel 783b58fd6d9b", host/bochs.BootPlan): the
	// image cannot tell one Bochs build from another, so it records what
	// it is told, in the machine record. Empty: not said.
	EmulatorBuild string

	// values are the families' plan keys' values (Key), by name: every
	// registered key's, its default where the plan has no line.
	values map[string]any
}

// DefaultPlan is the plan without a plan file: every benchmark of the
// registry but the optional ones, in both worlds.
func DefaultPlan() Plan {
	return Plan{
		End:         board.EndAuto,
		EndWait:     -1,
		Screen:      true,
		Benchmarks:  PlanNames(false),
		Modes:       defaultModes,
		Flavours:    []experiment.Flavour{experiment.Minimal, experiment.Linux},
		ASIActions:  []experiment.Knobs{0},
		Globals:     []bool{false, true},
		N:           1000,
		R:           10,
		Warmup:      2,
		LoopOffsets: []int{0},
		PState:      cpustate.PStateNominal,
		BaselineMs:  -1,
		PMU:         true,
		values:      defaultValues(),
	}
}

// Warnings are what a plan the image accepts will still not do: each
// world whose planned benchmarks keep their repeats' counts in the task's
// data pages (Benchmark.TaskRepeats) but holds fewer than r + warmup of
// them, with those benchmarks, which then fail.
func (p Plan) Warnings() []string {
	var out []string
	for _, width := range []int{64, 32} {
		max := Worlds[width].User().MaxRepeats
		if p.R+p.Warmup <= max {
			continue
		}
		var names []string
		for _, name := range p.Benchmarks {
			if e, ok := lookup(name); ok && e.width == width && e.b.TaskRepeats {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			out = append(out, fmt.Sprintf("r + warmup = %d, but the %d-bit world's task holds at most %d repeats: %s will fail",
				p.R+p.Warmup, width, max, strings.Join(names, ", ")))
		}
	}
	return out
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
			"auto": board.EndAuto, "return": board.EndReturn, "key": board.EndKey,
			"poweroff": board.EndPowerOff, "reset": board.EndReset,
		}[v]
		if !ok {
			return fmt.Errorf("end must be auto, return, key, poweroff or reset")
		}
		p.End = a
		return nil
	},
	"end_wait": wordOrInt("end_wait", "none", "seconds", 0, maxEndWait, func(p *Plan) *int { return &p.EndWait }),
	"screen":   onOff("screen", func(p *Plan) *bool { return &p.Screen }),
	"benchmarks": listKey("benchmarks", "none", func() ([]string, func(string) (string, error)) {
		names := PlanNames(true)
		return names, OneOf(names)
	}, func(p *Plan) *[]string { return &p.Benchmarks }),
	"modes": func(p *Plan, v string) error {
		if v == "default" {
			p.Modes, p.ModesNamed = defaultModes, false
			return nil
		}
		m, err := ListOf(v, experiment.ParseMode, namesOf(experiment.Modes()), "modes")
		if err == nil && m[0] != experiment.Off {
			return fmt.Errorf("modes must start with off: the other modes are compared with it")
		}
		if err == nil {
			p.Modes, p.ModesNamed = m, true
		}
		return err
	},
	"entries": listKey("entries", "default", func() ([]string, func(string) (experiment.Entry, error)) {
		all := append(experiment.Entries(experiment.W64), experiment.Entries(experiment.W32)...)
		return namesOf(all), experiment.ParseEntry
	}, func(p *Plan) *[]experiment.Entry { return &p.Entries }),
	"flavours": listKey("flavours", "", func() ([]string, func(string) (experiment.Flavour, error)) {
		return namesOf(experiment.Flavours()), experiment.ParseFlavour
	}, func(p *Plan) *[]experiment.Flavour { return &p.Flavours }),
	"asi_actions": listKey("asi_actions", "", func() ([]string, func(string) (experiment.Knobs, error)) {
		return append([]string{"none"}, namesOf(experiment.ASIActions())...), parseASIActions
	}, func(p *Plan) *[]experiment.Knobs { return &p.ASIActions }),
	"pstate": func(p *Plan, v string) error {
		switch v {
		case cpustate.PStateNominal, cpustate.PStateLeave:
			p.PState = v
			return nil
		}
		return fmt.Errorf("pstate must be nominal or leave")
	},
	"baseline_ms": wordOrInt("baseline_ms", "auto", "milliseconds", 1, maxBaselineMs, func(p *Plan) *int { return &p.BaselineMs }),
	"pmu":         onOff("pmu", func(p *Plan) *bool { return &p.PMU }),
	"pmu_events": listKey("pmu_events", "default", func() ([]string, func(string) (string, error)) {
		names := pmu.EventNames()
		return names, OneOf(names)
	}, func(p *Plan) *[]string { return &p.PMUEvents }),
	"global": func(p *Plan, v string) error {
		g, ok := map[string][]bool{"off": {false}, "on": {true}, "both": {false, true}}[v]
		if !ok {
			return fmt.Errorf("global must be off, on or both")
		}
		p.Globals = g
		return nil
	},
	"emulator_build": func(p *Plan, v string) error {
		if len(v) > maxEmulatorBuild || strings.IndexFunc(v, func(r rune) bool { return r < ' ' || r > '~' }) >= 0 {
			return fmt.Errorf("emulator_build must be printable ASCII of at most %d characters", maxEmulatorBuild)
		}
		p.EmulatorBuild = v
		return nil
	},
	"loop_offset": func(p *Plan, v string) error {
		bad := fmt.Errorf("loop_offset must be a list of at most %d offsets in bytes, multiples of %d from 0 to %d, starting with 0 (the others are compared with it)",
			maxLoopOffsets, experiment.LoopOffsetStep, experiment.MaxLoopOffset)
		var offs []int
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || experiment.CheckLoopOffset(n) != nil {
				return bad
			}
			if slices.Contains(offs, n) {
				return fmt.Errorf("loop_offset lists %d twice", n)
			}
			offs = append(offs, n)
		}
		if offs[0] != 0 || len(offs) > maxLoopOffsets {
			return bad
		}
		p.LoopOffsets = offs
		return nil
	},
	"n":      intField("n", 1, 1_000_000, func(p *Plan) *int { return &p.N }),
	"r":      intField("r", 1, 4000, func(p *Plan) *int { return &p.R }),
	"warmup": intField("warmup", 0, 100, func(p *Plan) *int { return &p.Warmup }),
}

// EntriesOf returns the entries plan p runs in world w, in the world's
// order: those of w its entries line names (a plan that names one gets
// its rows, "unsupported" where the CPU lacks what it needs), or, when it
// names none of w's, w's default entries (experiment.EntryRow.Default)
// whose Needs this CPU has (DefaultLeftOut says which that leaves out,
// and why).
func (p Plan) EntriesOf(w World) []experiment.Entry {
	named := p.named(w)
	var out []experiment.Entry
	for _, e := range w.Entries() {
		r := e.Row()
		if named && slices.Contains(p.Entries, e) || !named && r.Default && w.Has(r.Needs) {
			out = append(out, e)
		}
	}
	return out
}

// named reports whether p's entries line names an entry of w.
func (p Plan) named(w World) bool {
	for _, e := range w.Entries() {
		if slices.Contains(p.Entries, e) {
			return true
		}
	}
	return false
}

// defaultModes are the modes of a plan without a modes line on any CPU
// (experiment.DefaultModes); ModesFor adds those this CPU has.
var defaultModes, _ = experiment.DefaultModes(experiment.Nothing)

// ModesFor returns p with, when its plan had no modes line, the default
// modes that need something of the CPU (lass) where has says the CPU has
// it, and a line for each it leaves out ("lass: no LASS
// (CPUID.(EAX=07H,ECX=1):EAX[6])"); p as it is when it names its modes.
func (p Plan) ModesFor(has func(experiment.Need) bool) (Plan, []string) {
	if p.ModesNamed {
		return p, nil
	}
	run, left := experiment.DefaultModes(has)
	p.Modes = run
	var out []string
	for _, m := range left {
		out = append(out, m.String()+": "+m.Row().NeedText)
	}
	return p, out
}

// DefaultLeftOut returns a line for each default entry of w that plan p
// leaves out because this CPU lacks what it needs ("fred: no FRED
// (CPUID.(EAX=07H,ECX=1):EAX[17])"); none when p names w's entries.
func (p Plan) DefaultLeftOut(w World) []string {
	if p.named(w) {
		return nil
	}
	var out []string
	for _, e := range w.Entries() {
		if r := e.Row(); r.Default && !w.Has(r.Needs) {
			out = append(out, e.String()+": "+r.NeedText)
		}
	}
	return out
}

// didYouMean suggests the plan key nearest to key, a typo of it ("flavour"
// for flavours): " (did you mean flavours?)", or "" when none is within
// two edits (and fewer than half of key's letters).
func didYouMean(key string) string {
	best, bestD := "", 3
	for _, k := range PlanKeys() {
		if d := editDistance(key, k); d < bestD && 2*d < len(key) {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// wordOrInt is the parser of a key whose value is either word, which
// sets the field to -1, or an integer from lo to hi in unit.
func wordOrInt(key, word, unit string, lo, hi int, field func(*Plan) *int) func(*Plan, string) error {
	return func(p *Plan, v string) error {
		if v == word {
			*field(p) = -1
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%s must be %s or %s from %d to %d", key, word, unit, lo, hi)
		}
		*field(p) = n
		return nil
	}
}

// onOff is the parser of a key whose value is on or off.
func onOff(key string, field func(*Plan) *bool) func(*Plan, string) error {
	return func(p *Plan, v string) error {
		on, ok := map[string]bool{"on": true, "off": false}[v]
		if !ok {
			return fmt.Errorf("%s must be on or off", key)
		}
		*field(p) = on
		return nil
	}
}

// parseASIActions parses a set of asi actions: "none", or actions
// (experiment.ASIActions) joined by "+" ("verw+l1d").
func parseASIActions(v string) (experiment.Knobs, error) {
	k, err := experiment.ParseKnobs(v)
	if err == nil && !k.ActAt(experiment.AtASIExit) {
		err = fmt.Errorf("%s: not all are asi actions", v)
	}
	return k, err
}

// ConfigsOf are the configurations p runs of c: c itself, or in an asi
// mode c with each of p's sets of asi actions (ASIActions), in their
// order.
func (p Plan) ConfigsOf(c experiment.Config) []experiment.Config {
	if !c.Mode.ASI() {
		return []experiment.Config{c}
	}
	var out []experiment.Config
	for _, k := range p.ASIActions {
		c.ASIActions = k
		out = append(out, c)
	}
	return out
}

// listKey is the parser of a key whose value is a comma-separated list
// of the names list gives, each turned into a T by the parser it gives;
// or word (when not ""), which empties the field.
func listKey[T comparable](key, word string, list func() ([]string, func(string) (T, error)), field func(*Plan) *[]T) func(*Plan, string) error {
	return func(p *Plan, v string) error {
		if word != "" && v == word {
			*field(p) = nil
			return nil
		}
		names, parse := list()
		l, err := ListOf(v, parse, names, key)
		if err == nil {
			*field(p) = l
		}
		return err
	}
}

// maxLoopOffsets bounds the loop_offset key's list: each offset runs its
// benchmarks again.
const maxLoopOffsets = 4

// maxBaselineMs bounds the baseline_ms key's value (a minute).
const maxBaselineMs = 60000

// maxEndWait bounds the end_wait key's value, in seconds (a day).
const maxEndWait = 86400

// maxEmulatorBuild bounds the emulator_build key's value, in bytes.
const maxEmulatorBuild = 100

// intField parses the integer key name, from lo to hi, into the field of
// the plan that at gives, which keeps its value when the value is bad.
func intField(name string, lo, hi int, at func(*Plan) *int) func(*Plan, string) error {
	return func(p *Plan, v string) error {
		n, err := IntIn(v, name, lo, hi)
		if err == nil {
			*at(p) = n
		}
		return err
	}
}

// PlanKeys returns the keys a plan may set, sorted: the engine's and
// the families' (NewKey).
func PlanKeys() []string {
	keys := slices.Collect(maps.Keys(planKeys))
	keys = slices.AppendSeq(keys, maps.Keys(familyKeys))
	slices.Sort(keys)
	return keys
}

// isKey reports whether key is a plan key: the engine's or a family's.
func isKey(key string) bool {
	_, engine := planKeys[key]
	_, family := familyKeys[key]
	return engine || family
}

// setKey sets plan key key (isKey) of p from a plan line's value: an
// engine key by its parser, a family's by its own (NewKey).
func setKey(p *Plan, key, val string) error {
	if set, ok := planKeys[key]; ok {
		return set(p, val)
	}
	v, err := familyKeys[key].parse(val)
	if err == nil {
		p.set(key, v)
	}
	return err
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
		if !isKey(key) {
			fail(fmt.Sprintf("unknown key %q%s", key, didYouMean(key)))
			continue
		}
		if prev, dup := seen[key]; dup {
			errs = append(errs, PlanError{i + 1, text, fmt.Sprintf("%s already set on line %d", key, prev), prev})
			continue
		}
		if err := setKey(&p, key, val); err != nil {
			fail(err.Error())
			continue
		}
		seen[key] = i + 1
	}
	return p, errs
}
