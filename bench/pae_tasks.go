package bench

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/i386pae"
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/pti"
)

// The ping-pong in the 32-bit world: the same protocol as the 64-bit one
// (ping times R repeats of N round trips of a 1-byte token through two
// pipes; pong adds the mark it finds in its own data page), between two
// 32-bit processes or two threads of one, under the 32-bit kernel's tasks
// kernel and its linux trampolines.

// second32 is the second process of the 32-bit process-mode runs, made
// once.
var second32 *i386pae.Process

// pong32Mark is what the 32-bit pong adds to each reply.
const pong32Mark = 0x5a

// runPingPong32 makes one 32-bit ping-pong run under c: r repeats of n
// round trips, checked as the 64-bit one.
func runPingPong32(c i386pae.Config, threads bool, n, r int) (PingPong, []uint64) {
	res := PingPong{Mode: c.Mode, Threads: threads, N: n, R: r, Entry: c.Entry.String()}
	if err := i386pae.Supported(c); err != nil {
		res.Unsup = err
		return res, nil
	}
	fail := func(err error) (PingPong, []uint64) { res.Failure = err; return res, nil }
	if r > layout.MaxRepeats {
		return fail(fmt.Errorf("%d repeats: the 32-bit task holds at most %d", r, layout.MaxRepeats))
	}
	ping := i386pae.MainProcess()
	pong := ping
	if !threads {
		if second32 == nil {
			var err error
			if second32, err = i386pae.NewProcess(); err != nil {
				return fail(err)
			}
		}
		pong = second32
	}
	ts, err := i386pae.NewTasks(c)
	if err != nil {
		return fail(err)
	}
	p0, err := ts.AddProcess(ping, 4)
	if err != nil {
		return fail(err)
	}
	p1 := p0
	if !threads {
		if p1, err = ts.AddProcess(pong, 4); err != nil {
			return fail(err)
		}
	}
	a, errA := ts.AddPipe(p1, pongIn, p0, pingOut)
	b, errB := ts.AddPipe(p0, pingIn, p1, pongOut)
	if errA != nil || errB != nil {
		return fail(fmt.Errorf("the pipes could not be made: %v %v", errA, errB))
	}
	// The parameters in the data pages; pong's mark in its own page and
	// another value in ping's, so that a pong that ran in ping's address
	// space would fail the run.
	put := func(d []byte, off int, v uint32) { binary.LittleEndian.PutUint32(d[off:], v) }
	pd := ping.DataPages()[:4096]
	clear(pd)
	noRDTSCP := uint32(0)
	if !amd64.Features.RDTSCP {
		noRDTSCP = 1
	}
	put(pd, layout.ParamN, uint32(n))
	put(pd, layout.ParamR, uint32(r))
	put(pd, layout.ParamEntry, uint32(c.Entry))
	put(pd, layout.ParamNoRDTSCP, noRDTSCP)
	put(pd, layout.ParamPingOut, pingOut)
	put(pd, layout.ParamPingIn, pingIn)
	put(pd, layout.ParamPongIn, pongIn)
	put(pd, layout.ParamPongOut, pongOut)
	pd[layout.ParamToken+2] = pong32Mark
	qd := pong.DataPages()[:4096]
	if !threads {
		clear(qd)
		put(qd, layout.ParamEntry, uint32(c.Entry))
		put(qd, layout.ParamPongIn, pongIn)
		put(qd, layout.ParamPongOut, pongOut)
	}
	qd[layout.ParamPongToken+1] = pong32Mark
	pongStack := uint32(layout.UserStackTop)
	if threads {
		pongStack -= 4096 // the threads share the stack pages
	}
	if i, err := ts.AddTask(p0, i386pae.Ping, layout.UserStackTop, [6]uint32{}); err != nil || i != 0 {
		return fail(fmt.Errorf("ping's task: %v", err))
	}
	if i, err := ts.AddTask(p1, i386pae.Pong, pongStack, [6]uint32{}); err != nil || i != 1 {
		return fail(fmt.Errorf("pong's task: %v", err))
	}
	end, err := ts.RunTasks()
	if err != nil {
		return fail(err)
	}
	k := ts.State()
	res.Switches, res.CR3Loads = uint64(k.Switches), uint64(k.CR3Loads)
	if end.Reason != layout.ReasonExit || end.Status != 0 {
		return fail(fmt.Errorf("the run ended with %v%s", end, taskStates32(k)))
	}
	want := uint32(n) * uint32(r)
	wa, ra := ts.PipeBytes(a)
	wb, rb := ts.PipeBytes(b)
	res.RoundTrips = uint64(wa)
	if wa != want || ra != want || wb != want || rb != want {
		return fail(fmt.Errorf("bytes through the pipes: ping->pong %d written %d read, pong->ping %d written %d read; want %d each", wa, ra, wb, rb, want))
	}
	wantCR3 := uint64(0)
	if !threads {
		wantCR3 = 2*uint64(want) + 1
	}
	if res.Switches != 2*uint64(want)+1 || res.CR3Loads != wantCR3 {
		return fail(fmt.Errorf("%d context switches and %d CR3 loads; want %d and %d", res.Switches, res.CR3Loads, 2*want+1, wantCR3))
	}
	counts := make([]uint64, r)
	for i := range counts {
		counts[i] = binary.LittleEndian.Uint64(pd[layout.ParamResults+8*i:])
	}
	return res, counts
}

