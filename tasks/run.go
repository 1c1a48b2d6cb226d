package tasks

import (
	"errors"

	"github.com/ptilab/ptilab/goos"
	"github.com/ptilab/ptilab/pti"
	"github.com/ptilab/ptilab/tasks/core"
)

// The run builder: a run's processes, pipes, files and tasks, made from
// ordinary Go before the run starts, and the run itself. Unlike the rest
// of the package it allocates and returns errors: it never runs in kernel
// mode (host/image's TestKernelCodeIsSafe knows it as goroutine-side).

// Run is a run of the tasks kernel under one configuration: its processes
// (pti processes with descriptor tables), pipes, files and tasks, built
// with the Add methods, then run by RunTasks; the counts stay readable
// after it. Get one from NewRun.
//
// Its method set is i386pae.Tasks' for the same concepts (the names and
// the arguments; the errors say the same things); the differences are the
// process type
// (*pti.Process), the program type (pti.Program), the width of stack
// pointers, arguments and counts (64 bits here, 32 there), a file's size
// (int64) and the 32-bit world's State, which has no equivalent here.
//
// The package's kernel state is one: NewRun forgets the previous run's.
type Run struct {
	s     pti.Switch     // the run's configuration, validated once (pti.Plan)
	procs []*pti.Process // by process number
	rings int            // rings of the run's pipes and socket pairs: the first rings of ringFrames
	// Task 0, which pti.Start runs first.
	first struct {
		prog pti.Program
		rsp  uint64
		args [6]uint64
	}
}

// PipeCapacity is the bytes a pipe of a run holds: Linux's default pipe
// size, 16 pages (core.RingSize).
const PipeCapacity = core.RingSize

// ringFrames are the pipes' buffers: kernel frames, made when first needed
// and reused by every run (pipe n of a run has ring n).
var ringFrames [][]byte

// NewRun forgets the tasks kernel's state and starts a run under s (from
// pti.Plan, which validated its configuration): with the linux and
// mitigated flavours the tasks switch by their pt_regs frames (the
// mitigated flavour's ibpb and rsb knobs act in the switch between
// processes, as s's mitigation plan says); with the minimal one a task
// that would block or yield ends the run (pti.ReasonNoSwitch).
func NewRun(s pti.Switch) *Run {
	mit := s.Mitigations()
	Reset(s.Config().Flavour.PtRegs())
	setSwitchMitigations(mit.IBPB, mit.RSB)
	return &Run{s: s}
}

// AddProcess adds process p with descriptors 0 to nfds-1, all closed, and
// returns its number; its kernel side under the run's configuration is
// built now if it was not yet.
func (r *Run) AddProcess(p *pti.Process, nfds int) (int, error) {
	kcr3, _, err := p.CR3(r.s.Config())
	if err != nil {
		return -1, err
	}
	i := NewProcess(kcr3, nfds)
	if i < 0 {
		return -1, errors.New("tasks: out of processes or descriptor slots")
	}
	for len(r.procs) <= i {
		r.procs = append(r.procs, nil)
	}
	r.procs[i] = p
	return i, nil
}

// AddTask adds a task of process proc running program p from the top of
// stack rsp with arguments args (RDI, RSI, RDX, R10, R8, R9), and returns
// its number. Task 0 is the one the run starts with; the others are
// queued and first run when a switch picks them.
func (r *Run) AddTask(proc int, p pti.Program, rsp uint64, args [6]uint64) (int, error) {
	i := NewTask(proc, pti.ProgramEntry(p), rsp, args)
	if i < 0 {
		return -1, errors.New("tasks: no room for the task")
	}
	if i == 0 {
		r.first.prog, r.first.rsp, r.first.args = p, rsp, args
	}
	return i, nil
}

// AddPipe adds a pipe whose read end is descriptor rfd of process rproc
// and whose write end is wfd of wproc, with a PipeCapacity ring, and
// returns its number.
func (r *Run) AddPipe(rproc, rfd, wproc, wfd int) (int, error) {
	ring, err := r.ring()
	if err != nil {
		return -1, err
	}
	p := NewPipe(rproc, rfd, wproc, wfd, ring)
	if p < 0 {
		return -1, errors.New("tasks: no room for the pipe or its descriptors")
	}
	r.rings++
	return p, nil
}

