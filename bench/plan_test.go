package bench_test

import (
	"github.com/ptilab/ptilab/bench"
	_ "github.com/ptilab/ptilab/bench/all"
	"github.com/ptilab/ptilab/bench/benchtest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/experiment"
)

func TestDefaultPlan(t *testing.T) {
	p := bench.DefaultPlan()
	assert.Equal(t, "", p.Fault)
	assert.Equal(t, board.EndAuto, p.End)
	assert.True(t, p.Screen)
	assert.Equal(t, []string{"null", "work", "lseek", "pingpong", "messaging", "probe", "null32", "work32", "lseek32", "pingpong32", "messaging32", "probe32"}, p.Benchmarks, "everything but the deadlock demonstration")
	assert.Equal(t, []experiment.Mode{experiment.Off, experiment.On, experiment.OnPCID}, p.Modes, "the whole 64-bit matrix")
	assert.Equal(t, []experiment.Flavour{experiment.Minimal, experiment.Linux}, p.Flavours)
	assert.Equal(t, []bool{false, true}, p.Globals)
	assert.NotEqual(t, bench.Plan{}, p, "the zero plan is not the default")
	assert.Equal(t, "/ptilab.plan", bench.PlanFile)
}

// A plan without a modes line runs lass where the CPU has LASS and says
// why it left it out elsewhere; a plan that names its modes runs those.
func TestModesFor(t *testing.T) {
	lass := func(n experiment.Need) bool { return n == experiment.NeedsLASS }
	p, left := bench.DefaultPlan().ModesFor(experiment.Nothing)
	assert.Equal(t, []experiment.Mode{experiment.Off, experiment.On, experiment.OnPCID}, p.Modes)
	assert.Equal(t, []string{"lass: no LASS (CPUID.(EAX=07H,ECX=1):EAX[6])"}, left)
	p, left = bench.DefaultPlan().ModesFor(lass)
	assert.Equal(t, []experiment.Mode{experiment.Off, experiment.On, experiment.OnPCID, experiment.LASS}, p.Modes)
	assert.Empty(t, left)
	p, errs := bench.ParsePlan([]byte("modes = default\n"))
	require.Empty(t, errs)
	assert.Equal(t, bench.DefaultPlan(), p, "modes = default is the plan without a modes line")
	named, errs := bench.ParsePlan([]byte("modes = off,on\n"))
	require.Empty(t, errs)
	p, left = named.ModesFor(lass)
	assert.Equal(t, []experiment.Mode{experiment.Off, experiment.On}, p.Modes)
	assert.Empty(t, left)
}