// taskStates32 describes the tasks of a 32-bit run that did not exit 0,
// the first 8 of them.
func taskStates32(k *layout.KState) string {
	var s []string
	for i := 0; i < int(k.NTasks) && len(s) < 8; i++ {
		t := &k.Tasks[i]
		if t.State == layout.TaskExited && t.Status == 0 {
			continue
		}
		d := fmt.Sprintf("task %d (process %d) state %d", i, t.Proc, t.State)
		if t.State == layout.TaskBlocked {
			d += fmt.Sprintf(" waiting (%d) on pipe %d", t.Wait, t.Obj)
		}
		if t.State == layout.TaskExited {
			d += fmt.Sprintf(" exit status %d", int32(t.Status))
		}
		s = append(s, d)
	}
	if len(s) == 0 {
		return ""
	}
	return "; " + strings.Join(s, "; ")
}

// PingPongTable32 measures the 32-bit ping-pong under p's modes (on+pcid:
// not in PAE), processes and threads, by SYSENTER (Linux 4.19's entry
// shape) and by INT 0x80, and prints the table as the 64-bit one.
func PingPongTable32(r *Reporter, p PingPongParams, clk Clock) []PingPong {
	r.Printf("")
	r.Printf("32-bit PAE kernel, ping-pong: %s; linux trampolines (SYSENTER: Linux 4.19's shape), no global pages;", repeatsOf(p.R, p.N, p.Warmup, "round trip", "round trips"))
	r.Printf("%s; ± as perf; %s", clk.unitNote(), clk.header())
	r.Printf("%-8s %-8s | %12s %7s %9s %7s %7s | %12s %7s %9s %7s %7s", "mode", "entry", "processes", "±%", "ns", "vs off", "CR3/rt", "threads", "±%", "ns", "vs off", "CR3/rt")
	var all []PingPong
	for _, entry := range []i386pae.Entry{i386pae.Sysenter, i386pae.Int80} {
		var rows []PingPong
		for _, mode := range p.Modes {
			line := fmt.Sprintf("%-8s %-8s", mode, entry)
			for _, threads := range []bool{false, true} {
				c := i386pae.Config{Mode: mode, Entry: entry, Flavour: pti.Linux}
				if entry == i386pae.Sysenter {
					c.Copy = i386pae.Direct
				}
				pp, counts := runPingPong32(c, threads, p.N, p.R+p.Warmup)
				pp.R = p.R
				if pp.ok() {
					pp.Stats = Summarize(PerOp(counts[p.Warmup:], p.N, 0))
				}
				rows = append(rows, pp)
				ratio := 0.0
				if base := findPingPong(rows, pti.Off, threads); base != nil && base.ok() && pp.ok() {
					ratio = pp.Stats.Mean / base.Stats.Mean
				}
				line += " | " + pingPongCells(pp, clk, ratio)
				r.pingPong(pp, clk, ratio)
			}
			r.Printf("%s", strings.TrimRight(line, " "))
		}
		all = append(all, rows...)
	}
	return all
}

// sched-messaging in the 32-bit world: the same workload and checks as
// the 64-bit one (runMessaging), between 32-bit processes or threads of
// one, under the 32-bit tasks kernel, by SYSENTER (Linux 4.19's entry)
// as Linux's 32-bit tasks make their calls through the vDSO.

// msgProcs32 are the 32-bit processes of messaging runs.
var msgProcs32 procCache[*i386pae.Process]

// msgStack32 is each thread's slice of the stack in threads mode, where
// the tasks share one process: the programs keep their state and the
// vsyscall routine's saves there.
const msgStack32 = 128

