package taskbench

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/experiment"
)

// Messaging is sched-messaging's registry row, with its keys.
var Messaging = bench.Benchmark{Name: "messaging", Summary: "perf's sched-messaging over Unix-domain stream socket pairs (perf's default) or pipes (messaging_ipc), processes and threads, every message counted and checksummed; in the 32-bit world also where its cycles go",
	Worlds: []int{64, 32}, Keys: []string{"modes", "asi_actions", MessagingGroups.Name(), msgLoops.Name(), msgSize.Name(), msgIPC.Name(), "r", "warmup"}, Run: messagingTable}

// sched-messaging as perf defines it (tools/perf/bench/sched-messaging.c):
// G groups, each of 20 senders and 20 receivers; each receiver owns a
// channel, an AF_UNIX stream socket pair (perf's default) or a pipe (perf
// -p), as are the ready and wake channels of the start protocol; each
// sender writes L messages to every receiver of its group.
// Every task first says it is ready and waits for the start signal; the
// clock runs from the start signal until the last task has exited. In
// process mode every task is a process, in thread mode all are threads of
// one.

// MessagingParams are sched-messaging's knobs.
type MessagingParams struct {
	Groups int    // G
	Loops  int    // L: messages from each sender to each receiver of its group
	Size   int    // bytes per message, 8 to MaxMessageSize
	R      int    // repeats
	Warmup int    // repeats run first and not counted
	IPC    string // IPCSocket or IPCPipe
}

// The IPCs of sched-messaging (the plan's messaging_ipc).
const (
	IPCSocket = "socket" // socketpair(AF_UNIX, SOCK_STREAM, 0): perf's default
	IPCPipe   = "pipe"   // pipe(2): perf -p
)

// Workload is the record form of p's shape.
func (p MessagingParams) Workload() contract.Workload {
	return contract.Workload{Groups: p.Groups, Loops: p.Loops, Size: p.Size, IPC: p.IPC}
}

// MessagingParamsOf are plan p's (the image's and `ptilab linux`'s).
func MessagingParamsOf(p bench.Plan) MessagingParams {
	return MessagingParams{Groups: MessagingGroups.Of(p), Loops: msgLoops.Of(p), Size: msgSize.Of(p), R: p.R, Warmup: p.Warmup, IPC: msgIPC.Of(p)}
}

// sched-messaging's plan keys: its groups, loops and message size in
// bytes, and its IPC. The defaults are small enough for the emulator;
// perf's are 10 groups and 100 loops, the reference figures' 20 groups.
var (
	MessagingGroups = bench.IntKey("messaging_groups", 2, 1, MaxGroups)
	msgLoops        = bench.IntKey("messaging_loops", 10, 1, 100_000)
	msgSize         = bench.IntKey("messaging_size", 100, 8, MaxMessageSize)
	msgIPC          = bench.NewKey("messaging_ipc", IPCSocket, func(v string) (string, error) {
		if v != IPCSocket && v != IPCPipe {
			return "", fmt.Errorf("messaging_ipc must be %s or %s", IPCSocket, IPCPipe)
		}
		return v, nil
	})
)

// Bounds of the messaging parameters: the task table, and a message's
// room in a task's data.
const (
	MsgPerGroup    = 20 // senders, and receivers, of a group (perf's num_fds)
	MaxGroups      = 25
	MaxMessageSize = 1024
)

// MessagingResult is one configuration's result.
type MessagingResult struct {
	Config  experiment.Config
	Threads bool
	P       MessagingParams
	Stats   bench.Stats // TSC cycles per run, start signal to last exit
	Disturb bench.Disturb
	// Per run: messages each way, and the kernel's counts of the last.
	Messages           uint64
	Switches, CR3Loads uint64
	ASITransitions     uint64 // the asi modes' (bench.Exit), of the last run
	Unsup, Failure     error
	// The instrumented runs' phases (over the run's system calls) and the
	// run's cycles from the start of its first task to the last exit.
	Stamps    bench.Stamps
	RunCycles uint64
}

func (m MessagingResult) OK() bool { return m.Unsup == nil && m.Failure == nil }

// Descriptors of the messaging tasks: the ready pipe (every task writes,
// the starter reads) and the wake pipe (the starter writes a byte for
// each task), then the receivers' pipes.
const (
	msgReadyIn, msgReadyOut = 0, 1
	msgWakeIn, msgWakeOut   = 2, 3
	msgFirstPipeFD          = 4
)

