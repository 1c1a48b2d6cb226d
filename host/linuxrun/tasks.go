package linuxrun

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/bench/taskbench"
	"github.com/ptilab/ptilab/contract"
)

// MsgPerGroup are a sched-messaging group's senders, and receivers.
const MsgPerGroup = taskbench.MsgPerGroup

// The tasks of the ping-pong and sched-messaging: processes (the runner's
// own program started again as a worker) or threads (goroutines locked
// to OS threads of the runner).
var taskKinds = []string{"processes", "threads"}

// pipe2 returns a pipe, both ends close-on-exec.
func pipe2() (r, w int, err error) {
	var p [2]int
	err = unix.Pipe2(p[:], unix.O_CLOEXEC)
	return p[0], p[1], err
}

// closeAll closes fds.
func closeAll(fds ...int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// worker is a worker task: a process or a thread.
type worker struct {
	cmd  *exec.Cmd
	done chan error
}

// startWorker starts role with fds (the worker's 3, 4, ...) and args, as
// a process (threads false) or as the goroutine run, locked to its own
// thread, pinned as the plan says, and never unlocked: the thread ends
// with the goroutine, its affinity with it.
func (x *runner) startWorker(threads bool, role string, fds []int, args []int, run func() error) (*worker, error) {
	w := &worker{done: make(chan error, 1)}
	if threads {
		go func() {
			runtime.LockOSThread()
			if _, err := x.pin(); err != nil {
				w.done <- err
				return
			}
			w.done <- run()
		}()
		return w, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	w.cmd = exec.Command(exe)
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = strconv.Itoa(a)
	}
	cpu := ""
	if x.plan.CPU >= 0 {
		cpu = strconv.Itoa(x.plan.CPU)
	}
	// One P and no collector: a worker runs one loop on one thread, and
	// its runtime should add as few threads and wakeups as it can beside
	// what perf's forked C workers have.
	w.cmd.Env = append(os.Environ(), envRole+"="+role, envArgs+"="+strings.Join(strs, ","), envCPU+"="+cpu, "GOMAXPROCS=1", "GOGC=off")
	w.cmd.Stderr = os.Stderr
	// The worker's descriptors are duplicates, closed once it has them:
	// an os.File closes its descriptor when collected, and the run's own
	// are closed by the run.
	defer func() {
		for _, f := range w.cmd.ExtraFiles {
			f.Close()
		}
	}()
	for _, fd := range fds {
		d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return nil, err
		}
		w.cmd.ExtraFiles = append(w.cmd.ExtraFiles, os.NewFile(uintptr(d), "worker"))
	}
	if err := w.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { w.done <- w.cmd.Wait() }()
	return w, nil
}

// workerTimeout bounds a worker's life, and the wait for the workers to
// be ready: a worker that died or hangs (a lost message leaves its
// receiver waiting for good) fails the benchmark instead of hanging the
// run. The default workloads take milliseconds.
const workerTimeout = 2 * time.Minute

// wait waits until deadline, or until ctx is done, for the worker to
// end, and returns its context switches where it is a process (its
// rusage); a process still running then is killed, a thread left
// behind.
func (w *worker) wait(ctx context.Context, deadline time.Time) (uint64, error) {
	var err error
	select {
	case err = <-w.done:
	case <-ctx.Done():
		w.kill()
		return 0, ctx.Err()
	case <-time.After(time.Until(deadline)):
		w.kill()
		return 0, fmt.Errorf("a worker did not end within %v", workerTimeout)
	}
	if w.cmd == nil {
		return 0, err
	}
	if ru, ok := w.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru != nil {
		return uint64(ru.Nvcsw + ru.Nivcsw), err
	}
	return 0, err
}

// kill kills a worker process (a thread cannot be).
func (w *worker) kill() {
	if w.cmd != nil && w.cmd.Process != nil {
		w.cmd.Process.Kill()
	}
}

// enoughPs raises GOMAXPROCS to at least n, so that n locked threads run
// Go code at once as n C threads would (a thread back from a blocking
// system call otherwise waits for one of GOMAXPROCS Ps, which perf's
// pthreads never do), and returns what restores it.
func enoughPs(n int) func() {
	old := runtime.GOMAXPROCS(0)
	if n <= old {
		return func() {}
	}
	runtime.GOMAXPROCS(n)
	return func() {
		if os.Getenv("GOMAXPROCS") == "" {
			runtime.SetDefaultGOMAXPROCS() // and its updates, which GOMAXPROCS(n) turned off
			return
		}
		runtime.GOMAXPROCS(old)
	}
}