func TestParsePlanValid(t *testing.T) {
	benchtest.CheckValid(t, []benchtest.Valid{
		{Name: "empty file", In: "", Want: bench.DefaultPlan()},
		{Name: "only newlines", In: "\n\n\n", Want: bench.DefaultPlan()},
		{Name: "comments and blank lines", In: "# a plan\n\n   # indented comment\n\t\n#fault = pf\n", Want: bench.DefaultPlan()},
		{Name: "fault none", In: "fault = none", Want: bench.DefaultPlan()},
		{Name: "fault pf", In: "fault = pf", Want: benchtest.PlanWith(func(p *bench.Plan) { p.Fault = "pf" })},
		{Name: "fault gp", In: "fault = gp", Want: benchtest.PlanWith(func(p *bench.Plan) { p.Fault = "gp" })},
		{Name: "end auto", In: "end = auto", Want: bench.DefaultPlan()},
		{Name: "end return", In: "end = return", Want: benchtest.PlanWith(func(p *bench.Plan) { p.End = board.EndReturn })},
		{Name: "end key", In: "end = key\nend_wait = 30", Want: benchtest.PlanWith(func(p *bench.Plan) { p.End, p.EndWait = board.EndKey, 30 })},
		{Name: "end_wait none", In: "end_wait = none", Want: benchtest.PlanWith(func(p *bench.Plan) { p.EndWait = -1 })},
		{Name: "end poweroff", In: "end = poweroff", Want: benchtest.PlanWith(func(p *bench.Plan) { p.End = board.EndPowerOff })},
		{Name: "end reset", In: "end = reset", Want: benchtest.PlanWith(func(p *bench.Plan) { p.End = board.EndReset })},
		{Name: "screen on", In: "screen = on", Want: bench.DefaultPlan()},
		{Name: "screen off", In: "screen = off", Want: benchtest.PlanWith(func(p *bench.Plan) { p.Screen = false })},
		{Name: "no spaces", In: "screen=off", Want: benchtest.PlanWith(func(p *bench.Plan) { p.Screen = false })},
		{Name: "many spaces and tabs", In: "  \tscreen \t=\t  off  \t", Want: benchtest.PlanWith(func(p *bench.Plan) { p.Screen = false })},
		{Name: "comment after a value", In: "fault = pf  # try the fault path\nscreen=off#no display\n", Want: benchtest.PlanWith(func(p *bench.Plan) { p.Fault, p.Screen = "pf", false })},
		{Name: "CRLF line ends", In: "# plan\r\nfault = gp\r\n\r\nend = reset\r\n", Want: benchtest.PlanWith(func(p *bench.Plan) { p.Fault, p.End = "gp", board.EndReset })},
		{Name: "no final newline", In: "end = poweroff\nscreen = off", Want: benchtest.PlanWith(func(p *bench.Plan) { p.End, p.Screen = board.EndPowerOff, false })},
		{
			Name: "all keys",
			In:   "fault = pf\nend = return\nscreen = off\nbenchmarks = probe,null\nmodes = off,on\nflavours = linux\nglobal = on\nn = 50\nr = 3\nwarmup = 0\n",
			Want: benchtest.PlanWith(func(p *bench.Plan) {
				p.Fault, p.End, p.Screen = "pf", board.EndReturn, false
				p.Benchmarks = []string{"probe", "null"}
				p.Modes, p.Flavours, p.Globals = []experiment.Mode{experiment.Off, experiment.On}, []experiment.Flavour{experiment.Linux}, []bool{true}
				p.ModesNamed = true
				p.N, p.R, p.Warmup = 50, 3, 0
			}),
		},
		{Name: "no benchmarks", In: "benchmarks = none", Want: benchtest.PlanWith(func(p *bench.Plan) { p.Benchmarks = nil })},
		{Name: "pingpong and deadlock", In: "benchmarks = deadlock, pingpong", Want: benchtest.PlanWith(func(p *bench.Plan) { p.Benchmarks = []string{"deadlock", "pingpong"} })},
		{Name: "global both", In: "global = both", Want: bench.DefaultPlan()},
		{Name: "loop offset 0", In: "loop_offset = 0", Want: bench.DefaultPlan()},
		{Name: "loop offsets", In: "loop_offset = 0, 32,4064", Want: benchtest.PlanWith(func(p *bench.Plan) { p.LoopOffsets = []int{0, 32, 4064} })},
		{Name: "global off", In: "global = off", Want: benchtest.PlanWith(func(p *bench.Plan) { p.Globals = []bool{false} })},
		{Name: "pstate nominal", In: "pstate = nominal", Want: bench.DefaultPlan()},
		{Name: "pstate leave", In: "pstate = leave", Want: benchtest.PlanWith(func(p *bench.Plan) { p.PState = "leave" })},
		{Name: "pmu on", In: "pmu = on", Want: bench.DefaultPlan()},
		{Name: "pmu off", In: "pmu = off", Want: benchtest.PlanWith(func(p *bench.Plan) { p.PMU = false })},
		{Name: "pmu_events default", In: "pmu_events = default", Want: bench.DefaultPlan()},
		{Name: "pmu_events named", In: "pmu_events = ITLB_MISSES.WALK_COMPLETED, DTLB_LOAD_MISSES.WALK_PENDING",
			Want: benchtest.PlanWith(func(p *bench.Plan) {
				p.PMUEvents = []string{"ITLB_MISSES.WALK_COMPLETED", "DTLB_LOAD_MISSES.WALK_PENDING"}
			})},
	})
}

