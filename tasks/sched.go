package tasks

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/pti"
	"github.com/ptilab/ptilab/tasks/core"
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
// tasks, each in its own process). Tasks and pipes are package core's.
const (
	maxProcs   = 1024
	maxTasks   = core.MaxTasks
	maxFDSlots = 16384 // descriptors of all processes together
)

// PtRegs is a task's registers as pti's Linux-shaped trampoline saves them
// on the kernel stack: Linux's x86-64 struct pt_regs (linuxabi.PtRegs).
type PtRegs = linuxabi.PtRegs

// State is a task's state: core's Task.State.
type State uint8

func (s State) String() string {
	return [...]string{"free", "runnable", "running", "blocked", "exited"}[s]
}

// Wait is what a blocked task waits for: core's Task.Wait.
type Wait uint8

func (w Wait) String() string { return [...]string{"", "read", "write", "write"}[w] }

// task is what this kernel keeps of a task beside core's (kernel.Tasks).
type task struct {
	proc int16
	regs PtRegs
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
	// kernel is the core's state: the running task, the run queue, the
	// tasks' states, the pipes and socket channels.
	kernel   core.Kernel
	procs    [maxProcs]process
	tasks    [maxTasks]task
	fdSlots  [maxFDSlots]int16
	nfdSlots int32 // slots handed out
	ntasks   int
	loaded   int16 = -1 // the process whose CR3 is loaded
	framed   bool       // the trampoline builds a pt_regs frame: tasks can switch

	// The machine operations, variables for the host tests.
	setCR3  = amd64.SetCR3
	exitRun = pti.ExitRun
	ibpb    = issueIBPB
	rsbFill = fillRSB

	// switchCR3 is what the context switch calls to load another
	// process's CR3: setCR3, or switchMM with the mitigations
	// (setSwitchMitigations, run.go), so that without them the switch
	// runs no instruction more.
	switchCR3 = amd64.SetCR3

	// The context switch's mitigations (setSwitchMitigations).
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
	kernel.Reset()
	ntasks, nfdSlots, loaded, framed = 0, 0, -1, ptRegs
	Switches, CR3Loads, EndTSC, IBPBs, RSBFills = 0, 0, 0, 0, 0
	resetPipes()
	resetFiles()
}

// switchMM loads CR3 value cr3 for a switch to another process, with
// the context switch's mitigations (setSwitchMitigations): an IBPB
// (IA32_PRED_CMD.IBPB) before the CR3 load, as Linux's
// switch_mm_irqs_off issues it (cond_mitigation, then load_new_mm_cr3:
// arch/x86/mm/tlb.c) with IBPB always on, and the return stack buffer
// stuffed (fillRSB) after it, as Linux's __switch_to_asm with
// X86_FEATURE_RSB_CTXSW, which runs after switch_mm. Linux stuffs the RSB
// on every switch, between threads too; here it happens with the CR3
// load, on a switch between processes only (what the ladder's ping-pong
// measures), so that the plain switch carries no test of the knobs.
func switchMM(cr3 uint64) {
	ibpb()
	IBPBs++
	setCR3(cr3)
	if rsbOnSwitch {
		rsbFill()
		RSBFills++
	}
}

// switchRSB is switchMM with the RSB stuffing alone: the CR3 load, then
// the stuffing.
func switchRSB(cr3 uint64) {
	setCR3(cr3)
	rsbFill()
	RSBFills++
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
	*t = task{proc: int16(proc)}
	t.regs = PtRegs{
		IP: rip, SP: rsp, Flags: userFlags, CS: userCS, SS: userDS,
		DI: args[0], SI: args[1], DX: args[2], R10: args[3], R8: args[4], R9: args[5],
	}
	// RCX and R11 as SYSCALL leaves them, so that the first return to the
	// task may be a SYSRET.
	t.regs.CX, t.regs.R11 = rip, userFlags
	procs[proc].threads++
	kernel.AddTask(uint32(i))
	if i == 0 {
		loaded = int16(proc)
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

// exit ends the running task with status; the process's descriptors close
// with its last thread.
func exit(status int64) {
	t := &tasks[kernel.Cur]
	last := kernel.Exit(uint32(status))
	p := &procs[t.proc]
	if p.threads--; p.threads == 0 {
		for fd := range p.fds() {
			closeFD(int(t.proc), fd)
		}
	}
	if last {
		EndTSC = amd64.RDTSC()
	}
}

// runStatus is the first nonzero exit status of the run, an int as exit's
// argument.
func runStatus() uint64 { return uint64(int64(int32(kernel.Status))) }

// schedule parks the running task, which blocked, yielded or exited in
// the system call that returned r, with its registers from regs (the
// pt_regs frame on the kernel stack), and resumes the next task that can
// run (core's Next): its registers go into regs and its RAX is returned,
// for the trampoline to store there too. When no task can run it ends the
// run.
func schedule(regs *PtRegs, r int64) int64 {
	if !framed {
		if kernel.Live == 0 {
			exitRun(pti.ReasonExit, runStatus())
		}
		exitRun(pti.ReasonNoSwitch, 0)
	}
	prev := kernel.Cur
	t := &tasks[prev]
	t.regs = *regs
	t.regs.AX = uint64(r)
	for {
		next := kernel.Next()
		if next == core.NoTask {
			if kernel.Live == 0 {
				exitRun(pti.ReasonExit, runStatus())
			}
			exitRun(pti.ReasonDeadlock, 0)
		}
		if resume(next) {
			if next != prev {
				Switches++
			}
			*regs = tasks[next].regs
			return int64(tasks[next].regs.AX)
		}
	}
}

// resume makes task i the running one, in its process's address space,
// and retries the system call it blocked in; it reports false when the
// call blocked again.
func resume(i uint32) bool {
	retry := kernel.Resume(i)
	t := &tasks[i]
	if t.proc != loaded {
		loaded = t.proc
		if kcr3 := procs[t.proc].kcr3; kcr3 != 0 {
			switchCR3(kcr3)
			CR3Loads++
		}
	}
	if !retry {
		return true
	}
	r := dispatch(t.regs.OrigAX, t.regs.DI, t.regs.SI, t.regs.DX, t.regs.R10, t.regs.R8, t.regs.R9)
	if !kernel.Running() {
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
		t, c := &tasks[i], &kernel.Tasks[i]
		dst[n] = Task{Task: i, Proc: int(t.proc), State: State(c.State), RIP: t.regs.IP, Status: int64(int32(c.Status))}
		if c.State == core.TaskBlocked {
			dst[n].Wait, dst[n].Pipe = Wait(c.Wait), int(c.Obj)
		}
		n++
	}
	return n
}