// pingPong times the ping-pong, as the image's: a byte through two pipes
// between the runner's locked thread and a worker, pingpong_n round
// trips per repeat, processes and threads.
func (x *runner) pingPong() error {
	n := taskbench.PingPongN.Of(x.plan.Plan)
	for _, tasks := range taskKinds {
		res, err := x.pingPongRun(tasks == "threads", n)
		if err != nil {
			return fmt.Errorf("%s: %w", tasks, err)
		}
		s := x.subject("pingpong", "")
		s.Tasks = tasks
		st := x.clk.stats(res.perTrip, &contract.PMUCounts{Unsupported: "counted on the system-call loops only"})
		x.record(contract.PingPong{Subject: s, N: n, R: x.plan.R, Warmup: x.plan.Warmup, Stats: st,
			NsPerRoundTrip: bench.Round(x.clk.Ns(st.Mean)), RoundTrips: res.trips, Switches: res.switches})
	}
	return nil
}

// pingPongResult is a ping-pong's figures: units per round trip of each
// measured repeat, round trips in all (warm-up included), and the two
// tasks' context switches.
type pingPongResult struct {
	perTrip  []float64
	trips    uint64
	switches uint64
}

func (x *runner) pingPongRun(threads bool, n int) (res pingPongResult, err error) {
	if threads {
		defer enoughPs(2)()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore, err := x.pin()
	if err != nil {
		return res, err
	}
	defer restore()
	pr, pw, err := pipe2() // runner to worker
	if err != nil {
		return res, err
	}
	qr, qw, err := pipe2() // worker to runner
	if err != nil {
		closeAll(pr, pw)
		return res, err
	}
	var child uint64 // the ponger thread's switches, read after its done
	w, err := x.startWorker(threads, "pingpong", []int{pr, qw}, nil, func() error {
		// The ends are closed as the ponger returns, so that the runner's
		// read ends too if it returns early.
		defer closeAll(pr, qw)
		s, err := ponger(pr, qw)
		child = s
		return err
	})
	if err != nil {
		closeAll(pr, pw, qr, qw)
		return res, err
	}
	if !threads {
		closeAll(pr, qw)
	}
	before := threadSwitches()
	b := []byte{1}
	var ticks []uint64
	for i := range x.plan.Warmup + x.plan.R {
		if err = x.ctx.Err(); err != nil {
			break
		}
		t := x.clk.now()
		for range n {
			if err = writeAll(pw, b); err == nil {
				err = readFull(qr, b)
			}
			if err != nil {
				break
			}
		}
		d := x.clk.since(t)
		if err != nil {
			break
		}
		res.trips += uint64(n)
		if i >= x.plan.Warmup {
			ticks = append(ticks, d)
		}
	}
	mine := threadSwitches() - before
	closeAll(pw, qr)
	s, werr := w.wait(x.ctx, time.Now().Add(workerTimeout))
	if threads && werr == nil {
		s = child
	}
	if err == nil {
		err = werr
	}
	res.perTrip, res.switches = bench.PerOp(ticks, n, 0), mine+s
	return res, err
}

// messaging times perf's sched-messaging as the image's: groups of 20
// senders and 20 receivers, each sender writing messaging_loops messages
// of messaging_size bytes to each receiver of its group over a socket
// pair or pipe per receiver (messaging_ipc), from the start signal to the
// last worker's end; processes and threads; every message counted and
// checksummed.
func (x *runner) messaging() error {
	p := taskbench.MessagingParamsOf(x.plan.Plan)
	for _, tasks := range taskKinds {
		var runs []uint64
		var last msgRun
		for i := range p.Warmup + p.R {
			if err := x.ctx.Err(); err != nil {
				return err
			}
			r, err := x.messagingRun(p, tasks == "threads")
			if err != nil {
				return fmt.Errorf("%s: %w", tasks, err)
			}
			if i >= p.Warmup {
				runs = append(runs, r.ticks)
			}
			last = r
		}
		s := x.subject("messaging", "")
		s.Tasks = tasks
		st := x.clk.stats(bench.PerOp(runs, 1, 0), &contract.PMUCounts{Unsupported: "counted on the system-call loops only"})
		x.record(contract.Messaging{Subject: s, Workload: p.Workload(), R: p.R, Warmup: p.Warmup, Stats: st,
			Seconds: x.clk.Ns(st.Mean) / 1e9, Messages: last.messages, PerMessage: bench.Round(st.Mean / float64(last.messages)),
			Switches: last.switches, ChecksumsOK: last.checksumOK})
	}
	return nil
}

// waitReady reads n ready bytes from fd (a byte per worker) until
// deadline, or until ctx is done.
func waitReady(ctx context.Context, fd, n int, deadline time.Time) error {
	b := make([]byte, n)
	for got := 0; got < n; {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%d of %d workers ready after %v: one died or hangs", got, n, workerTimeout)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, int(min(left, 100*time.Millisecond).Milliseconds())+1); err != nil && err != unix.EINTR {
			return err
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			continue
		}
		k, err := unix.Read(fd, b[got:])
		if err != nil && err != unix.EINTR {
			return err
		}
		got += max(k, 0)
	}
	return nil
}

