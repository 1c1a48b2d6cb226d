package bench

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/tlb"
)

func TestDefaultPlan(t *testing.T) {
	p := DefaultPlan()
	assert.Equal(t, "", p.Fault)
	assert.Equal(t, board.EndAuto, p.End)
	assert.True(t, p.Screen)
	assert.Equal(t, []string{"null", "work", "lseek", "pingpong", "messaging", "probe", "null32", "work32", "lseek32", "pingpong32", "messaging32", "probe32"}, p.Benchmarks, "everything but the deadlock demonstration")
	assert.Equal(t, MessagingParams{Groups: 2, Loops: 10, Size: 100, R: 10, Warmup: 2, IPC: IPCSocket}, messagingParams(p), "small enough for the emulator; sockets as perf")
	assert.Equal(t, 200, pingPongN.Of(p))
	assert.Equal(t, []experiment.Mode{experiment.Off, experiment.On, experiment.OnPCID}, p.Modes, "the whole 64-bit matrix")
	assert.Equal(t, []experiment.Flavour{experiment.Minimal, experiment.Linux}, p.Flavours)
	assert.Equal(t, []bool{false, true}, p.Globals)
	assert.NotEqual(t, Plan{}, p, "the zero plan is not the default")
	assert.Equal(t, "/ptilab.plan", PlanFile)
	assert.Equal(t, []int{0, 1, 4, 16, 64, 256, 1024, 4096}, sweepPages.Of(p), "lat_ctx -s's span: nothing to beyond the STLB")
	assert.Equal(t, sweepPages.Of(p), sweepKernelPages.Of(p))
	assert.Equal(t, []string{"4k", "2m"}, sweepSizesKey.Of(p))
	assert.Equal(t, 100, sweepN.Of(p))
	assert.Equal(t, tlb.SweepMaxPages, sweepPages.Of(p)[len(sweepPages.Of(p))-1], "the default sweep spans its region")
}

// TestSweepPlanErrorLine: a bad sweep key is reported with its line
// number among good lines, and the sweep keeps its default there.
func TestSweepPlanErrorLine(t *testing.T) {
	p, errs := ParsePlan([]byte("benchmarks = tlbsweep\n# sweep\ntlbsweep_pages = 1,8192\ntlbsweep_n = 5\n"))
	require.Len(t, errs, 1)
	assert.Equal(t, 3, errs[0].Line)
	assert.Equal(t, "tlbsweep_pages = 1,8192", errs[0].Text)
	assert.Equal(t, sweepPages.Of(DefaultPlan()), sweepPages.Of(p))
	assert.Equal(t, 5, sweepN.Of(p))
	assert.Equal(t, []string{"tlbsweep"}, p.Benchmarks)
}

// planWith returns DefaultPlan changed by f.
func planWith(f func(*Plan)) Plan {
	p := DefaultPlan()
	f(&p)
	return p
}

