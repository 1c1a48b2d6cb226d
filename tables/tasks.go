package tables

import (
	"fmt"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/reference"
)

// The tasks tables: the ping-pong and sched-messaging, a row per mode
// (and entry) with a processes half and a threads half; where
// sched-messaging's cycles go; the tables shaped as the reference
// thread's (seed tables).

// tasksTrampolines says which trampolines a world's tasks runs use.
func tasksTrampolines(width int) string {
	if width != 32 {
		return "linux flavour"
	}
	return "linux trampolines (SYSENTER: Linux 4.19's shape)"
}

// pingPongPlace places a ping-pong half row: units and ns per round
// trip, the spread, the ratio to off, CR3 loads per round trip and, in
// a plan with asi modes, ASI transitions per round trip (both over the
// run, warm-up included).
func (r *Renderer) pingPongPlace(rec contract.Record, c config) place {
	id := fmt.Sprintf("pingpong%d", c.width)
	pmu := r.tablePMU(id)
	lead := append([]string{c.mode}, r.entryCells(c)...)
	asi := r.asiCols(c.width, "asi/rt")
	n := 5 + len(asi) + len(coreCols(pmu))
	cells := half(rec, n, func() []string {
		v := rec.(contract.PingPong)
		cr3 := "-"
		if v.RoundTrips > 0 && r.linux == nil { // a Linux run counts no CR3 loads
			cr3 = fmt.Sprintf("%.2f", float64(v.CR3Loads)/float64(v.RoundTrips))
		}
		out := append([]string{f1(v.Mean), spread(&v.Stats, v.R), nsCell(v.Subject, v.NsPerRoundTrip), ratioCell(v.RatioToOff), cr3},
			r.asiCells(c.width, v)...)
		return append(out, coreCells(&v.Core, v.R, pmu)...)
	})
	at := tasksAt(c, len(lead), n)
	nn, reps, warmup := sizes(rec)
	return place{id: id, row: rowKey(c, c.entry, c.mode), size: len(lead) + 2*n, lead: lead, at: at, cells: cells,
		begin: func(t *Table, _ []string) {
			t.Name = id
			t.Title = fmt.Sprintf("%sping-pong: a 1-byte token through two pipes, per round trip (lmbench lat_ctx shape, two context switches): %s;", worldTitle(c), repeatsOf(reps, nn, warmup, "round trip", "round trips"))
			t.Heading = []string{fmt.Sprintf("%s, %s; %s; ± as perf; %s", tasksTrampolines(c.width), globalNote(c.global), r.unitNote(), r.clockHeader()), r.countersNote()}
			t.Columns = append([]Column{r.modeCol()}, r.entryCols(c.width)...)
			for _, k := range []string{"processes", "threads"} {
				h := append(append([]Column{{Head: k, Width: 12, Bar: true}, right("±%", 7), right("ns", 9), right("vs off", 7), right("CR3/rt", 7)}, asi...), coreCols(pmu)...)
				t.Columns = append(t.Columns, h...)
			}
		},
	}
}

// tablePMU is the PMU columns the table id shows: as it began, or
// as the last figure says.
func (r *Renderer) tablePMU(id string) pmuCols {
	if r.open != nil && r.open.id == id {
		return r.open.pmu
	}
	return r.pmuOn()
}

// ipcName names an IPC in the tables.
func ipcName(ipc string) string {
	if ipc == "pipe" {
		return "pipes"
	}
	return "Unix-domain stream socket pairs"
}

// perfFlag is perf's flag for an IPC.
func perfFlag(ipc string) string {
	if ipc == "pipe" {
		return "-p "
	}
	return ""
}

// workloadOf is a sched-messaging record's shape, or (an error record
// has none) the last one seen.
func (r *Renderer) workloadOf(rec contract.Record) contract.Workload {
	switch v := rec.(type) {
	case contract.Messaging:
		r.wl = v.Workload
	case contract.Phases:
		r.wl = v.Workload
	case contract.Unsupported:
		if v.Workload != nil {
			r.wl = *v.Workload
		}
	}
	return r.wl
}

// messagingPlace places a sched-messaging half row: seconds per run,
// the spread, units per message, the ratio to off and, in a plan with
// asi modes, the last run's ASI transitions per message (the start
// protocol's included).
func (r *Renderer) messagingPlace(rec contract.Record, c config) place {
	id := fmt.Sprintf("messaging%d", c.width)
	pmu := r.tablePMU(id)
	wl := r.workloadOf(rec)
	asi := r.asiCols(c.width, "asi/msg")
	n := 4 + len(asi) + len(coreCols(pmu))
	cells := half(rec, n, func() []string {
		v := rec.(contract.Messaging)
		out := append([]string{fmt.Sprintf("%.6f", v.Seconds), spread(&v.Stats, v.R), f1(v.PerMessage), ratioCell(v.RatioToOff)},
			r.asiCells(c.width, v)...)
		return append(out, coreCells(&v.Core, v.R, pmu)...)
	})
	_, reps, warmup := sizes(rec)
	return place{id: id, row: rowKey(c, c.mode), size: 1 + 2*n, lead: []string{c.mode}, at: tasksAt(c, 1, n), cells: cells,
		begin: func(t *Table, _ []string) {
			entry := "linux flavour"
			if c.width == 32 {
				entry = "SYSENTER with Linux 4.19's entry"
			}
			t.Name = id
			t.Title = fmt.Sprintf("%ssched-messaging (perf bench sched messaging %s-g %d -l %d: %s): %s of %d senders and %d receivers, %d-byte messages; %s;",
				worldTitle(c), perfFlag(wl.IPC), wl.Groups, wl.Loops, ipcName(wl.IPC), plural(wl.Groups, "group", "groups"), 20, 20, wl.Size, runs(reps, warmup))
			t.Heading = []string{fmt.Sprintf("total time from the start signal to the last exit; %s, %s; %s; ± as perf; %s", entry, globalNote(c.global), r.unitNote(), r.clockHeader()), r.countersNote()}
			t.Columns = []Column{r.modeCol()}
			for _, k := range []string{"processes s", "threads s"} {
				h := append(append([]Column{{Head: k, Width: 12, Bar: true}, right("±%", 7), right(r.perMsg(), 10), right("vs off", 7)}, asi...), coreCols(pmu)...)
				t.Columns = append(t.Columns, h...)
			}
		},
		ref: func(*open) []string { return reference.Messaging(c.width, orText(r.wl.IPC, "pipe")) },
	}
}