// msgLayout places a run's tasks and buffers. Task 0 is the starter;
// group g's receivers are tasks 1+40g to 20+40g and its senders the next
// 20, as perf creates them.
type msgLayout struct {
	threads bool
	groups  int
	slot    uint64 // bytes of a worker's buffer
	// stack is the bytes of stack each thread has in the data pages, after
	// the results, in threads mode (UserLayout.ThreadStack); 0: the
	// programs use no stack.
	stack uint64
}

func (l msgLayout) workers() int { return 2 * MsgPerGroup * l.groups }

// Offsets in the data pages: the start TSC at 0, the starter's buffer
// at 64 (a byte per worker), then (threads) every worker's buffer and
// the receivers' results, or (processes) the worker's buffer and results.
const msgStarterBuf = 64

func (l msgLayout) workerBase() uint64 {
	if !l.threads {
		return msgStarterBuf
	}
	return msgStarterBuf + uint64(l.workers()+63)&^63
}

// buf returns the offset of worker w's (1-based task number) buffer.
func (l msgLayout) buf(w int) uint64 {
	if !l.threads {
		return l.workerBase()
	}
	return l.workerBase() + uint64(w-1)*l.slot
}

// result returns the offset of receiver task w's two result quadwords.
func (l msgLayout) result(w int) uint64 {
	if !l.threads {
		return l.workerBase() + l.slot
	}
	return l.workerBase() + uint64(l.workers())*l.slot + uint64(w-1)*16
}

// stacksEnd returns the offset in the data pages of the end of the
// threads' stacks, which start after the results.
func (l msgLayout) stacksEnd() uint64 {
	return (l.result(l.workers())+16+63)&^63 + uint64(1+l.workers())*l.stack
}

// dataPages returns the data pages of a process of the run (the threads'
// one process, or any of the processes).
func (l msgLayout) dataPages() int {
	end := l.result(l.workers()) + 16
	if l.threads && l.stack > 0 {
		end = l.stacksEnd()
	}
	return int((end + 4095) / 4096)
}

// stackTop returns the top of task w's stack in a world with layout u: a
// slice of the data pages for a thread that needs a stack, else the stack
// pages (threads of programs that use no stack share them).
func (l msgLayout) stackTop(w int, u bench.UserLayout) uint64 {
	if !l.threads || l.stack == 0 {
		return u.StackTop
	}
	return u.Data + l.stacksEnd() - uint64(w)*l.stack
}

// role says whether worker w (task w, 1 or more) receives, and gives its
// group and its index in the group.
func (l msgLayout) role(w int) (receiver bool, group, index int) {
	if w < 1 {
		return false, -1, -1
	}
	k := w - 1
	group, k = k/(2*MsgPerGroup), k%(2*MsgPerGroup)
	return k < MsgPerGroup, group, k % MsgPerGroup
}

// nfds returns the descriptors task i's process needs: the ready and wake
// pipes' ends, then the threads' every pipe end, or a receiver's read end
// or a sender's write ends.
func (l msgLayout) nfds(i int) int {
	n := msgFirstPipeFD
	switch recv, _, _ := l.role(i); {
	case l.threads:
		n += 2 * MsgPerGroup * l.groups
	case i == 0:
	case recv:
		n++
	default:
		n += MsgPerGroup
	}
	return n
}

// readFD is receiver j of group g's read descriptor.
func (l msgLayout) readFD(g, j int) int {
	if l.threads {
		return msgFirstPipeFD + g*MsgPerGroup + j
	}
	return msgFirstPipeFD
}

// writeFD is the descriptor at which the senders of group g write to its
// receiver j.
func (l msgLayout) writeFD(g, j int) int {
	if l.threads {
		return msgFirstPipeFD + MsgPerGroup*l.groups + g*MsgPerGroup + j
	}
	return msgFirstPipeFD + j
}

