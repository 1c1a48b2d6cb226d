package tasks

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/pti"
)

// Ring-3 tasks: processes (address spaces with descriptor tables) and
// their threads, a FIFO run queue, blocking and wake-up. Tasks switch only
// in system calls (interrupts stay masked during a run): a task that
// blocks, yields or exits gives the CPU to the next runnable one. A
// blocked task's call is retried in the kernel when the task is picked
// again, as Linux's pipe_read loops around its wait, and completes with a
// SYSRET like any other. The context switch swaps the pt_regs frame the
// Linux-shaped trampoline built on the kernel stack and loads CR3 only
// when the next task is in another process.

// Bounds of the tables: enough for sched-messaging with 25 groups (1001
// tasks, each in its own process).
const (
	maxProcs   = 1024
	maxTasks   = 1024
	maxFDSlots = 16384 // descriptors of all processes together
)

// PtRegs is a task's registers as pti's Linux-shaped trampoline saves them
// on the kernel stack: Linux's x86-64 struct pt_regs (linuxabi.PtRegs).
type PtRegs = linuxabi.PtRegs

// State is a task's state.
type State uint8

const (
	taskFree State = iota
	taskRunnable
	taskRunning
	taskBlocked
	taskExited
)

func (s State) String() string {
	return [...]string{"free", "runnable", "running", "blocked", "exited"}[s]
}

// Wait is what a blocked task waits for.
type Wait uint8

const (
	waitNone  Wait = iota
	waitRead       // data in, or the last writer gone from, a pipe
	waitWrite      // room in, or the last reader gone from, a pipe
	// room in a socket pair's channel (socket.go): its charge against
	// sk_sndbuf; or the peer gone. A socket's reader waits as a pipe's.
	waitSockWrite
)

func (w Wait) String() string { return [...]string{"", "read", "write", "write"}[w] }

type task struct {
	state  State
	wait   Wait  // what it waits for, blocked or woken: its call is retried; none when running or yielded
	obj    int16 // the pipe (or socket channel) waited on
	proc   int16
	next   int16 // run-queue or wait-list link
	status int64 // exit status
	regs   PtRegs
}

type process struct {
	used    bool
	threads int16 // tasks that have not exited
	kcr3    uint64
	// Its descriptors: fdSlots[fdBase:fdBase+nfds], object+1 each; 0:
	// closed.
	fdBase, nfds int32
}

// Kernel state of a run.
var (
	procs      [maxProcs]process
	tasks      [maxTasks]task
	fdSlots    [maxFDSlots]int16
	nfdSlots   int32 // slots handed out
	ntasks     int
	cur        int16 = -1 // the running task
	loaded     int16 = -1 // the process whose CR3 is loaded
	head, tail int16 = -1, -1
	live       int   // tasks that have not exited
	runStatus  int64 // the first nonzero exit status of the run
	framed     bool  // the trampoline builds a pt_regs frame: tasks can switch

	// The machine operations, variables for the host tests.
	setCR3  = amd64.SetCR3
	exitRun = pti.ExitRun
	ibpb    = issueIBPB
	rsbFill = fillRSB

	// switchCR3 is what the context switch calls to load another
	// process's CR3: setCR3, or switchMM with the mitigations
	// (SetSwitchMitigations, run.go), so that without them the switch
	// runs no instruction more.
	switchCR3 = amd64.SetCR3

	// The context switch's mitigations (SetSwitchMitigations).
	ibpbOnSwitch, rsbOnSwitch bool

	// Counters of a run.
	Switches uint64 // switches from one task to another
	CR3Loads uint64 // CR3 writes by the context switch (process changes)
	EndTSC   uint64 // the TSC when the last task exited
	IBPBs    uint64 // IA32_PRED_CMD writes by the context switch (ibpb)
	RSBFills uint64 // RSB stuffings by the context switch (rsb)
)

// Reset forgets every task, process, pipe and file and zeroes the
// counters. ptRegs says whether the run's trampoline is Linux-shaped
// (experiment.Linux), building the pt_regs frame that a context switch needs;
// without it a task that would block or yield ends the run
// (pti.ReasonNoSwitch).
func Reset(ptRegs bool) {
	procs = [maxProcs]process{}
	tasks = [maxTasks]task{}
	fdSlots = [maxFDSlots]int16{}
	ntasks, nfdSlots, cur, loaded, head, tail = 0, 0, -1, -1, -1, -1
	live, runStatus, framed = 0, 0, ptRegs
	Switches, CR3Loads, EndTSC, IBPBs, RSBFills = 0, 0, 0, 0, 0
	resetPipes()
	resetFiles()
}

