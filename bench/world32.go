package bench

import (
	"encoding/binary"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/i386pae"
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/pti"
	"github.com/ptilab/ptilab/tasks/core"
)

// World32 is the 32-bit PAE world: the CPU leaves long mode for package
// i386pae's 32-bit kernel, entered by SYSENTER or INT 0x80.
var World32 World = world32{}

type world32 struct{}

// threadStack32 is each thread's slice of the stack in threads mode,
// where the tasks share one process: the 32-bit programs keep their state
// and the vsyscall routine's saves there.
const threadStack32 = 128

func (world32) Width() int                  { return 32 }
func (world32) Title() string               { return "32-bit PAE kernel: " }
func (world32) Setup() error                { return i386pae.Setup() }
func (world32) Entries() []experiment.Entry { return experiment.Entries(experiment.W32) }

// Has: the CPU has what n names (pti.CPUHas: one CPU for both worlds).
func (world32) Has(n experiment.Need) bool { return pti.CPUHas(n) }
func (world32) Copies() []experiment.Copy  { return experiment.Copies() }
func (world32) Place(offset int) error     { return i386pae.PlaceUserText(offset) }

func (world32) User() UserLayout {
	return UserLayout{
		Data: layout.UserData, StackTop: layout.UserStackTop, DataPages: layout.UserDataPages, MaxDataPages: i386pae.MaxDataPages,
		Results: layout.ParamResults, MaxRepeats: layout.MaxRepeats, ThreadStack: threadStack32, AddrDigits: 12,
	}
}

// Plan: package i386pae's plan of c (i386pae.Plan: SYSENTER or INT
// 0x80, the trampolines of the model's rows, what this CPU has).
func (world32) Plan(c experiment.Config) (Switch, error) { return i386pae.Plan(c) }

// TasksConfig: the linux trampolines, SYSENTER with Linux 4.19's entry
// (no copy in, the trimmed exit).
func (world32) TasksConfig(mode experiment.Mode, e experiment.Entry) experiment.Config {
	c := ConfigOf(mode, e, experiment.Linux)
	if e.Row().Copies {
		c.Copy = experiment.Direct
	}
	return c
}

// Loop runs the 32-bit timing program in the main process; Lseek's file
// is a kernel file of the 32-bit tasks kernel at i386pae.FileFD. The
// program keeps the last call's result.
func (w world32) Loop(sw Switch, call Call, n, r int, empty bool) (Loop, error) {
	s, err := switchOf[i386pae.Switch](sw, "32-bit")
	if err != nil {
		return Loop{}, err
	}
	arg := uint32(min(call.Arg, 1<<32-1))
	if call.Op == Lseek {
		arg = i386pae.FileFD
	}
	// The sample call around every repeat (in the empty loop too, by the
	// calls' entry: the PMU cross-check subtracts its counts), but in the
	// instrumented runs, whose phase sums would count it: those are
	// sampled around the whole loop.
	perRepeat := counters != 0 && !s.Config().Stamps
	before := ReadSample()
	res, err := i386pae.Run(s, i386pae.Syscalls, i386pae.Params{
		N: uint32(n), R: uint32(r), Nr: uint32(call.Op.nr(experiment.W32)), Arg: arg, Empty: empty,
		NoRDTSCP: !amd64.Features.RDTSCP, File: uint32(call.File), Sample: perRepeat,
	})
	if err != nil {
		return Loop{}, err
	}
	if res.Reason != layout.ReasonExit || res.Status != 0 {
		return Loop{}, fmt.Errorf("the 32-bit ring-3 loop ended with %v", res)
	}
	samples := []cpustate.Sample{before, ReadSample()}
	if perRepeat {
		samples = i386pae.Samples()
	}
	return Loop{Cycles: res.Cycles, Stamps: res.Stamps, Value: int64(int32(res.Value)), HasValue: true, Samples: samples}, nil
}