func TestParsePlanValid(t *testing.T) {
	tests := []struct {
		name, in string
		want     Plan
	}{
		{"empty file", "", DefaultPlan()},
		{"only newlines", "\n\n\n", DefaultPlan()},
		{"comments and blank lines", "# a plan\n\n   # indented comment\n\t\n#fault = pf\n", DefaultPlan()},
		{"fault none", "fault = none", DefaultPlan()},
		{"fault pf", "fault = pf", planWith(func(p *Plan) { p.Fault = "pf" })},
		{"fault gp", "fault = gp", planWith(func(p *Plan) { p.Fault = "gp" })},
		{"end auto", "end = auto", DefaultPlan()},
		{"end return", "end = return", planWith(func(p *Plan) { p.End = board.EndReturn })},
		{"end poweroff", "end = poweroff", planWith(func(p *Plan) { p.End = board.EndPowerOff })},
		{"end reset", "end = reset", planWith(func(p *Plan) { p.End = board.EndReset })},
		{"screen on", "screen = on", DefaultPlan()},
		{"screen off", "screen = off", planWith(func(p *Plan) { p.Screen = false })},
		{"no spaces", "screen=off", planWith(func(p *Plan) { p.Screen = false })},
		{"many spaces and tabs", "  \tscreen \t=\t  off  \t", planWith(func(p *Plan) { p.Screen = false })},
		{"comment after a value", "fault = pf  # try the fault path\nscreen=off#no display\n", planWith(func(p *Plan) { p.Fault, p.Screen = "pf", false })},
		{"CRLF line ends", "# plan\r\nfault = gp\r\n\r\nend = reset\r\n", planWith(func(p *Plan) { p.Fault, p.End = "gp", board.EndReset })},
		{"no final newline", "end = poweroff\nscreen = off", planWith(func(p *Plan) { p.End, p.Screen = board.EndPowerOff, false })},
		{
			"all keys",
			"fault = pf\nend = return\nscreen = off\nbenchmarks = probe,null\nmodes = off,on\nflavours = linux\nglobal = on\nn = 50\nr = 3\nwarmup = 0\nwork_n = 7\nwork_ns = 0, 1000\npingpong_n = 9\nmessaging_groups = 20\nmessaging_loops = 100\nmessaging_size = 13\nmessaging_ipc = pipe\n",
			planWith(func(p *Plan) {
				MessagingGroups.Set(p, 20)
				msgLoops.Set(p, 100)
				msgSize.Set(p, 13)
				msgIPC.Set(p, IPCPipe)
				p.Fault, p.End, p.Screen = "pf", board.EndReturn, false
				p.Benchmarks = []string{"probe", "null"}
				pingPongN.Set(p, 9)
				p.Modes, p.Flavours, p.Globals = []experiment.Mode{experiment.Off, experiment.On}, []experiment.Flavour{experiment.Linux}, []bool{true}
				p.N, p.R, p.Warmup = 50, 3, 0
				workN.Set(p, 7)
				workNs.Set(p, []int64{0, 1000})
			}),
		},
		{"no benchmarks", "benchmarks = none", planWith(func(p *Plan) { p.Benchmarks = nil })},
		{"messaging bounds", "messaging_groups = 25\nmessaging_size = 8", planWith(func(p *Plan) { MessagingGroups.Set(p, 25); msgSize.Set(p, 8) })},
		{"pingpong and deadlock", "benchmarks = deadlock, pingpong", planWith(func(p *Plan) { p.Benchmarks = []string{"deadlock", "pingpong"} })},
		{"global both", "global = both", DefaultPlan()},
		{"global off", "global = off", planWith(func(p *Plan) { p.Globals = []bool{false} })},
		{"pstate nominal", "pstate = nominal", DefaultPlan()},
		{"pstate leave", "pstate = leave", planWith(func(p *Plan) { p.PState = "leave" })},
		{"pmu on", "pmu = on", DefaultPlan()},
		{"pmu off", "pmu = off", planWith(func(p *Plan) { p.PMU = false })},
		{"pmu_events default", "pmu_events = default", DefaultPlan()},
		{"oracle_samples", "oracle_samples = 1280", planWith(func(p *Plan) { oracleSamples.Set(p, 1280) })},
		{"oracle_attempts", "oracle_attempts = 1", planWith(func(p *Plan) { oracleAttempts.Set(p, 1) })},
		{"pmu_events named", "pmu_events = ITLB_MISSES.WALK_COMPLETED, DTLB_LOAD_MISSES.WALK_PENDING",
			planWith(func(p *Plan) { p.PMUEvents = []string{"ITLB_MISSES.WALK_COMPLETED", "DTLB_LOAD_MISSES.WALK_PENDING"} })},
		{"tlbsweep keys", "tlbsweep_pages = 4096, 0, 16\ntlbsweep_kernel_pages = 1\ntlbsweep_sizes = 2m\ntlbsweep_n = 7\n", planWith(func(p *Plan) {
			sweepPages.Set(p, []int{4096, 0, 16})
			sweepKernelPages.Set(p, []int{1})
			sweepSizesKey.Set(p, []string{"2m"})
			sweepN.Set(p, 7)
		})},
		{"no kernel sweep", "tlbsweep_kernel_pages = none", planWith(func(p *Plan) { sweepKernelPages.Set(p, nil) })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, errs := ParsePlan([]byte(tt.in))
			assert.Empty(t, errs)
			assert.Equal(t, tt.want, p)
		})
	}
}