// switchMM loads CR3 value cr3 for a switch to another process, with
// the context switch's mitigations (SetSwitchMitigations): an IBPB
// (IA32_PRED_CMD.IBPB), as Linux's switch_mm_irqs_off with IBPB always
// on, and the return stack buffer stuffed (fillRSB), as Linux's
// __switch_to_asm with X86_FEATURE_RSB_CTXSW. Linux stuffs the RSB on
// every switch, between threads too; here it happens with the CR3 load,
// on a switch between processes only (what the ladder's ping-pong
// measures), so that the plain switch carries no test of the knobs.
func switchMM(cr3 uint64) {
	setCR3(cr3)
	if ibpbOnSwitch {
		ibpb()
		IBPBs++
	}
	if rsbOnSwitch {
		rsbFill()
		RSBFills++
	}
}

// issueIBPB writes IA32_PRED_CMD.IBPB: branch predictions learned before
// it do not steer indirect branches after it (SDM Vol. 4, Table 2-2,
// 49H).
func issueIBPB() { amd64.WRMSR(amd64.MSR_IA32_PRED_CMD, amd64.PRED_CMD_IBPB) }

// NewProcess makes a process with descriptors 0 to nfds-1, all closed,
// whose kernel side is CR3 value kcr3 (with NOFLUSH where the mode has
// PCIDs: each process has its own), and returns its number, or -1 when
// the process table or the descriptor slots are used up.
func NewProcess(kcr3 uint64, nfds int) int {
	if nfds < 0 || nfds > maxFDSlots-int(nfdSlots) {
		return -1
	}
	for i := range procs {
		if !procs[i].used {
			procs[i] = process{used: true, kcr3: kcr3, fdBase: nfdSlots, nfds: int32(nfds)}
			nfdSlots += int32(nfds)
			return i
		}
	}
	return -1
}

// fds returns process proc's descriptor slots.
func (p *process) fds() []int16 { return fdSlots[p.fdBase : p.fdBase+p.nfds] }

// NewTask makes a task of process proc that starts at rip with stack
// pointer rsp and arguments args (RDI, RSI, RDX, R10, R8, R9), and returns
// its number, or -1 when the table is full. Task 0 is the one the run
// starts with (Run.RunTasks starts it with pti.Start, on proc's CR3); the
// others are queued, and first run when a switch picks them.
func NewTask(proc int, rip, rsp uint64, args [6]uint64) int {
	if ntasks == maxTasks || proc < 0 || proc >= maxProcs || !procs[proc].used {
		return -1
	}
	i := ntasks
	ntasks++
	t := &tasks[i]
	*t = task{proc: int16(proc), next: -1}
	t.regs = PtRegs{
		IP: rip, SP: rsp, Flags: userFlags, CS: userCS, SS: userDS,
		DI: args[0], SI: args[1], DX: args[2], R10: args[3], R8: args[4], R9: args[5],
	}
	// RCX and R11 as SYSCALL leaves them, so that the first return to the
	// task may be a SYSRET.
	t.regs.CX, t.regs.R11 = rip, userFlags
	procs[proc].threads++
	live++
	if i == 0 {
		t.state = taskRunning
		cur, loaded = 0, int16(proc)
	} else {
		enqueue(i)
	}
	return i
}

// Ring 3's selectors and a new task's RFLAGS (IF clear, the fixed bit 1
// set), as pti's toUser.
const (
	userCS    = amd64.USER_CS
	userDS    = amd64.USER_DS
	userFlags = amd64.RFLAGS_FIXED
)

// enqueue puts task i at the end of the run queue; a woken task keeps
// what it waited for until it runs: its call is then retried.
func enqueue(i int) {
	t := &tasks[i]
	t.state = taskRunnable
	t.next = -1
	if tail < 0 {
		head = int16(i)
	} else {
		tasks[tail].next = int16(i)
	}
	tail = int16(i)
}

func dequeue() int {
	i := head
	if i < 0 {
		return -1
	}
	head = tasks[i].next
	if head < 0 {
		tail = -1
	}
	tasks[i].next = -1
	return int(i)
}

// waitList is a FIFO of blocked tasks, linked through task.next.
type waitList struct{ head, tail int16 }

// block makes the running task wait for kind on pipe obj, at the end of
// list; its system call is retried when a wake-up makes it runnable and
// the scheduler picks it.
func block(kind Wait, obj int, list *waitList) { park(int(cur), kind, obj, list) }

// park makes task i wait for kind on pipe obj, at the end of list.
func park(i int, kind Wait, obj int, list *waitList) {
	t := &tasks[i]
	t.state = taskBlocked
	t.wait = kind
	t.obj = int16(obj)
	t.next = -1
	if list.tail < 0 {
		list.head = int16(i)
	} else {
		tasks[list.tail].next = int16(i)
	}
	list.tail = int16(i)
}

