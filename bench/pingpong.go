package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/pti"
	"github.com/ptilab/ptilab/tasks"
)

// The ping-pong: two tasks pass a 1-byte token back and forth through two
// pipes, lmbench's lat_ctx shape. Each round trip is two writes, two
// reads and two context switches; between processes each switch loads
// CR3, between threads of one process none does.

// PingPongParams are the ping-pong's knobs.
type PingPongParams struct {
	Modes  []pti.Mode
	N      int // round trips per repeat
	R      int // repeats
	Warmup int // repeats run first and not counted
}

// PingPong is one configuration's result.
type PingPong struct {
	Mode    pti.Mode
	Threads bool // both tasks in one process
	N, R    int
	Stats   Stats // TSC cycles per round trip
	// What the kernel counted over the run, warm-up included.
	Switches, CR3Loads uint64
	RoundTrips         uint64 // bytes through each pipe
	Unsup, Failure     error
	// Entry is set for the 32-bit world's runs: "sysenter" or "int80".
	Entry string
}

func (p PingPong) ok() bool { return p.Unsup == nil && p.Failure == nil }

// Where the ping-pong's tasks keep their buffers, in their data pages:
// ping's results at the start, the tokens on the last page.
const (
	pingTokenOff = 0xf000
	pongTokenOff = 0xf100
	maxRepeats   = pingTokenOff / 8
	pongMark     = 0x5a // what pong adds to each reply
)

// Ping-pong's descriptors: pipe A from ping (fd 1) to pong (fd 0), pipe B
// from pong (fd 3) to ping (fd 2).
const (
	pongIn, pingOut = 0, 1
	pingIn, pongOut = 2, 3
)

// second is the second process of the process-mode runs, made once.
var second *pti.Process

// runPingPong makes one ping-pong run: the tasks' processes, the pipes,
// the two tasks, and r repeats of n round trips timed by ping.
func runPingPong(c pti.Config, threads bool, n, r int) (PingPong, []uint64) {
	res := PingPong{Mode: c.Mode, Threads: threads, N: n, R: r}
	if err := pti.Supported(c); err != nil {
		res.Unsup = err
		return res, nil
	}
	if r > maxRepeats {
		res.Failure = fmt.Errorf("%d repeats do not fit in the task's data pages (at most %d)", r, maxRepeats)
		return res, nil
	}
	fail := func(err error) (PingPong, []uint64) { res.Failure = err; return res, nil }

	ping := pti.MainProcess()
	pong := ping
	if !threads {
		if second == nil {
			var err error
			if second, err = pti.NewProcess(); err != nil {
				return fail(err)
			}
		}
		pong = second
	}
	run, err := tasks.NewRun(c)
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
		return fail(errors.New("the pipes could not be made"))
	}
	// Pong adds the mark it finds in its data page to every reply and
	// ping expects it: ping's page has another value there, so that a
	// pong that ran in ping's address space would fail the run.
	ping.DataPages()[pingTokenOff+2] = pongMark
	ping.DataPages()[pongTokenOff+1] = 0
	pong.DataPages()[pongTokenOff+1] = pongMark
	pingArgs := [6]uint64{uint64(n), uint64(r), pti.UserData, pingOut | pingIn<<32, pti.UserData + pingTokenOff, rdtscpFlag()}
	pongArgs := [6]uint64{pongIn, pongOut, pti.UserData + pongTokenOff}
	pongStack := uint64(pti.UserStackTop)
	if threads {
		pongStack -= 4096 // the threads share the stack pages
	}
	if i, err := run.AddTask(p0, pti.Ping, pti.UserStackTop, pingArgs); err != nil || i != 0 {
		return fail(errors.New("the tasks could not be made"))
	}
	if i, err := run.AddTask(p1, pti.Pong, pongStack, pongArgs); err != nil || i != 1 {
		return fail(errors.New("the tasks could not be made"))
	}
	end, err := run.RunTasks()
	if err != nil {
		return fail(err)
	}
	res.Switches, res.CR3Loads = run.Switches(), run.CR3Loads()
	if end.Reason != pti.ReasonExit || end.Status != 0 {
		return fail(fmt.Errorf("the run ended with %v%s", end, taskStates()))
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
	d := ping.DataPages()
	counts := make([]uint64, r)
	for i := range counts {
		counts[i] = binary.LittleEndian.Uint64(d[8*i:])
	}
	return res, counts
}

