package bench

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/pti"
)

// The benchmark engine: a benchmark is written once against World and
// runs in every world that supports it. A world is a kernel that ring-3
// tasks run under, with its own entries, trampolines, ring-3 programs and
// tasks kernel: the 64-bit one (packages pti and tasks, world64.go) and
// the 32-bit PAE one (package i386pae, world32.go).

// World is a kernel the benchmarks' ring-3 tasks run under.
type World interface {
	// Width is 64 or 32: the records' "width".
	Width() int
	// Title heads the world's tables ("" for the 64-bit world, whose
	// tables were first).
	Title() string
	// Setup makes the world ready; it runs before the world's first
	// benchmark, and again is a no-op.
	Setup() error
	// Entries are the ways into the kernel, the first the default (the
	// one the work curve and sched-messaging use): the model's entries of
	// the world (experiment.Entries).
	Entries() []experiment.Entry
	// Has reports whether this CPU has what n names (an entry's or a
	// knob's row's Needs).
	Has(n experiment.Need) bool
	// Copies are the pt_regs copy methods of the linux trampoline of the
	// default entry, the first the default; none where there is one way.
	Copies() []experiment.Copy
	// Plan validates c once for the world and this CPU and returns what
	// the world switches for it (pti.Switch, i386pae.Switch), which its
	// runs (Loop, NewRun, Probe) take without checking again; otherwise
	// an error wrapping ErrUnsupported or ErrNotInPAE that says why.
	Plan(c experiment.Config) (Switch, error)
	// TasksConfig is the configuration runs of the world's tasks kernel
	// use under mode with entry e: the linux trampoline, whose pt_regs
	// frame the context switch needs.
	TasksConfig(mode experiment.Mode, e experiment.Entry) experiment.Config
	// Loop runs the timing loop in ring 3 under s: r repeats of n calls
	// of call (none with empty: the loop's own cost), and returns the r
	// counts and what the loop and the trampoline measured.
	Loop(s Switch, call Call, n, r int, empty bool) (Loop, error)
	// NewProcess makes a process with dataPages data pages (at most
	// UserLayout.MaxDataPages) for tasks runs.
	NewProcess(dataPages int) (Process, error)
	// MainProcess is the process of the single-task runs (Loop, Probe).
	MainProcess() Process
	// NewRun starts a run of the tasks kernel under s (planned from
	// TasksConfig).
	NewRun(s Switch) (Run, error)
	// ProbeEntry is the entry the world's probe program calls by (its
	// exit): the configurations Probe runs are planned with it.
	ProbeEntry() experiment.Entry
	// Probe reads addr from ring 3 under s (planned with ProbeEntry) and
	// says how the read ended.
	Probe(s Switch, addr uint64) (Exit, error)
	// User gives the places of the world's task address space.
	User() UserLayout
	// Place copies the world's ring-3 programs, their timed loops
	// included, offset bytes further into the code pages every process
	// shares than Setup put them (a loop offset,
	// experiment.CheckLoopOffset; 0: Setup's places), for the runs that
	// follow: pti.PlacePrograms, i386pae.PlaceUserText.
	Place(offset int) error
}

// UserLayout is where a world's tasks keep their data and stack, and
// what its programs need there.
type UserLayout struct {
	Data     uint64 // the data pages' address
	StackTop uint64 // the top of the stack pages
	// DataPages is the data pages of the world's processes by default,
	// MaxDataPages the most a process can have.
	DataPages, MaxDataPages int
	// Results is the offset in the data pages of the R counts the timing
	// programs (the loop and ping) store.
	Results uint64
	// MaxRepeats is the most counts there is room for.
	MaxRepeats int
	// ThreadStack is the bytes of stack a thread of sched-messaging needs
	// in its process's data pages, where its threads share one process (0:
	// the programs use no stack).
	ThreadStack uint64
	// AddrDigits is the width of an address in the world's tables.
	AddrDigits int
}

// ProbeTarget is an address the isolation probe reads from ring 3, and
// what the read must do.
type ProbeTarget struct {
	Name    string
	Address uint64
	Kind    TargetKind
}

// TargetKind says how a probe target is mapped, and so what a ring-3
// read of it does (Mapped).
type TargetKind uint8

