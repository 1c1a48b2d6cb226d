package bench

import (
	"fmt"
	"slices"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/experiment"
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

func (world64) Width() int                  { return 64 }
func (world64) Title() string               { return "" }
func (world64) Setup() error                { return pti.Setup() }
func (world64) Entries() []experiment.Entry { return experiment.Entries(experiment.W64) }
func (world64) Copies() []experiment.Copy   { return nil }
func (world64) Place(offset int) error      { return pti.PlacePrograms(offset) }

func (world64) User() UserLayout {
	return UserLayout{
		Data: pti.UserData, StackTop: pti.UserStackTop, DataPages: pti.UserDataPages, MaxDataPages: pti.MaxDataPages,
		Results: 0, MaxRepeats: pingTokenOff / 8, AddrDigits: 18,
	}
}

// RDTSCPFlag is the 64-bit timing programs' argument choosing how they
// end a timed region: 0 with RDTSCP where the CPU has it, 1 with LFENCE;
// RDTSC; LFENCE.
func RDTSCPFlag() uint64 {
	if amd64.Features.RDTSCP {
		return 0
	}
	return 1
}

// Plan: package pti's plan of c (pti.Plan: SYSCALL, the trampolines of
// the model's rows, what this CPU has).
func (world64) Plan(c experiment.Config) (Switch, error) { return pti.Plan(c) }

func (world64) TasksConfig(mode experiment.Mode, e experiment.Entry) experiment.Config {
	return ConfigOf(mode, e, experiment.Linux)
}

// Has: the CPU has what n names (pti.CPUHas).
func (world64) Has(n experiment.Need) bool { return pti.CPUHas(n) }

// Loop runs pti's timing program (or its empty loop) in the main
// process; Lseek's file is a kernel object of package tasks at
// descriptor lseekFD, the loop then running alone under its kernel.
func (w world64) Loop(sw Switch, call Call, n, r int, empty bool) (Loop, error) {
	s, err := switchOf[pti.Switch](sw, "64-bit")
	if err != nil {
		return Loop{}, err
	}
	prog := pti.Syscalls
	if empty {
		prog = pti.Empty
	}
	args := [6]uint64{uint64(n), uint64(r), pti.UserData, call.Op.nr(experiment.W64), call.Arg, RDTSCPFlag()}
	var res pti.Result
	if call.Op == Lseek {
		args[4] = lseekFD
		res, err = w.alone(s, prog, args, call.File)
	} else {
		res, err = pti.Exec(s, prog, args)
	}
	if err != nil {
		return Loop{}, err
	}
	if res.Reason != pti.ReasonExit || res.Status != 0 {
		return Loop{}, fmt.Errorf("the ring-3 loop ended with %v", res)
	}
	return Loop{Cycles: ReadCounts(w, pti.MainProcess(), r), Samples: slices.Clone(pti.Samples()), ASITransitions: res.ASITransitions}, nil
}

// lseekFD is the descriptor of lseek's file: the first after the
// standard streams.
const lseekFD = 3

// alone runs program prog of the main process as the one task of a run of
// the tasks kernel under s, with descriptor lseekFD open on a kernel file
// of size bytes.
func (w world64) alone(s pti.Switch, prog pti.Program, args [6]uint64, size int64) (pti.Result, error) {
	run := tasks.NewRun(s)
	proc, err := run.AddProcess(pti.MainProcess(), lseekFD+1)
	if err != nil {
		return pti.Result{}, err
	}
	if _, err := run.AddFile(proc, lseekFD, size); err != nil {
		return pti.Result{}, err
	}
	if _, err := run.AddTask(proc, prog, pti.UserStackTop, args); err != nil {
		return pti.Result{}, err
	}
	return run.RunTasks()
}

func (world64) NewProcess(pages int) (Process, error) { return pti.NewProcessData(pages) }
func (world64) MainProcess() Process                  { return pti.MainProcess() }

// exit64 is a pti run's end as an Exit.
func exit64(r pti.Result) Exit {
	return Exit{
		Exited: r.Reason == pti.ReasonExit, Status: r.Status, Deadlock: r.Reason == pti.ReasonDeadlock,
		Faulted: r.Reason == pti.ReasonFault, Vector: r.Vector, ErrorCode: r.ErrorCode, IP: r.RIP, CS: r.CS, CR2: r.CR2,
		Text: r.String(), ASITransitions: r.ASITransitions,
	}
}

// ProbeEntry: the 64-bit probe program calls by SYSCALL.
func (world64) ProbeEntry() experiment.Entry { return experiment.Syscall }

func (w world64) Probe(sw Switch, addr uint64) (Exit, error) {
	s, err := switchOf[pti.Switch](sw, "64-bit")
	if err != nil {
		return Exit{}, err
	}
	res, err := pti.Exec(s, pti.Probe, [6]uint64{addr, pti.UserData + 8*1024})
	return exit64(res), err
}

// ProbeTargets: the image's kernel text, the entry area's data page, the
// task's own data, the deferred modes' trampoline stack and the leak
// oracle's sensitive secret (a frame of the sensitive blocks).
func (world64) ProbeTargets() []ProbeTarget {
	return []ProbeTarget{
		{Name: "kernel text", Address: efi.Firmware.ImageBase + 0x1000, Kind: KernelOnly},
		{Name: "entry area", Address: pti.EntryData, Kind: EntryArea},
		{Name: "own page", Address: pti.UserData, Kind: OwnPage},
		{Name: "defer area", Address: pti.EntryTrampStack, Kind: DeferredArea},
		{Name: "sensitive page", Address: pti.SensitiveSecret.Addr(), Kind: Sensitive},
	}
}

// Exposure is what mode's user table maps beyond on's: pti.Exposure.
func (world64) Exposure(mode experiment.Mode) []pti.Area { return pti.Exposure(mode) }

// run64 is a run of package tasks' kernel.
type run64 struct {
	*tasks.Run
	runState[*pti.Process]
}

// NewRun starts a run of package tasks' kernel under s.
func (w world64) NewRun(sw Switch) (Run, error) {
	s, err := switchOf[pti.Switch](sw, "64-bit")
	if err != nil {
		return nil, err
	}
	return &run64{Run: tasks.NewRun(s)}, nil
}

func (r *run64) AddProcess(p Process, nfds int) (int, error) {
	_, i, err := r.procs.add(p, nfds, r.Run.AddProcess)
	return i, err
}

// AddTask passes t's parameters as pti's programs take them: in RDI,
// RSI, RDX, R10, R8, R9 (user_amd64.s), the ping-pong's token buffers in
// their data pages.
func (r *run64) AddTask(proc int, stack uint64, t Task) (int, error) {
	d, err := r.procs.data(proc)
	if err != nil {
		return -1, err
	}
	var prog pti.Program
	var args [6]uint64
	data := uint64(pti.UserData)
	switch t := t.(type) {
	case PingTask:
		prog = pti.Ping
		args = [6]uint64{uint64(t.N), uint64(t.R), data, uint64(t.Out) | uint64(t.In)<<32, data + pingTokenOff, RDTSCPFlag()}
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
	return r.Run.AddTask(proc, prog, stack, args)
}

func (r *run64) AddFile(proc, fd int, size int64) error {
	_, err := r.Run.AddFile(proc, fd, size)
	return err
}

func (r *run64) Start() (Exit, error) {
	end, err := r.RunTasks()
	r.samples = slices.Clone(pti.Samples())
	return exit64(end), err
}

// Samples are those of the ping task's sample calls (pti.Samples).

func (r *run64) Counts() (switches, cr3Loads, endTSC uint64) {
	return r.Switches(), r.CR3Loads(), r.EndTSC()
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