// taskStates describes the tasks of the last run that did not exit 0,
// the first 8 of them.
func taskStates() string {
	ts := make([]tasks.Task, tasks.Count())
	s, n := "", 0
	for _, t := range ts[:tasks.Tasks(ts)] {
		if t.State.String() == "exited" && t.Status == 0 {
			continue
		}
		if n++; n > 8 {
			s += "; ..."
			break
		}
		s += "; " + describeTask(t)
	}
	return s
}

// describeTask says what a task was doing when its run ended.
func describeTask(t tasks.Task) string {
	switch t.State.String() {
	case "blocked":
		return fmt.Sprintf("task %d (process %d) blocked in %s on pipe %d, RIP %#x", t.Task, t.Proc, t.Wait, t.Pipe, t.RIP)
	case "exited":
		return fmt.Sprintf("task %d (process %d) exited with status %d", t.Task, t.Proc, t.Status)
	}
	return fmt.Sprintf("task %d (process %d) %s, RIP %#x", t.Task, t.Proc, t.State, t.RIP)
}

// MeasurePingPong runs the ping-pong under c with both tasks in one
// process or each in its own: r repeats of n round trips after warmup
// repeats, TSC cycles per round trip.
func MeasurePingPong(c pti.Config, threads bool, n, r, warmup int) PingPong {
	res, counts := runPingPong(c, threads, n, r+warmup)
	res.R = r
	if res.ok() {
		res.Stats = Summarize(PerOp(counts[warmup:], n, 0))
	}
	return res
}

// PingPongTable measures the ping-pong in every mode of p, processes and
// threads, with the Linux-shaped trampoline and no global pages, and
// prints a row per mode as it finishes: cycles and ns per round trip, the
// spread, the ratio to off and the CR3 loads per round trip.
func PingPongTable(r *Reporter, p PingPongParams, clk Clock) []PingPong {
	r.Printf("")
	r.Printf("ping-pong: a 1-byte token through two pipes, per round trip (lmbench lat_ctx shape, two context switches): %s;", repeatsOf(p.R, p.N, p.Warmup, "round trip", "round trips"))
	r.Printf("linux flavour, no global pages; %s; ± as perf; %s", clk.unitNote(), clk.header())
	r.Printf("%-8s | %12s %7s %9s %7s %7s | %12s %7s %9s %7s %7s", "mode", "processes", "±%", "ns", "vs off", "CR3/rt", "threads", "±%", "ns", "vs off", "CR3/rt")
	var all []PingPong
	for _, mode := range p.Modes {
		line := fmt.Sprintf("%-8s", mode)
		for _, threads := range []bool{false, true} {
			pp := MeasurePingPong(pti.Config{Mode: mode, Flavour: pti.Linux}, threads, p.N, p.R, p.Warmup)
			all = append(all, pp)
			ratio := 0.0
			if base := findPingPong(all, pti.Off, threads); base != nil && base.ok() && pp.ok() {
				ratio = pp.Stats.Mean / base.Stats.Mean
			}
			line += " | " + pingPongCells(pp, clk, ratio)
			r.pingPong(pp, clk, ratio)
		}
		r.Printf("%s", strings.TrimRight(line, " "))
	}
	return all
}

// pingPongCells formats one result's cells of the table.
func pingPongCells(pp PingPong, clk Clock, ratio float64) string {
	switch {
	case pp.Unsup != nil:
		return fmt.Sprintf("%-48s", "unsupported: "+reasonOf(pp.Unsup))
	case pp.Failure != nil:
		return fmt.Sprintf("%-48s", "FAILED (see the error record)")
	}
	rt := float64(pp.RoundTrips)
	return fmt.Sprintf("%12.1f %7s %9.1f %7.2f %7.2f", pp.Stats.Mean, spread(pp.Stats), clk.Ns(pp.Stats.Mean), ratio, float64(pp.CR3Loads)/rt)
}

func findPingPong(all []PingPong, mode pti.Mode, threads bool) *PingPong {
	for i := range all {
		if all[i].Mode == mode && all[i].Threads == threads {
			return &all[i]
		}
	}
	return nil
}