const (
	// KernelOnly: the kernel's own data or text, nonsensitive, mapped
	// supervisor-only in the kernel's tables and in the user tables that
	// expose the kernel, whole (off, lass) or but the sensitive blocks
	// (asi): a read faults with P=1 (protection) there and P=0 (not
	// mapped) under the other isolated modes.
	KernelOnly TargetKind = iota
	// EntryArea: mapped supervisor-only in both tables: a read faults
	// with P=1 in every mode.
	EntryArea
	// OwnPage: the task's own data: the read succeeds.
	OwnPage
	// DeferredArea: the deferred modes' pages of the entry area
	// (pti.DeferredAreas), mapped supervisor-only in both tables of those
	// modes and in no table of the others: a read faults with P=1 under a
	// deferred mode and P=0 under the others, off included.
	DeferredArea
	// Sensitive: user data that is not the task's, in ASI's sensitive
	// blocks (goos.AllocSensitiveFrames), reached by the kernel's direct
	// map: mapped supervisor-only where the user table is the whole
	// kernel's (off, lass: P=1), in no isolated mode's user table, asi's
	// nonsensitive one included (P=0).
	Sensitive
)

// Mapped reports whether the user table of mode m maps a target of kind
// k, from what the mode's row says the table exposes
// (experiment.ModeRow.Exposes): a ring-3 read then faults with P=1, or
// reads (OwnPage); else it faults with P=0.
func (k TargetKind) Mapped(m experiment.Mode) bool {
	e := m.Row().Exposes
	switch k {
	case KernelOnly:
		return e&(experiment.ExposesKernel|experiment.ExposesNonsensitiveKernel) != 0
	case Sensitive:
		return e&experiment.ExposesKernel != 0
	case DeferredArea:
		return e&experiment.ExposesDispatch != 0
	}
	return true
}

// Switch is a configuration a world validated once (World.Plan): the
// world's own immutable description of what to switch for it
// (pti.Switch, i386pae.Switch), which only that world's runs take.
type Switch interface {
	// Config is the configuration the switch was planned for.
	Config() experiment.Config
}

// switchOf is s as a world's own switch type S (pti.Switch,
// i386pae.Switch): s must come from that world's Plan.
func switchOf[S Switch](s Switch, world string) (S, error) {
	ws, ok := s.(S)
	if !ok {
		return ws, fmt.Errorf("%T is not a switch of the %s world", s, world)
	}
	return ws, nil
}

// Errors of configurations a world cannot run: ErrUnsupported for this
// CPU, ErrNotInPAE for PAE paging.
var (
	ErrUnsupported = pti.ErrUnsupported
	ErrNotInPAE    = experiment.ErrNotInPAE
)

// config is the configuration of mode, entry e and flavour f in e's
// world, without global pages: the mitigated flavour's copy method, where
// the entry has a choice, is direct, the only one its 32-bit trampoline
// has.
func ConfigOf(mode experiment.Mode, e experiment.Entry, f experiment.Flavour) experiment.Config {
	c := experiment.Config{World: e.Row().World, Mode: mode, Entry: e, Flavour: f}
	if f == experiment.Mitigated && e.Row().Copies {
		c.Copy = experiment.Direct
	}
	return c
}

// Op is a system call the timing loop makes.
type Op uint8

const (
	// Getppid is the null call: it returns 1.
	Getppid Op = iota
	// Work is ptilab's call that spends Arg TSC cycles in the kernel and
	// returns 0.
	Work
	// Lseek is lseek(fd, 0, SEEK_SET) on a kernel file of the tasks
	// kernel (Call.File bytes, its descriptor given by the world): 0.
	Lseek
)

// nr is op's system-call number in world w: Linux's (x86-64 or i386),
// ptilab's for Work.
func (op Op) nr(w experiment.Width) uint64 {
	if w == experiment.W32 {
		return [...]uint64{Getppid: linuxabi.SYS_ia32_getppid, Work: linuxabi.SYS_ia32_ptilab_work, Lseek: linuxabi.SYS_ia32_lseek}[op]
	}
	return [...]uint64{Getppid: linuxabi.SYS_getppid, Work: linuxabi.SYS_ptilab_work, Lseek: linuxabi.SYS_lseek}[op]
}

// Call is the system call of a timing loop.
type Call struct {
	Op   Op
	Arg  uint64 // Work's cycles
	File int64  // Lseek: the file's size in bytes
}

// want is what the call returns when it works.
func (c Call) want() int64 {
	if c.Op == Getppid {
		return 1
	}
	return 0
}

