package bench

import (
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/goos"
	"github.com/ptilab/ptilab/pti"
	"github.com/ptilab/ptilab/tasks"
)

// World64 is the 64-bit world: long mode, package pti's address spaces
// and SYSCALL trampolines, package tasks' kernel.
var World64 World = world64{}

type world64 struct{}

// Where the 64-bit ping-pong's tasks keep their token buffers, in their
// data pages (ping's counts are at the start): ping's 3 bytes (the token,
// the reply, pong's mark) and pong's 2 (the token, its mark), on the last
// page.
const (
	pingTokenOff = 0xf000
	pongTokenOff = 0xf100
)

func (world64) Width() int        { return 64 }
func (world64) Title() string     { return "" }
func (world64) Setup() error      { return pti.Setup() }
func (world64) Entries() []Entry  { return []Entry{Syscall} }
func (world64) Copies() []Copy    { return nil }
func (world64) MaxDataPages() int { return pti.MaxDataPages }

func (world64) User() UserLayout {
	return UserLayout{
		Data: pti.UserData, StackTop: pti.UserStackTop, DataPages: pti.UserDataPages,
		Results: 0, MaxRepeats: pingTokenOff / 8, AddrDigits: 18,
	}
}

// config is c as package pti's configuration.
func (world64) config(c Config) pti.Config {
	return pti.Config{Mode: c.Mode, Flavour: c.Flavour, Global: c.Global}
}

// Supported: SYSCALL, the minimal and linux trampolines (one copy, no
// instrumented one), and the modes package pti has on this CPU.
func (w world64) Supported(c Config) error {
	switch {
	case c.Entry != Syscall:
		return fmt.Errorf("%v: the 64-bit world enters by SYSCALL only: %w", c, ErrUnsupported)
	case c.Copy != 0 || c.Stamps:
		return fmt.Errorf("%v: the 64-bit trampolines have one pt_regs copy and no instrumented variant: %w", c, ErrUnsupported)
	}
	return pti.Supported(w.config(c))
}

func (world64) TasksConfig(mode pti.Mode, _ Entry) Config {
	return Config{Mode: mode, Entry: Syscall, Flavour: pti.Linux}
}

// nr is the 64-bit number of op (Linux x86-64's, ptilab's for Work).
func (world64) nr(op Op) uint64 {
	return [...]uint64{Getppid: pti.SysGetppid, Work: pti.SysWork, Lseek: tasks.SysLseek}[op]
}

// Loop runs pti's timing program (or its empty loop) in the main
// process; Lseek's file is a kernel object of package tasks at the first
// free descriptor of a one-task run of its kernel, to which only lseek
// goes (the task's exit stays pti's).
func (w world64) Loop(c Config, call Call, n, r int, empty bool) (Loop, error) {
	arg := call.Arg
	if call.Op == Lseek {
		newRun(true)
		proc := tasks.NewProcess(0, 4) // one task: never switched to
		tasks.NewTask(proc, pti.ProgramEntry(pti.Syscalls), pti.UserStackTop, [6]uint64{})
		fd := tasks.OpenFile(proc, call.File)
		if err := pti.SetSyscall(tasks.SysLseek, tasks.Entry()); err != nil || fd < 0 {
			return Loop{}, fmt.Errorf("lseek's file: descriptor %d: %v", fd, err)
		}
		defer pti.ResetSyscalls()
		arg = uint64(fd)
	}
	prog := pti.Syscalls
	if empty {
		prog = pti.Empty
	}
	res, err := pti.Exec(w.config(c), prog, [6]uint64{uint64(n), uint64(r), pti.UserData, w.nr(call.Op), arg, rdtscpFlag()})
	if err != nil {
		return Loop{}, err
	}
	if res.Reason != pti.ReasonExit || res.Status != 0 {
		return Loop{}, fmt.Errorf("the ring-3 loop ended with %v", res)
	}
	return Loop{Cycles: results(w, pti.MainProcess(), r)}, nil
}

func (world64) NewProcess(pages int) (Process, error) { return pti.NewProcessData(pages) }
func (world64) MainProcess() Process                  { return pti.MainProcess() }

// exit64 is a pti run's end as an Exit.
func exit64(r pti.Result) Exit {
	return Exit{
		Exited: r.Reason == pti.ReasonExit, Status: r.Status, Deadlock: r.Reason == pti.ReasonDeadlock,
		Faulted: r.Reason == pti.ReasonFault, Vector: r.Vector, ErrorCode: r.ErrorCode, IP: r.RIP, CS: r.CS, CR2: r.CR2,
		Text: r.String(),
	}
}

func (w world64) Probe(c Config, addr uint64) (Exit, error) {
	res, err := pti.Exec(w.config(c), pti.Probe, [6]uint64{addr, pti.UserData + 8*1024})
	return exit64(res), err
}

// ProbeTargets: the image's kernel text, the entry area's data page and
// the task's own data.
func (world64) ProbeTargets() []ProbeTarget {
	return []ProbeTarget{
		{Name: "kernel text", Address: efi.Firmware.ImageBase + 0x1000, Kind: KernelOnly},
		{Name: "entry area", Address: pti.EntryData, Kind: EntryArea},
		{Name: "own page", Address: pti.UserData, Kind: OwnPage},
	}
}

// rings are the pipes' buffers: kernel frames, made when first needed and
// reused by every run (ringsUsed of them by the current one).
var (
	rings     [][]byte
	ringsUsed int
)

// newRun forgets the tasks kernel's state for a new run; ptRegs as
// tasks.Reset.
func newRun(ptRegs bool) {
	tasks.Reset(ptRegs)
	ringsUsed = 0
}