// wake makes every task of list runnable, in the order they blocked. Linux
// wakes one exclusive waiter (fs/pipe.c); here each woken task checks its
// condition when picked and goes back to waiting, without a switch, when
// another used the wake-up.
func wake(list *waitList) {
	for i := list.head; i >= 0; {
		next := tasks[i].next
		enqueue(int(i))
		i = next
	}
	list.head, list.tail = -1, -1
}

// yield puts the running task at the end of the run queue (sched_yield).
func yield() int64 {
	enqueue(int(cur))
	return 0
}

// exit ends the running task with status; the process's descriptors close
// with its last thread.
func exit(status int64) {
	t := &tasks[cur]
	t.state = taskExited
	t.status = status
	live--
	if status != 0 && runStatus == 0 {
		runStatus = status
	}
	p := &procs[t.proc]
	if p.threads--; p.threads == 0 {
		for fd := range p.fds() {
			closeFD(int(t.proc), fd)
		}
	}
	if live == 0 {
		EndTSC = amd64.RDTSC()
	}
}

// What pick found.
const (
	outcomeRun      = iota // a task was picked
	outcomeDone            // every task has exited
	outcomeDeadlock        // tasks remain, none can run
)

// schedule parks the running task, which blocked, yielded or exited in
// the system call that returned r, with its registers from regs (the
// pt_regs frame on the kernel stack), and resumes the next task that can
// run: its registers go into regs and its RAX is returned, for the
// trampoline to store there too. When no task can run it ends the run.
func schedule(regs *PtRegs, r int64) int64 {
	if !framed {
		if live == 0 {
			exitRun(pti.ReasonExit, uint64(runStatus))
		}
		exitRun(pti.ReasonNoSwitch, 0)
	}
	prev := cur
	t := &tasks[prev]
	t.regs = *regs
	t.regs.AX = uint64(r)
	for {
		next, outcome := pick()
		switch outcome {
		case outcomeDone:
			exitRun(pti.ReasonExit, uint64(runStatus))
		case outcomeDeadlock:
			exitRun(pti.ReasonDeadlock, 0)
		}
		if resume(next) {
			if next != int(prev) {
				Switches++
			}
			*regs = tasks[next].regs
			return int64(tasks[next].regs.AX)
		}
	}
}

// pick takes the next task off the run queue and says what to do when
// there is none.
func pick() (next int, outcome int) {
	if i := dequeue(); i >= 0 {
		return i, outcomeRun
	}
	if live == 0 {
		return -1, outcomeDone
	}
	return -1, outcomeDeadlock
}

// resume makes task i the running one, in its process's address space,
// and retries the system call it blocked in; it reports false when the
// call cannot go ahead yet (the task waits again, before its CR3 is
// loaded) or blocked again.
func resume(i int) bool {
	t := &tasks[i]
	pending := t.wait != waitNone // woken in a system call, to retry
	if pending && !t.ready() {
		park(i, t.wait, int(t.obj), waitListOf(t.wait, int(t.obj)))
		return false
	}
	cur = int16(i)
	t.state = taskRunning
	t.wait = waitNone
	if t.proc != loaded {
		loaded = t.proc
		if kcr3 := procs[t.proc].kcr3; kcr3 != 0 {
			switchCR3(kcr3)
			CR3Loads++
		}
	}
	if !pending {
		return true
	}
	r := dispatch(t.regs.OrigAX, t.regs.DI, t.regs.SI, t.regs.DX, t.regs.R10, t.regs.R8, t.regs.R9)
	if t.state != taskRunning {
		return false
	}
	t.regs.AX = uint64(r)
	return true
}

// Task describes a task, for reports: the deadlock's and the tests'.
type Task struct {
	Task, Proc int
	State      State
	Wait       Wait   // for a blocked task: read or write
	Pipe       int    // the pipe a blocked task waits on
	RIP        uint64 // where it resumes: after its SYSCALL
	Status     int64  // an exited task's exit status
}

// Count returns the number of tasks of the run.
func Count() int { return ntasks }

// Tasks lists the run's tasks into dst and returns how many it listed.
func Tasks(dst []Task) int {
	n := 0
	for i := 0; i < ntasks && n < len(dst); i++ {
		t := &tasks[i]
		dst[n] = Task{Task: i, Proc: int(t.proc), State: t.state, RIP: t.regs.IP, Status: t.status}
		if t.state == taskBlocked {
			dst[n].Wait, dst[n].Pipe = t.wait, int(t.obj)
		}
		n++
	}
	return n
}