// Loop is what a timing loop measured.
type Loop struct {
	Cycles []uint64 // the r counts
	// Stamps are the instrumented trampoline's phases over every call of
	// the run (with experiment.Config.Stamps; zero otherwise).
	Stamps Stamps
	// Value is the last call's result, when HasValue (the world's loop
	// keeps it).
	Value    int64
	HasValue bool
	// Samples are the counters read around the repeats (repeatDeltas): a
	// sample before each repeat and one after the last, or one before and
	// one after the loop.
	Samples []cpustate.Sample
	// ASITransitions are the asi modes' switches to the sensitive table
	// over the program, warm-up included (pti.Result); 0 elsewhere.
	ASITransitions uint64
}

// Exit is how a ring-3 run ended.
type Exit struct {
	Exited bool   // the task (or the last task) exited, with Status
	Status uint64 // its exit status (the first nonzero of a tasks run)
	// Deadlock: every remaining task is blocked.
	Deadlock bool
	// Faulted: a CPU exception ended the run.
	Faulted                        bool
	Vector, ErrorCode, IP, CS, CR2 uint64
	// Stamps are the instrumented trampoline's phases over the run's
	// system calls (with experiment.Config.Stamps; zero otherwise).
	Stamps Stamps
	Text   string // the world's own description
	// ASITransitions are the asi modes' switches to the sensitive table
	// over the run (pti.Result); 0 elsewhere.
	ASITransitions uint64
}

// FromUser reports whether the exception came from ring 3.
func (e Exit) FromUser() bool { return e.CS&3 == 3 }

// ok reports whether the run exited with status 0.
func (e Exit) OK() bool { return e.Exited && e.Status == 0 }

func (e Exit) String() string { return e.Text }

// Process is a process of a world: its data pages, as the kernel sees
// them.
type Process interface {
	DataPages() []byte
}

// Run builds and runs a run of a world's tasks kernel: processes with
// descriptor tables, pipes, files, and tasks running the world's ring-3
// programs. Task 0 starts in ring 3; the kernel switches to the others in
// their system calls.
type Run interface {
	// AddProcess adds process p with descriptors 0 to nfds-1, all closed,
	// and returns its number.
	AddProcess(p Process, nfds int) (int, error)
	// AddTask adds a task of process proc running t's program with its
	// stack at the top of stack, and returns its number.
	AddTask(proc int, stack uint64, t Task) (int, error)
	// AddPipe adds a pipe from descriptor wfd of process wproc to rfd of
	// rproc and returns its number.
	AddPipe(rproc, rfd, wproc, wfd int) (int, error)
	// AddSocketPair adds an AF_UNIX stream socket pair, one endpoint at
	// descriptor afd of process aproc and the other at bfd of bproc, and
	// returns the channel a reads, whose bytes PipeBytes gives.
	AddSocketPair(aproc, afd, bproc, bfd int) (int, error)
	// ShareFD gives process to descriptor fd of process from (as fork).
	ShareFD(from, to, fd int) bool
	// AddFile opens descriptor fd of process proc on a kernel file of size
	// bytes.
	AddFile(proc, fd int, size int64) error
	// Start runs the tasks and returns how the run ended.
	Start() (Exit, error)
	// PipeBytes returns the bytes written into and read from pipe n.
	PipeBytes(n int) (written, read uint64)
	// Counts returns what the kernel counted: switches from one task to
	// another, CR3 loads by the context switch, the TSC at the last exit.
	Counts() (switches, cr3Loads, endTSC uint64)
	// Tasks describes the run's tasks, for reports.
	Tasks() []TaskState
	// Samples are the counters read around the timing task's repeats in
	// the last Start, as Loop.Samples.
	Samples() []cpustate.Sample
}

// TaskState describes a task of a run, for reports.
type TaskState struct {
	Task, Proc int
	State      string // "runnable", "running", "blocked", "exited"
	Wait       string // a blocked task's: "read" or "write"
	Pipe       int    // the pipe a blocked task waits on
	IP         uint64 // where it resumes
	Status     int64  // an exited task's
}

func (t TaskState) String() string {
	switch t.State {
	case "blocked":
		return fmt.Sprintf("task %d (process %d) blocked in %s on pipe %d, RIP %#x", t.Task, t.Proc, t.Wait, t.Pipe, t.IP)
	case "exited":
		return fmt.Sprintf("task %d (process %d) exited with status %d", t.Task, t.Proc, t.Status)
	}
	return fmt.Sprintf("task %d (process %d) %s, RIP %#x", t.Task, t.Proc, t.State, t.IP)
}