func (world32) NewProcess(pages int) (Process, error) { return i386pae.NewProcessData(pages) }
func (world32) MainProcess() Process                  { return i386pae.MainProcess() }

// exit32 is a 32-bit run's end as an Exit.
func exit32(r i386pae.Result) Exit {
	return Exit{
		Exited: r.Reason == layout.ReasonExit, Status: uint64(r.Status), Deadlock: r.Reason == layout.ReasonDeadlock,
		Faulted: r.Reason == layout.ReasonFault, Vector: uint64(r.Vector), ErrorCode: uint64(r.ErrorCode),
		IP: uint64(r.EIP), CS: uint64(r.CS), CR2: uint64(r.CR2), Stamps: r.Stamps, Text: r.String(),
	}
}

// ProbeEntry: the 32-bit probe program exits by INT 0x80.
func (world32) ProbeEntry() experiment.Entry { return experiment.Int80 }

// Probe reads addr by the 32-bit probe program, under s, planned with
// ProbeEntry.
func (w world32) Probe(sw Switch, addr uint64) (Exit, error) {
	s, err := switchOf[i386pae.Switch](sw, "32-bit")
	if err != nil {
		return Exit{}, err
	}
	if c := s.Config(); c.Entry != w.ProbeEntry() {
		return Exit{}, fmt.Errorf("%v: the 32-bit probe program calls by %v", c, w.ProbeEntry())
	}
	res, err := i386pae.Run(s, i386pae.Probe, i386pae.Params{Addr: uint32(addr)})
	return exit32(res), err
}

// ProbeTargets: the 32-bit kernel's stack (kernel only), its entry area
// and the task's own data.
func (world32) ProbeTargets() []ProbeTarget {
	return []ProbeTarget{
		{Name: "kernel stack", Address: layout.KernelStack, Kind: KernelOnly},
		{Name: "entry area", Address: layout.CPU, Kind: EntryArea},
		{Name: "own page", Address: layout.UserData + 2048, Kind: OwnPage},
	}
}

// run32 is a run of the 32-bit tasks kernel.
type run32 struct {
	ts *i386pae.Tasks
	s  i386pae.Switch
	runState[*i386pae.Process]
}

func (w world32) NewRun(sw Switch) (Run, error) {
	s, err := switchOf[i386pae.Switch](sw, "32-bit")
	if err != nil {
		return nil, err
	}
	ts, err := i386pae.NewTasks(s)
	if err != nil {
		return nil, err
	}
	return &run32{ts: ts, s: s}, nil
}

// AddProcess adds p, its first data page cleared but for the entry its
// programs make their calls by (layout.ParamEntry), how they end a
// timed region (ParamNoRDTSCP) and whether they make the sample call
// (ParamSample).
func (r *run32) AddProcess(p Process, nfds int) (int, error) {
	pp, i, err := r.procs.add(p, nfds, r.ts.AddProcess)
	if err != nil {
		return -1, err
	}
	d := pp.DataPages()[:4096]
	clear(d)
	put32(d, layout.ParamEntry, r.s.CallEntry())
	if !amd64.Features.RDTSCP {
		put32(d, layout.ParamNoRDTSCP, 1)
	}
	if counters != 0 {
		put32(d, layout.ParamSample, i386pae.SampleBy(r.s.CallEntry())) // the ping task's sample calls (the ping-pong never runs instrumented)
	}
	return i, nil
}

func put32(d []byte, off int, v uint32) { binary.LittleEndian.PutUint32(d[off:], v) }