// pipes makes a run's pipes in a tasks kernel, with mk (a pipe from
// descriptor wfd of process wproc to rfd of rproc) and share (descriptor fd
// of process from, also in to): the ready pipe, whose read end the starter
// (task 0) holds, the wake pipe, whose write end it holds, their other
// ends in every worker; and each receiver's pipe, its read end in the
// receiver (readFD), its write end in every sender of its group
// (writeFD). kproc are the tasks' processes; pipeOf is indexed by task.
func (l msgLayout) pipes(kproc []int, mk func(rproc, rfd, wproc, wfd int) (int, error), share func(from, to, fd int) bool) (ready, wake int, pipeOf []int, err error) {
	if ready, err = mk(kproc[0], msgReadyIn, kproc[1], msgReadyOut); err != nil {
		return
	}
	if wake, err = mk(kproc[1], msgWakeIn, kproc[0], msgWakeOut); err != nil {
		return
	}
	for w := 2; w <= l.workers() && !l.threads; w++ {
		if !share(kproc[1], kproc[w], msgReadyOut) || !share(kproc[1], kproc[w], msgWakeIn) {
			return 0, 0, nil, errors.New("the ready and wake pipes could not be shared")
		}
	}
	pipeOf = make([]int, 1+l.workers())
	for w := 1; w <= l.workers(); w++ {
		recv, g, j := l.role(w)
		if !recv {
			continue
		}
		firstSender := w + MsgPerGroup - j
		if pipeOf[w], err = mk(kproc[w], l.readFD(g, j), kproc[firstSender], l.writeFD(g, j)); err != nil {
			return
		}
		for s := firstSender + 1; s < firstSender+MsgPerGroup && !l.threads; s++ {
			if !share(kproc[firstSender], kproc[s], l.writeFD(g, j)) {
				return 0, 0, nil, errors.New("a receiver's pipe could not be shared")
			}
		}
	}
	return
}

// checkMessaging checks a finished run: every receiver got every message
// of its group whole (count and checksum, in its data at result), every
// receiver's pipe (pipeOf) carried what was written and the ready and
// wake pipes one byte per worker (pipeBytes gives a pipe's written and
// read bytes); processes loaded CR3 at every switch, threads never; the
// last exit (end) came after the start signal, the TSC in the starter's
// data. It sets res.Messages and returns the run's cycles.
func checkMessaging(l msgLayout, p MessagingParams, res *MessagingResult, data func(w int) []byte, pipeBytes func(int) (uint64, uint64), pipeOf []int, ready, wake int, end uint64) (uint64, error) {
	perPipe := uint64(MsgPerGroup * p.Loops * p.Size)
	for w := 1; w <= l.workers(); w++ {
		recv, g, j := l.role(w)
		if !recv {
			continue
		}
		d := data(w)[l.result(w):]
		count, sum := binary.LittleEndian.Uint64(d), binary.LittleEndian.Uint64(d[8:])
		if want := uint64(MsgPerGroup * p.Loops); count != want {
			return 0, fmt.Errorf("receiver task %d got %d messages, want %d", w, count, want)
		}
		if want := expectedSum(g, j, p.Loops, p.Size); sum != want {
			return 0, fmt.Errorf("receiver task %d: checksum %#x, want %#x", w, sum, want)
		}
		if wr, rd := pipeBytes(pipeOf[w]); wr != perPipe || rd != perPipe {
			return 0, fmt.Errorf("receiver task %d's pipe: %d bytes written, %d read; want %d", w, wr, rd, perPipe)
		}
		res.Messages += MsgPerGroup * uint64(p.Loops)
	}
	for _, pp := range []int{ready, wake} {
		if wr, rd := pipeBytes(pp); wr != uint64(l.workers()) || rd != wr {
			return 0, fmt.Errorf("start protocol: a pipe carried %d bytes and delivered %d; want %d", wr, rd, l.workers())
		}
	}
	if l.threads && res.CR3Loads != 0 {
		return 0, fmt.Errorf("%d CR3 loads between threads of one process", res.CR3Loads)
	}
	if !l.threads && res.CR3Loads < res.Switches {
		return 0, fmt.Errorf("%d CR3 loads for %d switches between processes", res.CR3Loads, res.Switches)
	}
	start := binary.LittleEndian.Uint64(data(0)[0:])
	if end <= start {
		return 0, fmt.Errorf("the last exit (TSC %d) is not after the start signal (TSC %d)", end, start)
	}
	return end - start, nil
}