// stacks32 returns the offset in the data pages of the end of the
// threads' stacks, which start after the results.
func (l msgLayout) stacks32() uint64 {
	return (l.result(l.workers())+16+63)&^63 + uint64(1+l.workers())*msgStack32
}

// processes32 returns the 32-bit processes of a run with l: its data
// pages hold the threads' stacks too.
func (l msgLayout) processes32() ([]*i386pae.Process, error) {
	end := l.result(l.workers()) + 16
	if l.threads {
		end = l.stacks32()
	}
	return msgProcs32.get(l, int((end+4095)/4096), i386pae.MaxDataPages, i386pae.NewProcessData)
}

// runMessaging32 makes one 32-bit sched-messaging run under c and returns
// the TSC cycles from the start signal to the last exit, after the same
// checks as runMessaging.
func runMessaging32(c i386pae.Config, threads bool, p MessagingParams) (cycles uint64, res Messaging) {
	res = Messaging{Mode: c.Mode, Threads: threads, P: p, Entry: c.Entry.String()}
	if err := i386pae.Supported(c); err != nil {
		res.Unsup = err
		return 0, res
	}
	fail := func(err error) (uint64, Messaging) { res.Failure = err; return 0, res }
	if p.Groups < 1 || p.Groups > MaxGroups || p.Size < 8 || p.Size > MaxMessageSize || p.Loops < 1 {
		return fail(fmt.Errorf("groups %d, message size %d, loops %d: out of range", p.Groups, p.Size, p.Loops))
	}
	l := msgLayout{threads: threads, groups: p.Groups, slot: uint64(p.Size+63) &^ 63}
	procs, err := l.processes32()
	if err != nil {
		return fail(err)
	}
	ts, err := i386pae.NewTasks(c)
	if err != nil {
		return fail(err)
	}
	kproc := make([]int, 1+l.workers())
	for i := range kproc {
		if threads && i > 0 {
			kproc[i] = kproc[0]
			continue
		}
		if kproc[i], err = ts.AddProcess(procs[i], l.nfds(i)); err != nil {
			return fail(err)
		}
	}
	data := func(w int) []byte {
		if threads {
			return procs[0].DataPages()
		}
		return procs[w].DataPages()
	}
	for i := range procs {
		d := procs[i].DataPages()
		clear(d[:4096])
		binary.LittleEndian.PutUint32(d[layout.ParamEntry:], uint32(c.Entry))
	}

	ready, wake, pipeOf, err := l.pipes(kproc, ts.AddPipe, ts.ShareFD)
	if err != nil {
		return fail(err)
	}

	stack := func(w int) uint32 {
		if !threads {
			return layout.UserStackTop
		}
		return uint32(layout.UserData + l.stacks32() - uint64(w)*msgStack32)
	}
	wakeFDs := uint32(msgReadyOut) | uint32(msgWakeIn)<<16
	startArgs := [6]uint32{msgReadyIn, msgWakeOut, uint32(l.workers()), layout.UserData + msgStarterBuf, layout.UserData}
	if i, err := ts.AddTask(kproc[0], i386pae.MsgStart, stack(0), startArgs); err != nil || i != 0 {
		return fail(fmt.Errorf("the starter task could not be made: %v", err))
	}
	for w := 1; w <= l.workers(); w++ {
		recv, g, j := l.role(w)
		var args [6]uint32
		prog := i386pae.MsgReceiver
		buf := uint32(layout.UserData + l.buf(w))
		if recv {
			args = [6]uint32{uint32(l.readFD(g, j)), uint32(MsgPerGroup * p.Loops), uint32(p.Size), buf, uint32(layout.UserData + l.result(w)), wakeFDs}
			binary.LittleEndian.PutUint64(data(w)[l.result(w):], ^uint64(0))
		} else {
			prog = i386pae.MsgSender
			copy(data(w)[l.buf(w):], message(g*MsgPerGroup+j, 0, 0, p.Size))
			args = [6]uint32{uint32(l.writeFD(g, 0)), MsgPerGroup, uint32(p.Loops), buf, uint32(p.Size), wakeFDs}
		}
		if i, err := ts.AddTask(kproc[w], prog, stack(w), args); err != nil || i != w {
			return fail(fmt.Errorf("out of kernel tasks: %v", err))
		}
	}

	t0 := amd64.RDTSC()
	end, err := ts.RunTasks()
	if err != nil {
		return fail(err)
	}
	k := ts.State()
	res.Switches, res.CR3Loads = uint64(k.Switches), uint64(k.CR3Loads)
	if end.Reason != layout.ReasonExit || end.Status != 0 {
		return fail(fmt.Errorf("the run ended with %v%s", end, taskStates32(k)))
	}
	res.Phases, res.RunCycles = end.Phases, ts.EndTSC()-t0
	pipeBytes := func(n int) (uint64, uint64) {
		wr, rd := ts.PipeBytes(n)
		return uint64(wr), uint64(rd)
	}
	cycles, err = checkMessaging(l, p, &res, data, pipeBytes, pipeOf, ready, wake, ts.EndTSC())
	if err != nil {
		return fail(err)
	}
	return cycles, res
}

