package bench

import (
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/reference"
)

// Tables shaped as the reference thread's: the 32-bit PAE and the 64-bit
// kernel side by side, PTI off, on and on+pcid, each cell with its ratio
// to the same width's off. They are post-steps of the registry: made once
// the benchmarks they need have run in both worlds.

// seedModes are the rows of a seed table, in each width.
var seedModes = []experiment.Mode{experiment.Off, experiment.On, experiment.OnPCID}

// seedCell is a cell of a seed table: what it shows, and its record.
type seedCell struct {
	stats   Stats
	disturb Disturb
	ok      bool  // measured
	unsup   error // the world or the CPU cannot run it
}

// seedTable prints a seed table: a row per width (32, then 64) and mode,
// a column per col; cell gives a cell's measurement and base its row's
// off one; format formats a measured cell; subject names a cell's record,
// seconds gives what its record's "seconds" is (0: none).
func seedTable(x *Ctx, cols []string, cell func(width int, mode experiment.Mode, col int) seedCell,
	subject func(width int, mode experiment.Mode, col int) contract.Subject, format func(s Stats, ratio float64) string, seconds func(Stats) float64) {
	for _, width := range []int{32, 64} {
		for _, mode := range seedModes {
			line := fmt.Sprintf("%-18s", fmt.Sprintf("%d-bit PTI %v", width, mode))
			for col := range cols {
				c, base := cell(width, mode, col), cell(width, experiment.Off, col)
				s := subject(width, mode, col)
				var text string
				switch {
				case c.unsup != nil:
					text = "unsupported by this CPU"
					if isNotInPAE(c.unsup) {
						text = "not in PAE"
					}
					x.Record(contract.SeedUnsupported{Unsupported: contract.Unsupported{Subject: s, Reason: c.unsup.Error()}})
				case !c.ok:
					text = "not measured" // not in the plan, or failed (reported above)
				default:
					ratio := 0.0
					if base.ok {
						ratio = c.stats.Mean / base.stats.Mean
					}
					text = format(c.stats, ratio) + c.disturb.coreShort(x.Clock.Hz)
					x.Record(contract.Seed{Subject: s, Stats: x.stats(c.stats, c.disturb, ratio), Seconds: seconds(c.stats)})
				}
				line += fmt.Sprintf(" | %-44s", text)
			}
			x.Printf("%s", strings.TrimRight(line, " "))
		}
	}
}

// seedNull prints the null system call in the shape of the reference
// thread's table: rows 32-bit PTI off, on and on+pcid (SYSENTER), 64-bit
// off, on and on+pcid (SYSCALL), columns the minimal and linux flavours,
// global pages off; each cell cycles per call ± (perf style) and the
// ratio to the same width's PTI-off row. A missing or unsupported
// configuration says so. It records one "seed" record per cell.
func seedNull(x *Ctx, results map[string]any) {
	x.Printf("")
	x.Printf("null system call, 32-bit PAE (SYSENTER) vs 64-bit (SYSCALL), global pages off: %s per call ± (perf style), ratio to the same width's off", x.Clock.Unit())
	x.Printf("%-18s | %-44s | %s", "kernel", "minimal (core MHz, disturbed repeats)", "linux")
	flavours := []experiment.Flavour{experiment.Minimal, experiment.Linux}
	cell := func(width int, mode experiment.Mode, col int) seedCell {
		w := x.world(width)
		c := config(mode, w.Entries()[0], flavours[col])
		if err := c.Check(); isNotInPAE(err) {
			return seedCell{unsup: err}
		}
		ms, _ := results[planName("null", width)].([]Measurement)
		m := find(ms, c)
		if m == nil {
			return seedCell{}
		}
		return seedCell{stats: m.Stats, disturb: m.Disturb, ok: m.ok(), unsup: m.Unsup}
	}
	subject := func(width int, mode experiment.Mode, col int) contract.Subject {
		return contract.Subject{Bench: "null", Width: width, Mode: mode.String(), Flavour: flavours[col].String(), Emulated: x.Clock.Emulated(), Icount: x.Clock.Icount}
	}
	seedTable(x, []string{"minimal", "linux"}, cell, subject,
		func(s Stats, ratio float64) string {
			return fmt.Sprintf("%9.1f ±%5.1f%% %7.2fx", s.Mean, s.PerfPct(), ratio)
		},
		func(Stats) float64 { return 0 })
}

// seedMessaging prints sched-messaging in the shape of the reference
// thread's table: rows 32-bit PTI off, on (and on+pcid: not in PAE),
// 64-bit off, on, on+pcid; columns processes and threads: seconds ± (perf
// style) and the ratio to the same width's off. It records one "seed"
// record per cell.
func seedMessaging(x *Ctx, results map[string]any) {
	x.Printf("")
	p := x.Plan.messagingParams()
	x.Printf("sched-messaging over %s, 32-bit PAE (SYSENTER) vs 64-bit (SYSCALL): seconds ± (perf style), ratio to the same width's off; %s", p.ipcName(), reference.SeedMessaging())
	if p.IPC == IPCPipe {
		x.Printf("(%s)", reference.PipeNote)
	}
	x.Printf("%-18s | %-44s | %s", "kernel", "processes (core MHz, disturbed repeats)", "threads")
	cell := func(width int, mode experiment.Mode, col int) seedCell {
		w := x.world(width)
		if err := w.TasksConfig(mode, w.Entries()[0]).Check(); isNotInPAE(err) {
			return seedCell{unsup: err}
		}
		ms, _ := results[planName("messaging", width)].([]Messaging)
		m := findTasks(ms, mode, col == 1)
		if m == nil {
			return seedCell{}
		}
		return seedCell{stats: m.Stats, disturb: m.Disturb, ok: m.ok(), unsup: m.Unsup}
	}
	subject := func(width int, mode experiment.Mode, col int) contract.Subject {
		return contract.Subject{Bench: "messaging", Width: width, Mode: mode.String(), Tasks: taskKind(col == 1), Emulated: x.Clock.Emulated(), Icount: x.Clock.Icount}
	}
	seedTable(x, []string{"processes", "threads"}, cell, subject,
		func(s Stats, ratio float64) string {
			return fmt.Sprintf("%9.6f ±%5.1f%% %7.2fx", x.Clock.Ns(s.Mean)/1e9, s.PerfPct(), ratio)
		},
		func(s Stats) float64 { return x.Clock.Ns(s.Mean) / 1e9 })
}