// message returns sender s's (0-based, over all groups) message of loop
// l to receiver j of its group: the loop, j and s in its first 8 bytes
// (loop | j<<24, s), a pattern of the sender's after.
func message(s, loop, j, size int) []byte {
	m := make([]byte, size)
	for i := range m {
		m[i] = byte(s*7 + i)
	}
	binary.LittleEndian.PutUint32(m, uint32(loop)|uint32(j)<<24)
	binary.LittleEndian.PutUint32(m[4:], uint32(s))
	return m
}

// msgSum is the receivers' checksum of a message: its quadwords at 0, 8,
// ..., 8*(size/8-1) and size-8, added modulo 2^64.
func msgSum(m []byte) uint64 {
	var s uint64
	for i := 0; i+8 <= len(m); i += 8 {
		s += binary.LittleEndian.Uint64(m[i:])
	}
	return s + binary.LittleEndian.Uint64(m[len(m)-8:])
}

// expectedSum is what receiver j of group g must add up: every message
// of every sender of the group to it.
func expectedSum(g, j, loops, size int) uint64 {
	var s uint64
	for i := 0; i < MsgPerGroup; i++ {
		for l := 0; l < loops; l++ {
			s += msgSum(message(g*MsgPerGroup+i, l, j, size))
		}
	}
	return s
}

// procCache keeps the processes of messaging runs, made when first needed
// and reused: a process per task, or one for all the threads.
type procCache struct {
	each    []bench.Process
	threads bench.Process // nil until made
}

// get returns the processes of a run with l, each with pages data pages
// (at most max), made by newProc when there are too few or too small.
func (c *procCache) get(l msgLayout, pages, max int, newProc func(int) (bench.Process, error)) ([]bench.Process, error) {
	if pages > max {
		return nil, fmt.Errorf("%d groups of %d-byte buffers need %d data pages; a process has at most %d", l.groups, l.slot, pages, max)
	}
	if l.threads {
		if c.threads == nil || len(c.threads.DataPages()) < pages*4096 {
			p, err := newProc(pages)
			if err != nil {
				return nil, err
			}
			c.threads = p
		}
		return []bench.Process{c.threads}, nil
	}
	if len(c.each) > 0 && len(c.each[0].DataPages()) < pages*4096 {
		c.each = nil // too small for these messages: make new ones
	}
	for len(c.each) < 1+l.workers() {
		p, err := newProc(pages)
		if err != nil {
			return nil, err
		}
		c.each = append(c.each, p)
	}
	return c.each[:1+l.workers()], nil
}

// msgProcs are each world's processes of messaging runs.
var msgProcs = map[bench.World]*procCache{}