// MeasureMessaging32 is MeasureMessaging in the 32-bit world.
func MeasureMessaging32(c i386pae.Config, threads bool, p MessagingParams) Messaging {
	return measureRuns(p, func() (uint64, Messaging) { return runMessaging32(c, threads, p) })
}

// MessagingTable32 runs sched-messaging in the 32-bit world under p's
// modes (on+pcid: not in PAE), processes and threads, by SYSENTER with
// Linux 4.19's entry, no global pages, and prints the table as the 64-bit
// one.
func MessagingTable32(r *Reporter, p MessagingParams, clk Clock) []Messaging {
	r.Printf("")
	r.Printf("32-bit PAE kernel, sched-messaging (perf bench sched messaging -p -g %d -l %d: pipes): %d-byte messages; %s;", p.Groups, p.Loops, p.Size, runs(p.R, p.Warmup))
	r.Printf("SYSENTER with Linux 4.19's entry, no global pages; %s; ± as perf; %s", clk.unitNote(), clk.header())
	r.Printf("%-8s | %12s %7s %10s %7s | %12s %7s %10s %7s", "mode", "processes s", "±%", clk.perMsg(), "vs off", "threads s", "±%", clk.perMsg(), "vs off")
	var all []Messaging
	for _, mode := range p.Modes {
		line := fmt.Sprintf("%-8s", mode)
		for _, threads := range []bool{false, true} {
			c := i386pae.Config{Mode: mode, Entry: i386pae.Sysenter, Flavour: pti.Linux, Copy: i386pae.Direct}
			m := MeasureMessaging32(c, threads, p)
			all = append(all, m)
			ratio := 0.0
			if base := findMessaging(all, pti.Off, threads); base != nil && base.ok() && m.ok() {
				ratio = m.Stats.Mean / base.Stats.Mean
			}
			line += " | " + messagingCells(m, clk, ratio)
			r.messaging(m, clk, ratio)
		}
		r.Printf("%s", strings.TrimRight(line, " "))
	}
	r.Printf("reference (docs/references.md: Ivy Bridge Xeon, perf bench sched messaging -g 20, 32-bit PAE kernel): %.2f s off, %.2f s with PTI (%.2f)",
		RefMessaging32OffS, RefMessaging32OnS, RefMessaging32OnS/RefMessaging32OffS)
	return all
}

// Reference figures of sched-messaging -g 20 on a 32-bit PAE Linux
// without and with PTI (docs/references.md).
const (
	RefMessaging32OffS = 0.28
	RefMessaging32OnS  = 0.44
)

// SeedMessaging prints sched-messaging in the shape of the reference
// thread's table: rows 32-bit PTI off, on (and on+pcid: not in PAE),
// 64-bit off, on, on+pcid; columns processes and threads: seconds ± (perf
// style) and the ratio to the same width's off. It records one "seed"
// record per cell.
func SeedMessaging(r *Reporter, ms64, ms32 []Messaging, clk Clock) {
	r.Printf("")
	r.Printf("sched-messaging, 32-bit PAE (SYSENTER) vs 64-bit (SYSCALL): seconds ± (perf style), ratio to the same width's off; reference: 32-bit 157%%, 64-bit 125%% with PTI")
	r.Printf("%-18s | %-28s | %s", "kernel", "processes", "threads")
	for _, width := range []int{32, 64} {
		ms := ms32
		if width == 64 {
			ms = ms64
		}
		for _, mode := range []pti.Mode{pti.Off, pti.On, pti.OnPCID} {
			line := fmt.Sprintf("%-18s", fmt.Sprintf("%d-bit PTI %v", width, mode))
			for _, threads := range []bool{false, true} {
				rec := map[string]any{"bench": "messaging", "width": width, "mode": mode.String(), "tasks": taskKind(threads)}
				m, base := findMessaging(ms, mode, threads), findMessaging(ms, pti.Off, threads)
				var text string
				switch {
				case width == 32 && mode == pti.OnPCID:
					text = "not in PAE"
					rec["reason"] = i386pae.Supported(i386pae.Config{Mode: mode}).Error()
					r.Record("seed-unsupported", rec)
				case m != nil && m.Unsup != nil:
					text = "unsupported by this CPU"
					rec["reason"] = m.Unsup.Error()
					r.Record("seed-unsupported", rec)
				case m == nil || !m.ok():
					text = "not measured" // not in the plan, or failed (reported above)
				default:
					ratio := 0.0
					if base != nil && base.ok() {
						ratio = m.Stats.Mean / base.Stats.Mean
					}
					text = fmt.Sprintf("%9.6f ±%5.1f%% %7.2fx", clk.Ns(m.Stats.Mean)/1e9, m.Stats.PerfPct(), ratio)
					addStats(rec, m.Stats, clk, ratio)
					rec["seconds"] = clk.Ns(m.Stats.Mean) / 1e9
					r.Record("seed", rec)
				}
				line += fmt.Sprintf(" | %-28s", text)
			}
			r.Printf("%s", strings.TrimRight(line, " "))
		}
	}
}