// msgRun is a sched-messaging run: its ticks from the start signal to
// the last worker's end, the messages the receivers counted, whether
// their checksums and counts were as sent, and the context switches:
// the worker processes' whole lives (their rusage, start included), or
// for threads the runner's over the run (getrusage RUSAGE_SELF).
type msgRun struct {
	ticks      uint64
	messages   uint64
	checksumOK bool
	switches   uint64
}

func (x *runner) messagingRun(p taskbench.MessagingParams, threads bool) (res msgRun, err error) {
	if threads {
		defer enoughPs(2*MsgPerGroup*p.Groups + 1)()
	}
	var fds []int // every descriptor the run opened, closed at its end
	defer func() { closeAll(fds...) }()
	newPipe := func() (int, int, error) {
		r, w, err := pipe2()
		fds = append(fds, r, w)
		return r, w, err
	}
	readyR, readyW, err := newPipe()
	if err != nil {
		return res, err
	}
	wakeR, wakeW, err := newPipe()
	if err != nil {
		return res, err
	}
	resultR, resultW, err := newPipe()
	if err != nil {
		return res, err
	}
	var workers []*worker
	defer func() {
		if err != nil { // no worker process outlives a failed run
			for _, w := range workers {
				w.kill()
			}
		}
	}()
	start := func(role string, wfds, args []int, run func() error) error {
		w, err := x.startWorker(threads, role, wfds, args, run)
		if err == nil {
			workers = append(workers, w)
		}
		return err
	}
	selfBefore := processSwitches()
	want := uint64(p.Groups * MsgPerGroup * MsgPerGroup * p.Loops)
	var sum uint64
	for g := range p.Groups {
		outs := make([]int, MsgPerGroup)
		for i := range MsgPerGroup {
			var in, out int
			if p.IPC == taskbench.IPCPipe {
				in, out, err = newPipe()
			} else {
				var sp [2]int
				sp, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				in, out = sp[0], sp[1]
				fds = append(fds, in, out)
			}
			if err != nil {
				return res, err
			}
			outs[i] = out
			err = start("recv", []int{readyW, wakeR, in, resultW}, []int{MsgPerGroup * p.Loops, p.Size}, func() error {
				return receiver(readyW, wakeR, in, resultW, MsgPerGroup*p.Loops, p.Size)
			})
			if err != nil {
				return res, err
			}
		}
		for s := range MsgPerGroup {
			id := g*MsgPerGroup + s
			for l := range p.Loops {
				sum += MsgPerGroup * (uint64(id)<<32 | uint64(l))
			}
			err = start("send", append([]int{readyW, wakeR}, outs...), []int{p.Loops, p.Size, id}, func() error {
				return sender(readyW, wakeR, outs, p.Loops, p.Size, id)
			})
			if err != nil {
				return res, err
			}
		}
	}
	deadline := time.Now().Add(workerTimeout)
	if err = waitReady(x.ctx, readyR, len(workers), deadline); err != nil {
		return res, err
	}
	t := x.clk.now()
	if err := writeAll(wakeW, []byte{1}); err != nil {
		return res, err
	}
	var werr error
	for _, w := range workers {
		s, err := w.wait(x.ctx, deadline)
		res.switches += s
		if err != nil && werr == nil {
			werr = err
		}
	}
	res.ticks = x.clk.since(t)
	if threads { // the whole runner's, its threads and the runtime's
		res.switches = processSwitches() - selfBefore
	}
	if err = werr; err != nil {
		return res, err
	}
	var got uint64
	r := make([]byte, 16)
	for range p.Groups * MsgPerGroup {
		if err := readFull(resultR, r); err != nil {
			return res, fmt.Errorf("reading the receivers' counts: %w", err)
		}
		res.messages += binary.LittleEndian.Uint64(r)
		got += binary.LittleEndian.Uint64(r[8:])
	}
	res.checksumOK = res.messages == want && got == sum
	return res, nil
}