// messagingRun makes one sched-messaging run in w under sw and returns
// the TSC cycles from the start signal to the last exit, after checking
// that every message arrived whole.
func messagingRun(w bench.World, sw bench.Switch, threads bool, p MessagingParams) (cycles uint64, res MessagingResult) {
	res = MessagingResult{Config: sw.Config(), Threads: threads, P: p}
	fail := func(err error) (uint64, MessagingResult) { res.Unsup, res.Failure = bench.SplitErr(err); return 0, res }
	if p.Groups < 1 || p.Groups > MaxGroups || p.Size < 8 || p.Size > MaxMessageSize || p.Loops < 1 {
		return fail(fmt.Errorf("groups %d, message size %d, loops %d: out of range", p.Groups, p.Size, p.Loops))
	}
	if p.IPC != IPCSocket && p.IPC != IPCPipe {
		return fail(fmt.Errorf("IPC %q: want %s or %s", p.IPC, IPCSocket, IPCPipe))
	}
	u := w.User()
	l := msgLayout{threads: threads, groups: p.Groups, slot: uint64(p.Size+63) &^ 63, stack: u.ThreadStack}
	if msgProcs[w] == nil {
		msgProcs[w] = &procCache{}
	}
	procs, err := msgProcs[w].get(l, l.dataPages(), w.User().MaxDataPages, w.NewProcess)
	if err != nil {
		return fail(err)
	}
	run, err := w.NewRun(sw)
	if err != nil {
		return fail(err)
	}

	// The kernel's processes: one for every task, or one for all.
	kproc := make([]int, 1+l.workers())
	for i := range kproc {
		if threads && i > 0 {
			kproc[i] = kproc[0]
			continue
		}
		if kproc[i], err = run.AddProcess(procs[i], l.nfds(i)); err != nil {
			return fail(err)
		}
	}
	data := func(w int) []byte {
		if threads {
			return procs[0].DataPages()
		}
		return procs[w].DataPages()
	}
	mk := run.AddSocketPair
	if p.IPC == IPCPipe {
		mk = run.AddPipe
	}
	ready, wake, pipeOf, err := l.pipes(kproc, mk, run.ShareFD)
	if err != nil {
		return fail(err)
	}

	// The tasks, in perf's order, with their buffers.
	start := bench.MsgStartTask{ReadyIn: msgReadyIn, WakeOut: msgWakeOut, Tasks: l.workers(), Buf: msgStarterBuf, StartTSC: 0}
	if i, err := run.AddTask(kproc[0], l.stackTop(0, u), start); err != nil || i != 0 {
		return fail(fmt.Errorf("the starter task could not be made: %v", err))
	}
	for w := 1; w <= l.workers(); w++ {
		recv, g, j := l.role(w)
		var t bench.Task
		if recv {
			t = bench.MsgReceiverTask{In: l.readFD(g, j), Messages: MsgPerGroup * p.Loops, Size: p.Size, Buf: l.buf(w), Results: l.result(w), ReadyOut: msgReadyOut, WakeIn: msgWakeIn}
			binary.LittleEndian.PutUint64(data(w)[l.result(w):], ^uint64(0))
		} else {
			t = bench.MsgSenderTask{FirstOut: l.writeFD(g, 0), Receivers: MsgPerGroup, Loops: p.Loops, Msg: l.buf(w), Size: p.Size, ReadyOut: msgReadyOut, WakeIn: msgWakeIn}
			copy(data(w)[l.buf(w):], message(g*MsgPerGroup+j, 0, 0, p.Size))
		}
		if i, err := run.AddTask(kproc[w], l.stackTop(w, u), t); err != nil || i != w {
			return fail(fmt.Errorf("out of kernel tasks: %v", err))
		}
	}

	t0 := amd64.RDTSC()
	end, err := run.Start()
	if err != nil {
		return fail(err)
	}
	var endTSC uint64
	res.Switches, res.CR3Loads, endTSC = run.Counts()
	if !end.OK() {
		return fail(fmt.Errorf("the run ended with %v%s", end, describeTasks(run.Tasks())))
	}
	res.Stamps, res.RunCycles = end.Stamps, endTSC-t0
	res.ASITransitions = end.ASITransitions

	// Nothing lost: every receiver got every message of its group whole,
	// every pipe carried what was written.
	cycles, err = checkMessaging(l, p, &res, data, run.PipeBytes, pipeOf, ready, wake, endTSC)
	if err != nil {
		return fail(err)
	}
	return cycles, res
}

// measureMessaging makes p's warm-up and measured runs in w under c,
// planned once, and summarizes the measured ones' cycles; a failed run
// ends them.
func measureMessaging(w bench.World, c experiment.Config, threads bool, p MessagingParams) MessagingResult {
	sw, err := w.Plan(c)
	if err != nil {
		return MessagingResult{Config: c, Threads: threads, P: p, Unsup: err}
	}
	var times []uint64
	var deltas []cpustate.Sample
	var last MessagingResult
	for i := 0; i < p.Warmup+p.R; i++ {
		before := bench.ReadSample()
		cycles, res := messagingRun(w, sw, threads, p)
		after := bench.ReadSample()
		last = res
		if !res.OK() {
			return res
		}
		if i >= p.Warmup {
			times = append(times, cycles)
			deltas = append(deltas, cpustate.Delta(before, after))
		}
	}
	perRun := bench.PerOp(times, 1, 0)
	last.Stats = bench.Summarize(perRun)
	last.Disturb = bench.DisturbDeltas(perRun, deltas, bench.SampledRepeat, 1)
	return last
}

// messagingTable runs sched-messaging in every mode of the plan,
// processes and threads, through the linux trampoline of the world's
// default entry, no global pages, and records each as it finishes
// (package tables shows a row per mode, shaped like the Linux threads':
// total time in seconds (perf's "Total time"), its spread, cycles per
// message and the ratio to off). In a world with an instrumented entry it
// then measures where the cycles go (messagingPhases).
func messagingTable(x *bench.Ctx) any {
	p, w := MessagingParamsOf(x.Plan), x.World
	var all []MessagingResult
	for _, mode := range x.Plan.Modes {
		for _, c := range x.Plan.ConfigsOf(w.TasksConfig(mode, w.Entries()[0])) {
			tasksRow(&all, func(threads bool) MessagingResult {
				return measureMessaging(w, c, threads, p)
			}, func(m MessagingResult, q float64) { messaging(x, m, q) })
		}
	}
	c := w.TasksConfig(experiment.Off, w.Entries()[0])
	c.Stamps = true
	if _, err := w.Plan(c); err == nil {
		messagingPhases(x)
	}
	return all
}

