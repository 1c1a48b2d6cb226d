// Package taskbench holds the benchmark family of the tasks kernel: the
// ping-pong, sched-messaging and the deadlock check, run on each world's
// tasks kernel (bench.Run), with their plan keys.
package taskbench

import (
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/experiment"
)

// PingPong is the ping-pong's registry row, with its key.
var PingPong = bench.Benchmark{Name: "pingpong", TaskRepeats: true, Summary: "a token through two pipes between two tasks (context switches), processes and threads",
	Worlds: []int{64, 32}, Keys: []string{"modes", "asi_actions", "entries", PingPongN.Name(), "r", "warmup", "loop_offset"}, Run: pingPongTable}

// The ping-pong: two tasks pass a 1-byte token back and forth through two
// pipes, lmbench's lat_ctx shape. Each round trip is two writes, two
// reads and two context switches; between processes each switch loads
// CR3, between threads of one process none does.

// PingPongN is the plan key of the ping-pong's round trips per repeat
// (the mitigation ladder's ping-pong reads it too).
var PingPongN = bench.IntKey("pingpong_n", 200, 1, 1_000_000)

// PingPongResult is one configuration's result.
type PingPongResult struct {
	Config  experiment.Config
	Threads bool // both tasks in one process
	N, R    int
	Stats   bench.Stats // TSC cycles per round trip
	Disturb bench.Disturb
	// What the kernel counted over the run, warm-up included.
	Switches, CR3Loads uint64
	ASITransitions     uint64 // the asi modes' (bench.Exit)
	RoundTrips         uint64 // bytes through each pipe
	Unsup, Failure     error
	samples            []cpustate.Sample // the run's, warm-up included
}

func (p PingPongResult) OK() bool { return p.Unsup == nil && p.Failure == nil }

// Ping-pong's descriptors: pipe A from ping (fd 1) to pong (fd 0), pipe B
// from pong (fd 3) to ping (fd 2).
const (
	pongIn, pingOut = 0, 1
	pingIn, pongOut = 2, 3
)

// pongMark is what pong adds to each reply: it finds it in its own data
// page, and ping's page has another value there, so that a pong that ran
// in ping's address space fails the run.
const pongMark = 0x5a

// second are the second processes of the process-mode runs, a world's
// each, made once.
var second = map[bench.World]bench.Process{}

// pingPongRun makes one ping-pong run in w under c, planned once: r
// repeats of n round trips, checked, and returns the r counts.
func pingPongRun(w bench.World, c experiment.Config, threads bool, n, r int) (PingPongResult, []uint64) {
	res := PingPongResult{Config: c, Threads: threads, N: n, R: r}
	sw, err := w.Plan(c)
	if err != nil {
		res.Unsup = err
		return res, nil
	}
	fail := func(err error) (PingPongResult, []uint64) {
		res.Unsup, res.Failure = bench.SplitErr(err)
		return res, nil
	}
	if max := w.User().MaxRepeats; r > max {
		return fail(fmt.Errorf("%d repeats: the task's data pages hold at most %d", r, max))
	}
	ping, pong := w.MainProcess(), w.MainProcess()
	if !threads {
		if second[w] == nil {
			p, err := w.NewProcess(w.User().DataPages)
			if err != nil {
				return fail(err)
			}
			second[w] = p
		}
		pong = second[w]
	}
	run, err := w.NewRun(sw)
	if err != nil {
		return fail(err)
	}
	p0, err := run.AddProcess(ping, 4)
	if err != nil {
		return fail(err)
	}
	p1 := p0
	if !threads {
		if p1, err = run.AddProcess(pong, 4); err != nil {
			return fail(err)
		}
	}
	a, errA := run.AddPipe(p1, pongIn, p0, pingOut)
	b, errB := run.AddPipe(p0, pingIn, p1, pongOut)
	if errA != nil || errB != nil {
		return fail(fmt.Errorf("the pipes could not be made: %v %v", errA, errB))
	}
	top := w.User().StackTop
	pongStack := top
	if threads {
		pongStack -= 4096 // the threads share the stack pages
	}
	if i, err := run.AddTask(p0, top, bench.PingTask{N: n, R: r, Out: pingOut, In: pingIn, Mark: pongMark}); err != nil || i != 0 {
		return fail(fmt.Errorf("ping's task: %v", err))
	}
	if i, err := run.AddTask(p1, pongStack, bench.PongTask{In: pongIn, Out: pongOut, Mark: pongMark}); err != nil || i != 1 {
		return fail(fmt.Errorf("pong's task: %v", err))
	}
	end, err := run.Start()
	if err != nil {
		return fail(err)
	}
	res.Switches, res.CR3Loads, _ = run.Counts()
	res.ASITransitions = end.ASITransitions
	if !end.OK() {
		return fail(fmt.Errorf("the run ended with %v%s", end, describeTasks(run.Tasks())))
	}
	// Nothing lost: every token went through both pipes, and the kernel
	// switched as the protocol implies: two switches per round trip and
	// one when ping exits; a CR3 load at each between processes, none
	// between threads.
	want := uint64(n) * uint64(r)
	wa, ra := run.PipeBytes(a)
	wb, rb := run.PipeBytes(b)
	res.RoundTrips = wa
	if wa != want || ra != want || wb != want || rb != want {
		return fail(fmt.Errorf("bytes through the pipes: ping->pong %d written %d read, pong->ping %d written %d read; want %d each", wa, ra, wb, rb, want))
	}
	wantCR3 := uint64(0)
	if !threads {
		wantCR3 = 2*want + 1
	}
	if res.Switches != 2*want+1 || res.CR3Loads != wantCR3 {
		return fail(fmt.Errorf("%d context switches and %d CR3 loads; want %d and %d", res.Switches, res.CR3Loads, 2*want+1, wantCR3))
	}
	res.samples = run.Samples()
	return res, bench.ReadCounts(w, ping, r)
}