// MessagingPhases32 runs the 32-bit sched-messaging once more in each of
// p's modes (on+pcid: not in PAE), processes and threads, after its
// warm-up runs, with the instrumented SYSENTER entry (Linux 4.19's shape),
// and prints where the run's cycles went: the CR3 switch in, the frame's
// build, the dispatch (the system calls' work and the context switches),
// the exit copy and the CR3 switch out, as shares of the run's cycles
// from its first task's start to the last exit. The entry path (all but
// the dispatch; SYSENTER and SYSEXIT themselves are not in it) is the
// figure to set beside the reference thread's "about 25% of the cycles in
// entry_SYSENTER_32 with PTI against 2.5% without".
func MessagingPhases32(r *Reporter, p MessagingParams, clk Clock) {
	r.Printf("")
	r.Printf("32-bit sched-messaging -p -g %d -l %d: where the cycles go, %% of the run (instrumented SYSENTER entry: RDTSC at each boundary; %s)", p.Groups, p.Loops, runs(1, p.Warmup))
	r.Printf("%-8s %-9s | %8s %8s %8s %8s %8s | %10s %12s", "mode", "tasks", "cr3 in", "frame", "dispatch", "copy out", "cr3 out", "entry path", clk.perMsg())
	for _, mode := range p.Modes {
		for _, threads := range []bool{false, true} {
			c := i386pae.Config{Mode: mode, Entry: i386pae.Sysenter, Flavour: pti.Linux, Copy: i386pae.Direct, Stamps: true}
			q := p
			q.R = 1
			m := measureRuns(q, func() (uint64, Messaging) { return runMessaging32(c, threads, q) })
			head := fmt.Sprintf("%-8s %-9s", mode, taskKind(threads))
			f := map[string]any{"bench": "messaging", "width": 32, "mode": mode.String(), "tasks": taskKind(threads), "entry": "sysenter",
				"copy": "direct", "stamps": true, "groups": p.Groups, "loops": p.Loops, "size": p.Size, "emulated": clk.Emulated, "icount": clk.Icount}
			if r.notMeasured("messaging32 phases "+mode.String()+" "+taskKind(threads), f, m.Unsup, m.Failure) {
				switch {
				case m.Unsup != nil:
					r.Printf("%s | unsupported: %s", head, reasonOf(m.Unsup))
				default:
					r.Printf("%s | FAILED (see the error record)", head)
				}
				continue
			}
			run := float64(m.RunCycles)
			line := head + " |"
			entry := 0.0
			phases := map[string]any{}
			for i, ph := range m.Phases {
				line += fmt.Sprintf(" %7.1f%%", 100*float64(ph)/run)
				phases[phaseNames[i]] = round(100 * float64(ph) / run)
				if i != layout.PhaseDispatch {
					entry += float64(ph)
				}
			}
			line += fmt.Sprintf(" | %9.1f%% %12.1f", 100*entry/run, run/float64(m.Messages))
			r.Printf("%s", line)
			f["unit"] = clk.unit()
			f["phase_pct"] = phases
			f["entry_path_pct"] = round(100 * entry / run)
			f["run_cycles"], f["messages"] = m.RunCycles, m.Messages
			r.Record("phases", f)
		}
	}
	r.Printf("(reference, docs/references.md: 32-bit PAE Linux, -g 20: entry_SYSENTER_32 about 25%% of the cycles with PTI, 2.5%% without)")
}
