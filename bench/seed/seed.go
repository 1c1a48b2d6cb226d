// Package seed holds the post-steps shaped as the reference threads'
// 32-bit vs 64-bit tables, made from the null call's (package syscalls)
// and sched-messaging's (package taskbench) results.
package seed

import (
	"errors"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/bench/taskbench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
)

// Null is the seed table of the null call, a post-step.
var Null = bench.PostStep{Name: "seed null", Summary: "the null call, 32-bit vs 64-bit, shaped as the reference thread's table",
	Needs: []string{"null", "null32"}, Run: seedNull}

// Messaging is the seed table of sched-messaging, a post-step.
var Messaging = bench.PostStep{Name: "seed messaging", Summary: "sched-messaging, 32-bit vs 64-bit, shaped as the reference thread's table",
	Needs: []string{"messaging", "messaging32"}, Run: seedMessaging}

// Tables shaped as the reference thread's: the 32-bit PAE and the 64-bit
// kernel side by side, PTI off, on and on+pcid, each cell with its ratio
// to the same width's off. They are post-steps of the registry: made once
// the benchmarks they need have run in both worlds.

// seedModes are the rows of a seed table, in each width.
var seedModes = []experiment.Mode{experiment.Off, experiment.On, experiment.OnPCID}

// seedCell is a cell of a seed table: what it shows, and its record.
type seedCell struct {
	stats   bench.Stats
	disturb bench.Disturb
	ok      bool  // measured
	unsup   error // the world or the CPU cannot run it
}

// seedTable records a seed table's cells (package tables shows a row
// per width, 32 then 64, and mode, a column per col): cell gives a
// cell's measurement and base its row's off one; subject names a cell's
// record, seconds gives what its record's "seconds" is (0: none). A
// configuration not measured (not in the plan, or failed: reported
// above) has no record.
func seedTable(x *bench.Ctx, cols []string, cell func(width int, mode experiment.Mode, col int) seedCell,
	subject func(width int, mode experiment.Mode, col int) contract.Subject, seconds func(bench.Stats) float64) {
	for _, width := range []int{32, 64} {
		for _, mode := range seedModes {
			for col := range cols {
				c, base := cell(width, mode, col), cell(width, experiment.Off, col)
				s := subject(width, mode, col)
				switch {
				case c.unsup != nil:
					x.Record(contract.SeedUnsupported{Unsupported: contract.Unsupported{Subject: s, Reason: c.unsup.Error()}})
				case c.ok:
					ratio := 0.0
					if base.ok {
						ratio = c.stats.Mean / base.stats.Mean
					}
					st := x.StatsOf(c.stats, c.disturb, ratio)
					// The cell's repeats are its benchmark's record's.
					st.Repeats, st.DisturbedRepeats, st.RepeatMHz = nil, nil, nil
					x.Record(contract.Seed{Subject: s, Stats: st, Seconds: seconds(c.stats)})
				}
			}
		}
	}
}

// seedNull records the null system call in the shape of the reference
// thread's table: rows 32-bit PTI off, on and on+pcid (SYSENTER), 64-bit
// off, on and on+pcid (SYSCALL), columns the minimal and linux flavours,
// global pages off; each cell cycles per call ± (perf style) and the
// ratio to the same width's PTI-off row. A missing or unsupported
// configuration says so. It records one "seed" record per cell.
func seedNull(x *bench.Ctx, results map[string]any) {
	flavours := []experiment.Flavour{experiment.Minimal, experiment.Linux}
	cell := func(width int, mode experiment.Mode, col int) seedCell {
		w := bench.Worlds[width]
		c := bench.ConfigOf(mode, w.Entries()[0], flavours[col])
		if err := c.Check(); errors.Is(err, bench.ErrNotInPAE) {
			return seedCell{unsup: err}
		}
		ms, _ := results[bench.PlanName("null", width)].([]bench.Measurement)
		m := bench.Find(ms, c)
		if m == nil {
			return seedCell{}
		}
		return seedCell{stats: m.Stats, disturb: m.Disturb, ok: m.OK(), unsup: m.Unsup}
	}
	subject := func(width int, mode experiment.Mode, col int) contract.Subject {
		return x.Clock.Mark(contract.Subject{Bench: "null", Width: width, Mode: mode.String(), Flavour: flavours[col].String()})
	}
	seedTable(x, []string{"minimal", "linux"}, cell, subject, func(bench.Stats) float64 { return 0 })
}

// seedMessaging records sched-messaging in the shape of the reference
// thread's table: rows 32-bit PTI off, on (and on+pcid: not in PAE),
// 64-bit off, on, on+pcid; columns processes and threads: seconds ± (perf
// style) and the ratio to the same width's off. It records one "seed"
// record per cell.
func seedMessaging(x *bench.Ctx, results map[string]any) {
	cell := func(width int, mode experiment.Mode, col int) seedCell {
		w := bench.Worlds[width]
		if err := w.TasksConfig(mode, w.Entries()[0]).Check(); errors.Is(err, bench.ErrNotInPAE) {
			return seedCell{unsup: err}
		}
		ms, _ := results[bench.PlanName("messaging", width)].([]taskbench.MessagingResult)
		m := taskbench.FindTasks(ms, mode, col == 1)
		if m == nil {
			return seedCell{}
		}
		return seedCell{stats: m.Stats, disturb: m.Disturb, ok: m.OK(), unsup: m.Unsup}
	}
	subject := func(width int, mode experiment.Mode, col int) contract.Subject {
		return x.Clock.Mark(contract.Subject{Bench: "messaging", Width: width, Mode: mode.String(), Tasks: taskbench.TaskKind(col == 1)})
	}
	seedTable(x, []string{"processes", "threads"}, cell, subject, func(s bench.Stats) float64 { return x.Clock.Ns(s.Mean) / 1e9 })
}