func taskKind(threads bool) string {
	if threads {
		return "threads"
	}
	return "processes"
}

// pingPong writes pp's PTILAB record.
func (r *Reporter) pingPong(pp PingPong, clk Clock, ratio float64) {
	f := map[string]any{"bench": "pingpong", "mode": pp.Mode.String(), "flavour": "linux", "global": false,
		"tasks": taskKind(pp.Threads), "N": pp.N, "R": pp.R, "emulated": clk.Emulated, "icount": clk.Icount}
	name := "pingpong "
	if pp.Entry != "" {
		f["width"], f["entry"] = 32, pp.Entry
		name = "pingpong32 "
	}
	if r.notMeasured(name+pp.Mode.String()+" "+taskKind(pp.Threads), f, pp.Unsup, pp.Failure) {
		return
	}
	addStats(f, pp.Stats, clk, ratio)
	f["ns_per_round_trip"] = round(clk.Ns(pp.Stats.Mean))
	f["round_trips"], f["switches"], f["cr3_loads"] = pp.RoundTrips, pp.Switches, pp.CR3Loads
	r.Record("pingpong", f)
}

// Deadlock provokes a deadlock on purpose, to show how ptilab reports one:
// two tasks in two processes each read a pipe that only the other writes.
// The run ends with every task blocked; the report lists them. It returns
// an error when the run does not end that way.
func Deadlock(r *Reporter) error {
	r.Printf("")
	r.Printf("deadlock check: two tasks each wait to read what only the other would write")
	err := func() error {
		c := pti.Config{Mode: pti.Off, Flavour: pti.Linux}
		if second == nil {
			var err error
			if second, err = pti.NewProcess(); err != nil {
				return err
			}
		}
		run, err := tasks.NewRun(c)
		if err != nil {
			return err
		}
		p0, err := run.AddProcess(pti.MainProcess(), 2)
		if err != nil {
			return err
		}
		p1, err := run.AddProcess(second, 2)
		if err != nil {
			return err
		}
		if _, err := run.AddPipe(p0, 0, p1, 1); err != nil {
			return errors.New("the pipes could not be made")
		}
		if _, err := run.AddPipe(p1, 0, p0, 1); err != nil {
			return errors.New("the pipes could not be made")
		}
		args := [6]uint64{0, 1, pti.UserData + pongTokenOff}
		if i, err := run.AddTask(p0, pti.Pong, pti.UserStackTop, args); err != nil || i != 0 {
			return errors.New("the tasks could not be made")
		}
		if i, err := run.AddTask(p1, pti.Pong, pti.UserStackTop, args); err != nil || i != 1 {
			return errors.New("the tasks could not be made")
		}
		end, err := run.RunTasks()
		if err != nil {
			return err
		}
		if end.Reason != pti.ReasonDeadlock {
			return fmt.Errorf("the run ended with %v, not a deadlock", end)
		}
		return nil
	}()
	if err != nil {
		r.Error("deadlock", map[string]any{"error": err.Error()})
		r.Printf("deadlock check FAILED: %v", err)
		return err
	}
	r.reportDeadlock("deadlock", true)
	return nil
}

// reportDeadlock prints and records the tasks of a run that deadlocked:
// each of the first maxReported, and how many there were in each state.
func (r *Reporter) reportDeadlock(bench string, provoked bool) {
	const maxReported = 64
	ts := make([]tasks.Task, tasks.Count())
	ts = ts[:tasks.Tasks(ts)]
	states := map[string]int{}
	for _, t := range ts {
		states[t.State.String()]++
	}
	r.Printf("deadlock: no task can run; %d tasks (%v):", len(ts), states)
	list := make([]map[string]any, 0, maxReported)
	for i, t := range ts {
		if i == maxReported {
			r.Printf("  ... and %d more", len(ts)-maxReported)
			break
		}
		r.Printf("  %s", describeTask(t))
		list = append(list, map[string]any{"task": t.Task, "process": t.Proc, "state": t.State.String(),
			"wait": t.Wait.String(), "pipe": t.Pipe, "rip": fmt.Sprintf("%#x", t.RIP)})
	}
	r.Record("deadlock", map[string]any{"bench": bench, "provoked": provoked, "tasks": list, "task_count": len(ts), "states": states})
}