// TestParsePlanRejectsLine: a plan of one bad line keeps every default
// and reports the line, its number and what is wrong with it.
func TestParsePlanRejectsLine(t *testing.T) {
	tests := []struct{ name, line, err string }{
		{"unknown key", "colour = blue", `unknown key "colour"`},
		{"key is case-sensitive", "Screen = off", "unknown key"},
		{"modes must start with off", "modes = on,off", "modes must start with off"},
		{"unknown mode", "modes = off,kaiser", "modes must be a comma-separated list of off, on, on+pcid"},
		{"a flavour twice", "flavours = linux, linux", "flavours lists linux twice"},
		{"empty key", "= on", `unknown key ""`},
		{"bad fault", "fault = ud", "fault must be none, pf, gp, kernel-pf or kernel-gp"},
		{"bad end", "end = halt", "end must be auto, return, poweroff or reset"},
		{"bad screen", "screen = yes", "screen must be on or off"},
		{"bad pstate", "pstate = turbo", "pstate must be nominal or leave"},
		{"values are case-sensitive", "fault = PF", "fault must be"},
		{"empty value", "end =", "end must be"},
		{"second '=' belongs to the value", "screen = on = off", "screen must be on or off"},
		{"unknown IPC", "messaging_ipc = fifo", "messaging_ipc must be socket or pipe"},
		{"bad pmu", "pmu = yes", "pmu must be on or off"},
		{"unknown event", "pmu_events = DTLB_LOAD_MISSES.WALK_COMPLETED, CYCLES", "pmu_events must be a comma-separated list of"},
		{"an event twice", "pmu_events = ITLB_MISSES.STLB_HIT,ITLB_MISSES.STLB_HIT", "pmu_events lists ITLB_MISSES.STLB_HIT twice"},
		{"too few oracle samples", "oracle_samples = 9", "oracle_samples must be an integer from 10 to 1280"},
		{"too many oracle samples", "oracle_samples = 1281", "oracle_samples must be an integer from 10 to 1280"},
		{"no oracle attempts", "oracle_attempts = 0", "oracle_attempts must be an integer from 1 to 1000"},
		{"sweep beyond its region", "tlbsweep_pages = 0,4097", "tlbsweep_pages must be a comma-separated list of integers from 0 to 4096"},
		{"sweep negative", "tlbsweep_pages = -1", "tlbsweep_pages must be a comma-separated list of integers from 0 to 4096"},
		{"sweep none is not a user list", "tlbsweep_pages = none", "tlbsweep_pages must be"},
		{"sweep point twice", "tlbsweep_pages = 16,1,16", "tlbsweep_pages lists 16 twice"},
		{"kernel sweep bounds", "tlbsweep_kernel_pages = 5000", "tlbsweep_kernel_pages must be a comma-separated list of integers from 0 to 4096, or none"},
		{"sweep size", "tlbsweep_sizes = 4k,1g", "tlbsweep_sizes must be a comma-separated list of 2m, 4k"},
		{"sweep calls", "tlbsweep_n = 0", "tlbsweep_n must be an integer from 1 to 1000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, errs := ParsePlan([]byte(tt.line + "\n"))
			assert.Equal(t, DefaultPlan(), p)
			require.Len(t, errs, 1, "%v", errs)
			assert.Equal(t, PlanError{Line: 1, Text: tt.line, Err: errs[0].Err}, errs[0])
			assert.Contains(t, errs[0].Err, tt.err)
			assert.Equal(t, fmt.Sprintf("plan line 1 %q: %s", tt.line, errs[0].Err), errs[0].Error())
		})
	}
}

func TestParsePlanErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Plan
		errs    []PlanError // Err checked by substring
		errText []string
	}{
		{
			name:    "n out of range, r not a number, bad work_ns",
			in:      "n = 0\nr = ten\nwork_ns = 0,-5\nbenchmarks = null,fork\nglobal = maybe\n",
			want:    DefaultPlan(),
			errs:    []PlanError{{Line: 1, Text: "n = 0"}, {Line: 2, Text: "r = ten"}, {Line: 3, Text: "work_ns = 0,-5"}, {Line: 4, Text: "benchmarks = null,fork"}, {Line: 5, Text: "global = maybe"}},
			errText: []string{"n must be an integer from 1 to 1000000", "r must be an integer from 1 to 4000", "work_ns must be", "benchmarks must be a comma-separated list of deadlock, flushcost, ladder, ladder32, lseek, lseek32, messaging, messaging32, null, null32, oracle, pingpong, pingpong32, probe, probe32, retention, tlbsweep, work, work32", "global must be off, on or both"},
		},
		{
			name:    "missing '='",
			in:      "# comment\nscreen off\n",
			want:    DefaultPlan(),
			errs:    []PlanError{{Line: 2, Text: "screen off"}},
			errText: []string{"expected key = value"},
		},
		{
			name:    "key given twice: second reported, first kept",
			in:      "end = reset\nscreen = off\nend = poweroff\n",
			want:    planWith(func(p *Plan) { p.End, p.Screen = board.EndReset, false }),
			errs:    []PlanError{{Line: 3, Text: "end = poweroff"}},
			errText: []string{"end already set on line 1"},
		},
		{
			name:    "key given three times",
			in:      "fault = pf\nfault = gp\nfault = none\n",
			want:    planWith(func(p *Plan) { p.Fault = "pf" }),
			errs:    []PlanError{{Line: 2, Text: "fault = gp"}, {Line: 3, Text: "fault = none"}},
			errText: []string{"fault already set on line 1", "fault already set on line 1"},
		},
		{
			name:    "a bad first value does not count as set",
			in:      "screen = maybe\nscreen = off\n",
			want:    planWith(func(p *Plan) { p.Screen = false }),
			errs:    []PlanError{{Line: 1, Text: "screen = maybe"}},
			errText: []string{"screen must be"},
		},
		{
			name: "line numbers count blank and comment lines, Text as written",
			in:   "# plan\n\n  fault = xx  \r\nend = return\r\n\n\tbogus\t\r\nscreen = off\n",
			want: planWith(func(p *Plan) { p.End, p.Screen = board.EndReturn, false }),
			errs: []PlanError{
				{Line: 3, Text: "  fault = xx  "},
				{Line: 6, Text: "\tbogus\t"},
			},
			errText: []string{"fault must be", "expected key = value"},
		},
		{
			name:    "a good line after errors still applies",
			in:      "nope\nfault = gp",
			want:    planWith(func(p *Plan) { p.Fault = "gp" }),
			errs:    []PlanError{{Line: 1, Text: "nope"}},
			errText: []string{"expected key = value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Len(t, tt.errText, len(tt.errs), "test table")
			p, errs := ParsePlan([]byte(tt.in))
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
	e := PlanError{Line: 7, Text: "end = halt", Err: "end must be auto, return, poweroff or reset"}
	assert.Equal(t, `plan line 7 "end = halt": end must be auto, return, poweroff or reset`, e.Error())
	var err error = e
	assert.EqualError(t, err, e.Error())
}

func TestPlanErrorConsequence(t *testing.T) {
	p, errs := ParsePlan([]byte("n = 100\nn = 200\nr = x\n"))
	require.Len(t, errs, 2)
	assert.Equal(t, 100, p.N, "the first value stays")
	assert.Equal(t, 1, errs[0].Kept)
	assert.Equal(t, "keeping line 1's value", errs[0].Consequence())
	assert.Equal(t, 0, errs[1].Kept)
	assert.Equal(t, "using the default", errs[1].Consequence())
}

func TestPlanByteOrderMark(t *testing.T) {
	p, errs := ParsePlan([]byte("\ufeffscreen = off\r\n"))
	assert.Empty(t, errs)
	assert.False(t, p.Screen)
}