// run64 is a run of package tasks' kernel.
type run64 struct {
	c     pti.Config
	procs []*pti.Process
	first struct {
		proc  *pti.Process
		prog  pti.Program
		stack uint64
		args  [6]uint64
	}
}

// NewRun points the system calls of package tasks at its kernel (until
// Start returns) and forgets its state.
func (w world64) NewRun(c Config) (Run, error) {
	if err := w.Supported(c); err != nil {
		return nil, err
	}
	newRun(c.Flavour == pti.Linux)
	return &run64{c: w.config(c)}, nil
}

func (r *run64) AddProcess(p Process, nfds int) (int, error) {
	pp, ok := p.(*pti.Process)
	if !ok {
		return -1, errors.New("not a process of the 64-bit world")
	}
	kcr3, _, err := pp.CR3(r.c)
	if err != nil {
		return -1, err
	}
	i := tasks.NewProcess(kcr3, nfds)
	if i < 0 {
		return -1, errors.New("out of kernel processes or descriptors")
	}
	r.procs = append(r.procs, pp)
	return i, nil
}

// AddTask passes t's parameters as pti's programs take them: in RDI,
// RSI, RDX, R10, R8, R9 (user_amd64.s), the ping-pong's token buffers in
// their data pages.
func (r *run64) AddTask(proc int, stack uint64, t Task) (int, error) {
	if proc < 0 || proc >= len(r.procs) {
		return -1, fmt.Errorf("no process %d", proc)
	}
	d := r.procs[proc].DataPages()
	var prog pti.Program
	var args [6]uint64
	data := uint64(pti.UserData)
	switch t := t.(type) {
	case PingTask:
		prog = pti.Ping
		args = [6]uint64{uint64(t.N), uint64(t.R), data, uint64(t.Out) | uint64(t.In)<<32, data + pingTokenOff, rdtscpFlag()}
		d[pingTokenOff+2] = t.Mark
		d[pongTokenOff+1] = 0
	case PongTask:
		prog = pti.Pong
		args = [6]uint64{uint64(t.In), uint64(t.Out), data + pongTokenOff}
		d[pongTokenOff+1] = t.Mark
	case MsgStartTask:
		prog = pti.MsgStart
		args = [6]uint64{uint64(t.ReadyIn), uint64(t.WakeOut), uint64(t.Tasks), data + t.Buf, data + t.StartTSC}
	case MsgSenderTask:
		prog = pti.MsgSender
		args = [6]uint64{uint64(t.FirstOut), uint64(t.Receivers), uint64(t.Loops), data + t.Msg, uint64(t.Size), uint64(t.ReadyOut) | uint64(t.WakeIn)<<32}
	case MsgReceiverTask:
		prog = pti.MsgReceiver
		args = [6]uint64{uint64(t.In), uint64(t.Messages), uint64(t.Size), data + t.Buf, data + t.Results, uint64(t.ReadyOut) | uint64(t.WakeIn)<<32}
	default:
		return -1, errNoProgram(t)
	}
	i := tasks.NewTask(proc, pti.ProgramEntry(prog), stack, args)
	if i < 0 {
		return -1, errors.New("out of kernel tasks")
	}
	if i == 0 {
		r.first.proc, r.first.prog, r.first.stack, r.first.args = r.procs[proc], prog, stack, args
	}
	return i, nil
}

// AddPipe makes a pipe with a PipeCapacity ring.
func (r *run64) AddPipe(rproc, rfd, wproc, wfd int) (int, error) {
	if ringsUsed == len(rings) {
		pa, ok := goos.AllocFrames(PipeCapacity/4096, 4096)
		if !ok {
			return -1, errors.New("out of memory for a pipe's ring")
		}
		rings = append(rings, goos.Frames(pa, PipeCapacity/4096))
	}
	p := tasks.NewPipe(rproc, rfd, wproc, wfd, rings[ringsUsed])
	if p < 0 {
		return -1, errors.New("out of kernel pipes or descriptors")
	}
	ringsUsed++
	return p, nil
}

func (r *run64) ShareFD(from, to, fd int) bool { return tasks.ShareFD(from, to, fd) }

func (r *run64) AddFile(proc, fd int, size int64) error {
	if got := tasks.OpenFile(proc, size); got != fd {
		return fmt.Errorf("the file opened at descriptor %d, not %d", got, fd)
	}
	return nil
}

func (r *run64) Start() (Exit, error) {
	if r.first.proc == nil {
		return Exit{}, errors.New("no tasks")
	}
	for _, nr := range tasks.Calls {
		if err := pti.SetSyscall(nr, tasks.Entry()); err != nil {
			pti.ResetSyscalls()
			return Exit{}, err
		}
	}
	defer pti.ResetSyscalls()
	end, err := pti.Start(r.c, r.first.proc, r.first.prog, r.first.stack, r.first.args)
	return exit64(end), err
}

func (r *run64) PipeBytes(n int) (written, read uint64) { return tasks.PipeBytes(n) }

func (r *run64) Counts() (switches, cr3Loads, endTSC uint64) {
	return tasks.Switches, tasks.CR3Loads, tasks.EndTSC
}

func (r *run64) Tasks() []TaskState {
	ts := make([]tasks.Task, tasks.Count())
	out := make([]TaskState, 0, len(ts))
	for _, t := range ts[:tasks.Tasks(ts)] {
		s := TaskState{Task: t.Task, Proc: t.Proc, State: t.State.String(), IP: t.RIP, Status: t.Status}
		if t.State.String() == "blocked" {
			s.Wait, s.Pipe = t.Wait.String(), t.Pipe
		}
		out = append(out, s)
	}
	return out
}
