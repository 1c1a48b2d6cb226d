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
	p0, err := ts.AddProcess(ping)
	if err != nil {
		return fail(err)
	}
	p1 := p0
	if !threads {
		if p1, err = ts.AddProcess(pong); err != nil {
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
	if i, err := ts.AddTask(p0, i386pae.Ping, layout.UserStackTop); err != nil || i != 0 {
		return fail(fmt.Errorf("ping's task: %v", err))
	}
	if i, err := ts.AddTask(p1, i386pae.Pong, pongStack); err != nil || i != 1 {
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