// msgPhasesPlace places a row of where sched-messaging's cycles go: each
// phase's share of the run, the entry path's, units per message.
func (r *Renderer) msgPhasesPlace(rec contract.Record, c config) place {
	id := fmt.Sprintf("msgphases%d", c.width)
	pmu := r.tablePMU(id)
	wl := r.workloadOf(rec)
	cells := func() []string {
		v := rec.(contract.Phases)
		var out []string
		for _, n := range []string{"cr3_in", "copy_in", "dispatch", "copy_out", "cr3_out"} {
			out = append(out, fmt.Sprintf("%.1f%%", v.PhasePct[n]))
		}
		per := "-"
		if v.Messages > 0 {
			per = f1(float64(v.RunCycles) / float64(v.Messages))
		}
		return append(append(out, fmt.Sprintf("%.1f%%", v.EntryPathPct), per), coreCells(v.Core, 1, pmu)...)
	}
	warmup, how := 0, "MFENCE;LFENCE;RDTSC at each boundary, their own cost taken out"
	if v, ok := rec.(contract.Phases); ok {
		warmup = v.Warmup
		if v.StampCost == nil {
			how = "RDTSC at each boundary"
		}
	}
	return place{id: id, cells: append([]string{c.mode, c.tasks}, figures(rec, cells)...),
		begin: func(t *Table, _ []string) {
			t.Name = id
			t.Title = fmt.Sprintf("%ssched-messaging %s-g %d -l %d (%s): where the cycles go, %% of the run (instrumented %s entry: %s; %s)",
				worldTitle(c), perfFlag(wl.IPC), wl.Groups, wl.Loops, ipcName(wl.IPC), upper(c.entry), how, runs(1, warmup))
			t.Columns = append([]Column{r.modeCol(), left("tasks", 9), {Head: "cr3 in", Width: 8, Bar: true}, right("frame", 8), right("dispatch", 8),
				right("copy out", 8), right("cr3 out", 8), {Head: "entry path", Width: 10, Bar: true}, right(r.perMsg(), 12)}, coreCols(pmu)...)
		},
		ref: func(*open) []string { return []string{reference.MessagingPhases} },
	}
}

// seedPlace places a cell of a table shaped as the reference thread's:
// a row per width and mode, a column per flavour (null call) or kind of
// tasks (sched-messaging), each cell its figure ± (perf style), the ratio
// to the same width's off, its core clock and disturbed repeats.
func (r *Renderer) seedPlace(rec contract.Record) (place, bool) {
	s, _ := subjectOf(rec)
	c := configOf(s)
	var cols []string
	col := 0
	switch c.bench {
	case "null":
		cols = []string{experiment.Minimal.String(), experiment.Linux.String()}
		if c.isFlavour(experiment.Linux) {
			col = 1
		}
	case "messaging":
		cols = []string{"processes", "threads"}
		if c.tasks == cols[1] {
			col = 1
		}
	default:
		return place{}, false
	}
	var text string
	switch v := rec.(type) {
	case contract.Seed:
		if c.bench == "messaging" {
			text = fmt.Sprintf("%9.6f ±%5.1f%% vs off %6.2f", v.Seconds, v.PerfPct, v.RatioToOff)
		} else {
			text = fmt.Sprintf("%9.1f ±%5.1f%% vs off %6.2f", v.Mean, v.PerfPct, v.RatioToOff)
		}
		text += " " + coreShort(&v.Core)
	case contract.SeedUnsupported:
		text = "unsupported by this CPU"
		if notInPAE(v.Reason) {
			text = "not in PAE"
		}
	}
	id := "seed-" + c.bench
	return place{id: id, row: fmt.Sprint(c.width, c.mode), size: 3, at: 1 + col,
		lead:  []string{fmt.Sprintf("%d-bit PTI %s", c.width, c.mode)},
		cells: []string{text},
		begin: func(t *Table, _ []string) {
			t.Name = id
			if c.bench == "null" {
				t.Title = fmt.Sprintf("null system call, 32-bit PAE (SYSENTER) vs 64-bit (SYSCALL), global pages off: %s per call ± (perf style), ratio to the same width's off", r.unit(statsOf(rec)))
			} else {
				t.Title = fmt.Sprintf("sched-messaging over %s, 32-bit PAE (SYSENTER) vs 64-bit (SYSCALL): seconds ± (perf style), ratio to the same width's off; %s", ipcName(r.wl.IPC), reference.SeedMessaging())
				if r.wl.IPC == "pipe" {
					t.Heading = []string{"(" + reference.PipeNote + ")"}
				}
			}
			t.Columns = []Column{left("kernel", 18), {Head: cols[0] + " (core MHz, disturbed repeats)", Width: 44, Left: true, Bar: true}, {Head: cols[1], Left: true, Bar: true}}
		},
	}, true
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