// TestParsePlanRejectsLine: a plan of one bad line keeps every default
// and reports the line, its number and what is wrong with it.
func TestParsePlanRejectsLine(t *testing.T) {
	benchtest.CheckRejected(t, []benchtest.Rejected{
		{Name: "unknown key", Line: "colour = blue", Err: `unknown key "colour"`},
		{Name: "a typo of a key", Line: "flavour = minimal", Err: `unknown key "flavour" (did you mean flavours?)`},
		{Name: "another typo", Line: "warmpu = 1", Err: `unknown key "warmpu" (did you mean warmup?)`},
		{Name: "key is case-sensitive", Line: "Screen = off", Err: "unknown key"},
		{Name: "modes must start with off", Line: "modes = on,off", Err: "modes must start with off"},
		{Name: "unknown mode", Line: "modes = off,kaiser", Err: "modes must be a comma-separated list of asi, asi+pcid, lass, off, on, on+pcid"},
		{Name: "a flavour twice", Line: "flavours = linux, linux", Err: "flavours lists linux twice"},
		{Name: "empty key", Line: "= on", Err: `unknown key ""`},
		{Name: "bad fault", Line: "fault = ud", Err: "fault must be none, pf, gp, kernel-pf or kernel-gp"},
		{Name: "bad end", Line: "end = halt", Err: "end must be auto, return, key, poweroff or reset"},
		{Name: "bad screen", Line: "screen = yes", Err: "screen must be on or off"},
		{Name: "bad pstate", Line: "pstate = turbo", Err: "pstate must be nominal or leave"},
		{Name: "values are case-sensitive", Line: "fault = PF", Err: "fault must be"},
		{Name: "empty value", Line: "end =", Err: "end must be"},
		{Name: "second '=' belongs to the value", Line: "screen = on = off", Err: "screen must be on or off"},
		{Name: "bad pmu", Line: "pmu = yes", Err: "pmu must be on or off"},
		{Name: "unknown event", Line: "pmu_events = DTLB_LOAD_MISSES.WALK_COMPLETED, CYCLES", Err: "pmu_events must be a comma-separated list of"},
		{Name: "an event twice", Line: "pmu_events = ITLB_MISSES.STLB_HIT,ITLB_MISSES.STLB_HIT", Err: "pmu_events lists ITLB_MISSES.STLB_HIT twice"},
	})
}

func TestParsePlanErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    bench.Plan
		errs    []bench.PlanError // Err checked by substring
		errText []string
	}{
		{
			name:    "n out of range, r not a number, bad work_ns",
			in:      "n = 0\nr = ten\nwork_ns = 0,-5\nbenchmarks = null,fork\nglobal = maybe\n",
			want:    bench.DefaultPlan(),
			errs:    []bench.PlanError{{Line: 1, Text: "n = 0"}, {Line: 2, Text: "r = ten"}, {Line: 3, Text: "work_ns = 0,-5"}, {Line: 4, Text: "benchmarks = null,fork"}, {Line: 5, Text: "global = maybe"}},
			errText: []string{"n must be an integer from 1 to 1000000", "r must be an integer from 1 to 4000", "work_ns must be", "benchmarks must be a comma-separated list of deadlock, flushcost, ladder, ladder32, lseek, lseek32, messaging, messaging32, null, null32, oracle, pingpong, pingpong32, probe, probe32, retention, tlbsweep, work, work32", "global must be off, on or both"},
		},
		{
			name: "loop offsets: not a multiple of 32, past a page, not from 0, twice, too many",
			in:   "loop_offset = 0,16\nloop_offset = 0,4096\nloop_offset = 32\nloop_offset = 0,32,32\nloop_offset = 0,32,64,96,128\n",
			want: bench.DefaultPlan(),
			errs: []bench.PlanError{{Line: 1, Text: "loop_offset = 0,16"}, {Line: 2, Text: "loop_offset = 0,4096"}, {Line: 3, Text: "loop_offset = 32"},
				{Line: 4, Text: "loop_offset = 0,32,32"}, {Line: 5, Text: "loop_offset = 0,32,64,96,128"}},
			errText: []string{"loop_offset must be a list of at most 4 offsets in bytes, multiples of 32 from 0 to 4064, starting with 0", "loop_offset must be",
				"loop_offset must be", "loop_offset lists 32 twice", "loop_offset must be"},
		},
		{
			name:    "missing '='",
			in:      "# comment\nscreen off\n",
			want:    bench.DefaultPlan(),
			errs:    []bench.PlanError{{Line: 2, Text: "screen off"}},
			errText: []string{"expected key = value"},
		},
		{
			name:    "key given twice: second reported, first kept",
			in:      "end = reset\nscreen = off\nend = poweroff\n",
			want:    benchtest.PlanWith(func(p *bench.Plan) { p.End, p.Screen = board.EndReset, false }),
			errs:    []bench.PlanError{{Line: 3, Text: "end = poweroff"}},
			errText: []string{"end already set on line 1"},
		},
		{
			name:    "key given three times",
			in:      "fault = pf\nfault = gp\nfault = none\n",
			want:    benchtest.PlanWith(func(p *bench.Plan) { p.Fault = "pf" }),
			errs:    []bench.PlanError{{Line: 2, Text: "fault = gp"}, {Line: 3, Text: "fault = none"}},
			errText: []string{"fault already set on line 1", "fault already set on line 1"},
		},
		{
			name:    "a bad first value does not count as set",
			in:      "screen = maybe\nscreen = off\n",
			want:    benchtest.PlanWith(func(p *bench.Plan) { p.Screen = false }),
			errs:    []bench.PlanError{{Line: 1, Text: "screen = maybe"}},
			errText: []string{"screen must be"},
		},
		{
			name: "line numbers count blank and comment lines, Text as written",
			in:   "# plan\n\n  fault = xx  \r\nend = return\r\n\n\tbogus\t\r\nscreen = off\n",
			want: benchtest.PlanWith(func(p *bench.Plan) { p.End, p.Screen = board.EndReturn, false }),
			errs: []bench.PlanError{
				{Line: 3, Text: "  fault = xx  "},
				{Line: 6, Text: "\tbogus\t"},
			},
			errText: []string{"fault must be", "expected key = value"},
		},
		{
			name:    "a good line after errors still applies",
			in:      "nope\nfault = gp",
			want:    benchtest.PlanWith(func(p *bench.Plan) { p.Fault = "gp" }),
			errs:    []bench.PlanError{{Line: 1, Text: "nope"}},
			errText: []string{"expected key = value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Len(t, tt.errText, len(tt.errs), "test table")
			p, errs := bench.ParsePlan([]byte(tt.in))
			assert.Equal(t, tt.want, p)
			require.Len(t, errs, len(tt.errs), "%v", errs)
			for i, e := range errs {
				assert.Equal(t, tt.errs[i].Line, e.Line, "error %d line", i)
				assert.Equal(t, tt.errs[i].Text, e.Text, "error %d text", i)
				assert.Contains(t, e.Err, tt.errText[i], "error %d", i)
				// Error() names the line, the text and the problem.
				msg := e.Error()
				assert.True(t, strings.HasPrefix(msg, "plan line "), msg)
				assert.Contains(t, msg, e.Err)
			}
		})
	}
}