// AddTask passes t's parameters as the 32-bit programs take them: the
// ping-pong's in the task's data page (layout.Param*), the messaging
// programs' in EBX, ECX, EDX, ESI, EDI, EBP (user_386.s).
func (r *run32) AddTask(proc int, stack uint64, t Task) (int, error) {
	d, err := r.procs.data(proc)
	if err != nil {
		return -1, err
	}
	data := uint32(layout.UserData)
	var prog i386pae.Program
	var args [6]uint32
	switch t := t.(type) {
	case PingTask:
		prog = i386pae.Ping
		put32(d, layout.ParamN, uint32(t.N))
		put32(d, layout.ParamR, uint32(t.R))
		put32(d, layout.ParamPingOut, uint32(t.Out))
		put32(d, layout.ParamPingIn, uint32(t.In))
		d[layout.ParamToken+2] = t.Mark
	case PongTask:
		prog = i386pae.Pong
		put32(d, layout.ParamPongIn, uint32(t.In))
		put32(d, layout.ParamPongOut, uint32(t.Out))
		d[layout.ParamPongToken+1] = t.Mark
	case MsgStartTask:
		prog = i386pae.MsgStart
		args = [6]uint32{uint32(t.ReadyIn), uint32(t.WakeOut), uint32(t.Tasks), data + uint32(t.Buf), data + uint32(t.StartTSC)}
	case MsgSenderTask:
		prog = i386pae.MsgSender
		args = [6]uint32{uint32(t.FirstOut), uint32(t.Receivers), uint32(t.Loops), data + uint32(t.Msg), uint32(t.Size), uint32(t.ReadyOut) | uint32(t.WakeIn)<<16}
	case MsgReceiverTask:
		prog = i386pae.MsgReceiver
		args = [6]uint32{uint32(t.In), uint32(t.Messages), uint32(t.Size), data + uint32(t.Buf), data + uint32(t.Results), uint32(t.ReadyOut) | uint32(t.WakeIn)<<16}
	default:
		return -1, errNoProgram(t)
	}
	return r.ts.AddTask(proc, prog, uint32(stack), args)
}

func (r *run32) AddPipe(rproc, rfd, wproc, wfd int) (int, error) {
	return r.ts.AddPipe(rproc, rfd, wproc, wfd)
}

func (r *run32) AddSocketPair(aproc, afd, bproc, bfd int) (int, error) {
	return r.ts.AddSocketPair(aproc, afd, bproc, bfd)
}

func (r *run32) ShareFD(from, to, fd int) bool { return r.ts.ShareFD(from, to, fd) }

func (r *run32) AddFile(proc, fd int, size int64) error {
	_, err := r.ts.AddFile(proc, fd, uint32(size))
	return err
}

func (r *run32) Start() (Exit, error) {
	end, err := r.ts.RunTasks()
	r.samples = i386pae.Samples()
	return exit32(end), err
}

// Samples are those of the ping task's sample calls (i386pae.Samples).

func (r *run32) PipeBytes(n int) (written, read uint64) {
	w, rd := r.ts.PipeBytes(n)
	return uint64(w), uint64(rd)
}

func (r *run32) Counts() (switches, cr3Loads, endTSC uint64) {
	return r.ts.Switches(), r.ts.CR3Loads(), r.ts.EndTSC()
}

var taskStates32 = map[uint32]string{
	core.TaskRunnable: "runnable", core.TaskRunning: "running", core.TaskBlocked: "blocked", core.TaskExited: "exited",
}

func (r *run32) Tasks() []TaskState {
	k := r.ts.State()
	out := make([]TaskState, 0, k.NTasks)
	for i := 0; i < int(k.NTasks); i++ {
		t, c := &k.Tasks[i], &k.Core.Tasks[i]
		s := TaskState{Task: i, Proc: int(t.Proc), State: taskStates32[c.State], IP: uint64(t.Regs.IP), Status: int64(int32(c.Status))}
		if s.State == "" {
			s.State = fmt.Sprintf("state %d", c.State)
		}
		if c.State == core.TaskBlocked {
			s.Wait, s.Pipe = [...]string{"", "read", "write", "write"}[min(c.Wait, core.WaitSockWrite)], int(c.Obj)
		}
		out = append(out, s)
	}
	return out
}