// describeTasks describes the tasks of a run that did not exit 0, the
// first 8 of them.
func describeTasks(ts []bench.TaskState) string {
	var s []string
	for _, t := range ts {
		if t.State == "exited" && t.Status == 0 {
			continue
		}
		if len(s) == 8 {
			s = append(s, "...")
			break
		}
		s = append(s, t.String())
	}
	if len(s) == 0 {
		return ""
	}
	return "; " + strings.Join(s, "; ")
}

// MeasurePingPong runs the ping-pong under c with both tasks in one
// process or each in its own: r repeats of n round trips after warmup
// repeats, TSC cycles per round trip.
func MeasurePingPong(w bench.World, c experiment.Config, threads bool, n, r, warmup int) PingPongResult {
	res, counts := pingPongRun(w, c, threads, n, r+warmup)
	res.R = r
	if res.OK() {
		perOp := bench.PerOp(counts[warmup:], n, 0)
		res.Stats = bench.Summarize(perOp)
		res.Disturb = bench.DisturbOf(perOp, res.samples, r, warmup, n)
	}
	return res
}

// pingPongTable measures the ping-pong in every mode of the plan, by
// each of the world's entries, processes and threads, with the linux
// trampoline and no global pages, and records each as it finishes
// (package tables shows a row per mode: cycles and ns per round trip, the
// spread, the ratio to off and the CR3 loads per round trip).
func pingPongTable(x *bench.Ctx) any {
	p, w := x.Plan, x.World
	var all []PingPongResult
	for _, entry := range p.EntriesOf(w) {
		var rows []PingPongResult
		for _, mode := range p.Modes {
			for _, c := range p.ConfigsOf(w.TasksConfig(mode, entry)) {
				tasksRow(&rows, func(threads bool) PingPongResult {
					return MeasurePingPong(w, c, threads, PingPongN.Of(p), p.R, p.Warmup)
				}, func(pp PingPongResult, q float64) { pingPong(x, pp, q) })
			}
		}
		all = append(all, rows...)
	}
	return all
}

func (p PingPongResult) row() (experiment.Mode, bool, bench.Stats) {
	return p.Config.Mode, p.Threads, p.Stats
}

// tasksResult is a result of a benchmark whose table has a processes and
// a threads column.
type tasksResult interface {
	OK() bool
	row() (mode experiment.Mode, threads bool, s bench.Stats)
}

// tasksRow measures a row of a table with a processes and a threads
// column and writes each one's record, with its ratio to the same
// column's off result among rows (which it joins).
func tasksRow[R tasksResult](rows *[]R, measure func(threads bool) R, record func(R, float64)) {
	for _, threads := range []bool{false, true} {
		m := measure(threads)
		*rows = append(*rows, m)
		q := 0.0
		if base := FindTasks(*rows, experiment.Off, threads); base != nil && (*base).OK() && m.OK() {
			_, _, s := m.row()
			_, _, b := (*base).row()
			q = s.Mean / b.Mean
		}
		record(m, q)
	}
}

// FindTasks returns the result of mode and threads among all, or nil.
func FindTasks[R tasksResult](all []R, mode experiment.Mode, threads bool) *R {
	for i := range all {
		if m, t, _ := all[i].row(); m == mode && t == threads {
			return &all[i]
		}
	}
	return nil
}

// pingPong writes pp's record.
func pingPong(x *bench.Ctx, pp PingPongResult, ratio float64) {
	RecordPingPong(x, "pingpong", pp, ratio)
}

// RecordPingPong writes pp's record as benchmark name's (the ladder's
// ping-pong rungs are the ladder's).
func RecordPingPong(x *bench.Ctx, name string, pp PingPongResult, ratio float64) {
	s := x.Subject(name, pp.Config)
	s.Tasks = TaskKind(pp.Threads)
	s.Copy = "" // the tasks runs' trampoline is the entry's
	if x.NotMeasured(x.Name+" "+pp.Config.ModeName()+" "+s.Tasks, s, pp.N, pp.R, pp.Unsup, pp.Failure) {
		return
	}
	rec := contract.PingPong{
		Subject: s, N: pp.N, R: pp.R, Warmup: x.Plan.Warmup, Stats: x.StatsOf(pp.Stats, pp.Disturb, ratio),
		NsPerRoundTrip: bench.Round(x.Clock.Ns(pp.Stats.Mean)),
		RoundTrips:     pp.RoundTrips, Switches: pp.Switches, CR3Loads: pp.CR3Loads,
	}
	if pp.Config.Mode.ASI() {
		rec.ASITransitions = &pp.ASITransitions
	}
	x.Record(rec)
}

// TaskKind names a run's kind of tasks.
func TaskKind(threads bool) string {
	if threads {
		return "threads"
	}
	return "processes"
}