func TestPlanErrorError(t *testing.T) {
	e := bench.PlanError{Line: 7, Text: "end = halt", Err: "end must be auto, return, poweroff or reset"}
	assert.Equal(t, `plan line 7 "end = halt": end must be auto, return, poweroff or reset`, e.Error())
	var err error = e
	assert.EqualError(t, err, e.Error())
}

func TestPlanErrorConsequence(t *testing.T) {
	p, errs := bench.ParsePlan([]byte("n = 100\nn = 200\nr = x\n"))
	require.Len(t, errs, 2)
	assert.Equal(t, 100, p.N, "the first value stays")
	assert.Equal(t, 1, errs[0].Kept)
	assert.Equal(t, "keeping line 1's value", errs[0].Consequence())
	assert.Equal(t, 0, errs[1].Kept)
	assert.Equal(t, "using the default", errs[1].Consequence())
}

func TestPlanByteOrderMark(t *testing.T) {
	p, errs := bench.ParsePlan([]byte("\ufeffscreen = off\r\n"))
	assert.Empty(t, errs)
	assert.False(t, p.Screen)
}

// TestEndWaitRefused: end_wait takes none or whole seconds up to a day:
// a unit, a negative (the plan's own "none"), a fraction or more than a
// day is the image's plan error, the default kept.
func TestEndWaitRefused(t *testing.T) {
	for _, v := range []string{"5m", "-1", "1.5", "86401"} {
		p, errs := bench.ParsePlan([]byte("end_wait = " + v + "\n"))
		require.Len(t, errs, 1, v)
		assert.Equal(t, "end_wait must be none or seconds from 0 to 86400", errs[0].Err, v)
		assert.Equal(t, -1, p.EndWait, "%s: the default, until a key", v)
	}
}

// TestBaselineMs: baseline_ms takes auto or 1 to 60000 milliseconds; 0
// (no baseline: every run has one), a unit or more than a minute is a
// plan error, the default (auto) kept.
func TestBaselineMs(t *testing.T) {
	p, errs := bench.ParsePlan([]byte("baseline_ms = 250\n"))
	require.Empty(t, errs)
	assert.Equal(t, 250, p.BaselineMs)
	p, errs = bench.ParsePlan([]byte("baseline_ms = auto\n"))
	require.Empty(t, errs)
	assert.Equal(t, -1, p.BaselineMs)
	assert.Equal(t, -1, bench.DefaultPlan().BaselineMs)
	for _, v := range []string{"0", "1s", "60001", "-1"} {
		p, errs := bench.ParsePlan([]byte("baseline_ms = " + v + "\n"))
		require.Len(t, errs, 1, v)
		assert.Equal(t, "baseline_ms must be auto or milliseconds from 1 to 60000", errs[0].Err, v)
		assert.Equal(t, -1, p.BaselineMs, v)
	}
}