func (m MessagingResult) row() (experiment.Mode, bool, bench.Stats) {
	return m.Config.Mode, m.Threads, m.Stats
}

// messagingSubject is the record subject of a sched-messaging
// configuration.
func messagingSubject(x *bench.Ctx, c experiment.Config, threads bool) contract.Subject {
	s := x.Subject("messaging", c)
	s.Tasks = TaskKind(threads)
	return s
}

// messaging writes m's record.
func messaging(x *bench.Ctx, m MessagingResult, ratio float64) {
	s := messagingSubject(x, m.Config, m.Threads)
	wl := m.P.Workload()
	if m.Unsup != nil {
		x.Record(contract.Unsupported{Subject: s, Workload: &wl, R: m.P.R, Warmup: m.P.Warmup, Reason: m.Unsup.Error()})
		return
	}
	if x.NotMeasured(x.Name+" "+m.Config.ModeName()+" "+s.Tasks, s, 0, m.P.R, nil, m.Failure) {
		return
	}
	rec := contract.Messaging{
		Subject: s, Workload: wl, R: m.P.R, Warmup: m.P.Warmup,
		Stats: x.StatsOf(m.Stats, m.Disturb, ratio), Seconds: x.Clock.Ns(m.Stats.Mean) / 1e9, Messages: m.Messages,
		PerMessage: bench.Round(m.Stats.Mean / float64(m.Messages)), Switches: m.Switches, CR3Loads: m.CR3Loads, ChecksumsOK: true,
	}
	if m.Config.Mode.ASI() {
		rec.ASITransitions = &m.ASITransitions
	}
	x.Record(rec)
}

// messagingPhases runs sched-messaging once more in each of the plan's
// modes the world has, processes and threads, after its warm-up runs,
// with the instrumented entry (in the 32-bit world Linux 4.19's SYSENTER
// entry), and prints where the run's cycles went: the CR3 switch in, the
// frame's build, the dispatch (the system calls' work and the context
// switches), the exit copy and the CR3 switch out, as shares of the run's
// cycles from its first task's start to the last exit. The entry path
// (all but the dispatch; the entry and return instructions themselves
// are not in it) is the figure to set beside the reference thread's
// "about 25% of the cycles in entry_SYSENTER_32 with PTI against 2.5%
// without".
func messagingPhases(x *bench.Ctx) {
	p, w, clk := MessagingParamsOf(x.Plan), x.World, x.Clock
	entry := w.Entries()[0]
	for _, mode := range x.Plan.Modes {
		for _, threads := range []bool{false, true} {
			c := w.TasksConfig(mode, entry)
			c.Stamps = true
			q := p
			q.R = 1
			m := measureMessaging(w, c, threads, q)
			s := messagingSubject(x, c, threads)
			wl := p.Workload()
			switch {
			case m.Unsup != nil:
				x.Record(contract.Unsupported{Subject: s, Workload: &wl, Reason: m.Unsup.Error()})
				continue
			case x.NotMeasured(x.Name+" phases "+mode.String()+" "+s.Tasks, s, 0, 0, nil, m.Failure):
				continue
			}
			run := float64(m.RunCycles)
			entryPath := 0.0
			pct := map[string]float64{}
			for i, name := range bench.PhaseNames {
				ph := m.Stamps.Net(i)
				pct[name] = bench.Round(100 * ph / run)
				if i != bench.PhaseDispatch {
					entryPath += ph
				}
			}
			core := m.Disturb.CoreRecord(clk.Hz)
			x.Record(contract.Phases{
				Subject: s, Workload: wl, Unit: clk.Unit(),
				PhasePct: pct, StampCost: bench.PhaseMap(m.Stamps.Cost), StampedCalls: m.Stamps.Calls(),
				EntryPathPct: bench.Round(100 * entryPath / run), RunCycles: m.RunCycles, Messages: m.Messages,
				Warmup: p.Warmup, Core: &core,
			})
		}
	}
}
