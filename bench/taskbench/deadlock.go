package taskbench

import (
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
)

// deadlock provokes a deadlock on purpose, to show how ptilab reports one:
// two tasks in two processes each read a pipe that only the other writes.
// The run ends with every task blocked; the report lists them. It fails
// when the run does not end that way.
func deadlock(x *bench.Ctx) any {
	w := x.World
	x.Printf("")
	x.Printf("deadlock check: two tasks each wait to read what only the other would write")
	run, err := func() (bench.Run, error) {
		if second[w] == nil {
			p, err := w.NewProcess(w.User().DataPages)
			if err != nil {
				return nil, err
			}
			second[w] = p
		}
		s, err := w.Plan(w.TasksConfig(experiment.Off, w.Entries()[0]))
		if err != nil {
			return nil, err
		}
		run, err := w.NewRun(s)
		if err != nil {
			return nil, err
		}
		p0, err0 := run.AddProcess(w.MainProcess(), 2)
		p1, err1 := run.AddProcess(second[w], 2)
		if err := errors.Join(err0, err1); err != nil {
			return nil, err
		}
		if _, err := run.AddPipe(p0, 0, p1, 1); err != nil {
			return nil, err
		}
		if _, err := run.AddPipe(p1, 0, p0, 1); err != nil {
			return nil, err
		}
		top := w.User().StackTop
		t := bench.PongTask{In: 0, Out: 1}
		if _, err := run.AddTask(p0, top, t); err != nil {
			return nil, err
		}
		if _, err := run.AddTask(p1, top, t); err != nil {
			return nil, err
		}
		end, err := run.Start()
		if err != nil {
			return nil, err
		}
		if !end.Deadlock {
			return nil, fmt.Errorf("the run ended with %v, not a deadlock", end)
		}
		return run, nil
	}()
	if err != nil {
		x.Fail(contract.Error{Name: x.Name, Error: err.Error()})
		x.Printf("deadlock check FAILED: %v", err)
		return err
	}
	reportDeadlock(x, x.Name, true, run.Tasks())
	return nil
}

// Deadlock is the deadlock check's registry row.
var Deadlock = bench.Benchmark{Name: "deadlock", Summary: "a deadlock provoked on purpose, to show its report",
	Worlds: []int{64}, Run: deadlock, Optional: true}

// reportDeadlock prints and records the tasks of a run that deadlocked:
// each of the first maxReported, and how many there were in each state.
func reportDeadlock(x *bench.Ctx, name string, provoked bool, ts []bench.TaskState) {
	const maxReported = 64
	states := map[string]int{}
	for _, t := range ts {
		states[t.State]++
	}
	x.Printf("deadlock: no task can run; %d tasks (%v):", len(ts), states)
	list := make([]contract.DeadlockTask, 0, maxReported)
	for i, t := range ts {
		if i == maxReported {
			x.Printf("  ... and %d more", len(ts)-maxReported)
			break
		}
		x.Printf("  %s", t)
		list = append(list, contract.DeadlockTask{Task: t.Task, Process: t.Proc, State: t.State,
			Wait: t.Wait, Pipe: t.Pipe, RIP: fmt.Sprintf("%#x", t.IP)})
	}
	x.Record(contract.Deadlock{Bench: name, Provoked: provoked, Tasks: list, TaskCount: len(ts), States: states})
}