// AddSocketPair adds an AF_UNIX stream socket pair (socket.go) whose one
// endpoint is descriptor afd of process aproc and the other bfd of bproc,
// each way with a PipeCapacity ring, and returns the channel a reads (its
// bytes: PipeBytes); b reads the next one.
func (r *Run) AddSocketPair(aproc, afd, bproc, bfd int) (int, error) {
	ringA, err := r.ring()
	if err != nil {
		return -1, err
	}
	r.rings++
	ringB, err := r.ring()
	r.rings--
	if err != nil {
		return -1, err
	}
	c := NewSocketPair(aproc, afd, bproc, bfd, ringA, ringB)
	if c < 0 {
		return -1, errors.New("tasks: no room for the socket pair or its descriptors")
	}
	r.rings += 2
	return c, nil
}

// ring returns the run's next ring, made when first needed.
func (r *Run) ring() ([]byte, error) {
	if r.rings == len(ringFrames) {
		// A ring holds user data: sensitive frames (pti's asi modes).
		pa, ok := goos.AllocSensitiveFrames(PipeCapacity / 4096)
		if !ok {
			return nil, errors.New("tasks: out of memory for a ring")
		}
		ringFrames = append(ringFrames, goos.Frames(pa, PipeCapacity/4096))
	}
	return ringFrames[r.rings], nil
}

// ShareFD gives process to descriptor fd of process from, the same open
// pipe end or file (as fork does); false when fd is not open in from or
// taken in to.
func (r *Run) ShareFD(from, to, fd int) bool { return ShareFD(from, to, fd) }

// AddFile opens descriptor fd of process proc on a new kernel file of size
// bytes (for lseek) and returns the file's number.
func (r *Run) AddFile(proc, fd int, size int64) (int, error) {
	f := newFile(proc, fd, size)
	if f < 0 {
		return -1, errors.New("tasks: no room for the file or its descriptor")
	}
	return f, nil
}

// setSwitchMitigations sets the context switch's mitigations for the
// run (NewRun sets them from the run's knobs): with ibpbOn an IBPB, with
// rsbOn an RSB stuffing, at every switch to a task of another process
// (switchMM; switchRSB with the stuffing alone); with neither the switch
// loads CR3 and nothing more. The caller checks that the CPU has
// IA32_PRED_CMD (pti.Plan).
func setSwitchMitigations(ibpbOn, rsbOn bool) {
	ibpbOnSwitch, rsbOnSwitch = ibpbOn, rsbOn
	switch {
	case ibpbOn:
		switchCR3 = switchMM
	case rsbOn:
		switchCR3 = switchRSB
	default:
		switchCR3 = setCR3
	}
}

// RunTasks runs the tasks: it points the system calls Syscall answers
// (Calls) at Entry (EntryR11 where pti.Switch.RegsInR11), starts task 0 in ring 3 (pti.Start) and points them
// back at pti's built-in handlers when the run is over. The tasks kernel
// switches to the other tasks in their system calls. It returns when the
// last task has exited (pti.ReasonExit, with the first nonzero exit
// status), every remaining task is blocked (pti.ReasonDeadlock), a task
// would switch under the minimal flavour (pti.ReasonNoSwitch) or an
// exception ended the run.
func (r *Run) RunTasks() (pti.Result, error) {
	if ntasks == 0 {
		return pti.Result{}, errors.New("tasks: no tasks")
	}
	defer pti.ResetSyscalls()
	handler := Entry()
	if r.s.RegsInR11() {
		handler = EntryR11()
	}
	for _, nr := range Calls {
		if err := pti.SetSyscall(nr, handler); err != nil {
			return pti.Result{}, err
		}
	}
	return pti.Start(r.s, r.procs[tasks[0].proc], r.first.prog, r.first.rsp, r.first.args)
}

// EndTSC returns the TSC when the last task exited.
func (r *Run) EndTSC() uint64 { return EndTSC }

// PipeBytes returns the bytes written into and read from pipe n.
func (r *Run) PipeBytes(n int) (written, read uint64) { return PipeBytes(n) }

// Switches returns the switches from one task to another so far.
func (r *Run) Switches() uint64 { return Switches }

// CR3Loads returns the CR3 writes of the context switch so far (process
// changes).
func (r *Run) CR3Loads() uint64 { return CR3Loads }