// Task is a ring-3 program with its parameters, as a task of a run; each
// world passes them as its program's ABI says.
type Task interface{ program() string }

// PingTask is the timing side of the ping-pong: R repeats of N round
// trips of a 1-byte token out through descriptor Out and back through In;
// each reply must be the token plus Mark. Its counts go where the world's
// timing programs store theirs (UserLayout.Results).
type PingTask struct {
	N, R    int
	Out, In int
	Mark    byte
}

// PongTask replies to ping: it reads a byte from In, adds Mark, which it
// keeps in its own data page, and writes it to Out, until its input ends.
type PongTask struct {
	In, Out int
	Mark    byte
}

// MsgStartTask gives sched-messaging's start signal: it reads a byte from
// every one of Tasks tasks through ReadyIn (into Buf, an offset in its
// data pages), stores the TSC at StartTSC (an offset) and writes a byte
// for each task into WakeOut.
type MsgStartTask struct {
	ReadyIn, WakeOut, Tasks int
	Buf, StartTSC           uint64
}

// MsgSenderTask is a sched-messaging sender: after the start protocol
// (a byte to ReadyOut, one from WakeIn) it writes its message (Size bytes
// at Msg, an offset in its data pages) Loops times to each of Receivers
// descriptors from FirstOut up, writing the receiver's index << 24 | the
// loop in the message's first 4 bytes.
type MsgSenderTask struct {
	FirstOut, Receivers, Loops int
	Msg                        uint64
	Size                       int
	ReadyOut, WakeIn           int
}

// MsgReceiverTask is a sched-messaging receiver: after the start protocol
// it reads Messages messages of Size bytes from In into Buf and sums each
// one's quadwords; it stores the count and the sum at Results (offsets in
// its data pages).
type MsgReceiverTask struct {
	In, Messages, Size int
	Buf, Results       uint64
	ReadyOut, WakeIn   int
}

func (PingTask) program() string        { return "ping" }
func (PongTask) program() string        { return "pong" }
func (MsgStartTask) program() string    { return "msg-start" }
func (MsgSenderTask) program() string   { return "msg-sender" }
func (MsgReceiverTask) program() string { return "msg-receiver" }

// ReadCounts reads the r counts a timing program of w stored in process p's
// data pages.
func ReadCounts(w World, p Process, r int) []uint64 {
	d := p.DataPages()[w.User().Results:]
	out := make([]uint64, r)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(d[8*i:])
	}
	return out
}

// errNoProgram is a world's answer to a task whose program it lacks.
func errNoProgram(t Task) error { return fmt.Errorf("no program %q in this world", t.program()) }

// NotInWorld reports whether c's world cannot have c at all (as PAE
// paging cannot have PCIDs), whatever the CPU: the model says so
// (experiment.Config.Check).
func NotInWorld(c experiment.Config) bool { return errors.Is(c.Check(), ErrNotInPAE) }

// runState is what a world's run keeps besides its kernel: its processes
// by number and the samples its last Start read.
type runState[P Process] struct {
	procs   procs[P]
	samples []cpustate.Sample
}

// Samples are the samples of the run's last Start.
func (r *runState[P]) Samples() []cpustate.Sample { return r.samples }

// procs are a run's processes by number, of a world's process type P.
type procs[P Process] []P

// add adds p, which must be a P, through add (a world's AddProcess with
// nfds descriptors), and keeps it under its number.
func (ps *procs[P]) add(p Process, nfds int, add func(P, int) (int, error)) (P, int, error) {
	pp, ok := p.(P)
	if !ok {
		return pp, -1, fmt.Errorf("%T is not a process of this world", p)
	}
	i, err := add(pp, nfds)
	if err != nil {
		return pp, -1, err
	}
	for len(*ps) <= i {
		var none P
		*ps = append(*ps, none)
	}
	(*ps)[i] = pp
	return pp, i, nil
}

// data returns the data pages of process i.
func (ps procs[P]) data(i int) ([]byte, error) {
	if i < 0 || i >= len(ps) {
		return nil, fmt.Errorf("no process %d", i)
	}
	return ps[i].DataPages(), nil
}
