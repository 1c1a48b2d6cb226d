package i386pae

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/goos"
	"github.com/ptilab/ptilab/i386pae/layout"
)

// Processes and the tasks kernel of the 32-bit world: the 64-bit side
// makes the processes (their pages and address spaces), and before a run
// writes the tasks kernel's state (layout.KState: processes, tasks,
// pipes, files), which the 32-bit kernel's Go code (kernel32/tasks.go)
// then runs on; after the run it reads the counts back.

// Process is a 32-bit process: the shared code pages, its own data and
// stack pages (Frames), and its address space in each (isolation, global
// pages) configuration, built when first used. Its tasks (threads) share
// it.
type Process struct {
	Frames
	spaces map[[2]bool]*procSpace
}

// procSpace is a process's address space and the pipes' rings mapped in
// its kernel side so far.
type procSpace struct {
	Space
	rings int
}

// NewProcess allocates a 32-bit process's data pages (layout.UserDataPages)
// and stack pages. Setup must have run.
func NewProcess() (*Process, error) { return NewProcessData(layout.UserDataPages) }

// NewProcessData allocates a 32-bit process with dataPages data pages (1
// to MaxDataPages) and the stack pages. Setup must have run.
func NewProcessData(dataPages int) (*Process, error) {
	if !world.ready {
		return nil, errors.New("i386pae: Setup has not run")
	}
	if dataPages < 1 || dataPages > MaxDataPages {
		return nil, fmt.Errorf("i386pae: %d data pages: a process has 1 to %d", dataPages, MaxDataPages)
	}
	p := &Process{Frames: Frames{Code: world.code, DataPages: dataPages}, spaces: map[[2]bool]*procSpace{}}
	var ok bool
	if p.Data, ok = goos.AllocFrames(uint64(dataPages), 4096); !ok {
		return nil, errors.New("i386pae: out of memory for a process's data")
	}
	if p.Stack, ok = goos.AllocFrames(layout.UserStackPages, 4096); !ok {
		goos.FreeFrames(p.Data, uint64(dataPages))
		return nil, errors.New("i386pae: out of memory for a process's stack")
	}
	return p, nil
}

// MainProcess returns the process of the single-task runs (Run).
func MainProcess() *Process { return world.main }

// DataPages returns the process's data pages, as the 64-bit side sees
// them.
func (p *Process) DataPages() []byte { return goos.Frames(p.Data, uint64(p.dataPages())) }

// space returns p's address space with isolation or not and global entry
// pages or not, building it the first time, with every pipe ring made so
// far mapped in its kernel side.
func (p *Process) space(isolated, global bool) (Space, error) {
	k := [2]bool{isolated, global}
	ps := p.spaces[k]
	if ps == nil {
		sp, ok := Build(tables{}, world.kernel, p.Frames, isolated, global, amd64.Features.NX)
		if !ok {
			return Space{}, errors.New("i386pae: out of memory for page tables")
		}
		ps = &procSpace{Space: sp}
		p.spaces[k] = ps
	}
	nxMask, _ := amd64.LeafBits(amd64.Features.NX, false)
	flags := leaf32KernelRW & nxMask
	pt := PageTable[tables]{PDPT: ps.KernelPDPT}
	for ; ps.rings < len(world.rings); ps.rings++ {
		va := uint32(layout.PipeBase + ps.rings*layout.PipeSize)
		if !pt.Map(va, world.rings[ps.rings], layout.PipeSize, flags) {
			return Space{}, errors.New("i386pae: out of memory mapping the pipes")
		}
	}
	return ps.Space, nil
}

// kstate returns the tasks kernel's state, through the identity map.
func kstate() *layout.KState {
	return (*layout.KState)(unsafe.Pointer(&kernelPage(layout.State, int(layout.StatePages))[0]))
}

// Tasks builds the state of a run of the tasks kernel: processes, tasks,
// pipes and files, then runs it (RunTasks). Get one from NewTasks.
type Tasks struct {
	s     Switch
	procs []*Process
	k     *layout.KState
}

// NewTasks starts the state of a tasks run under s (from Plan; linux
// trampolines: SYSENTER with the direct copy method, or INT 0x80, or the
// mitigated flavour's; the tasks switch by the pt_regs frame). Setup must
// have run.
func NewTasks(s Switch) (*Tasks, error) {
	if !world.ready {
		return nil, errors.New("i386pae: Setup has not run")
	}
	if c := s.c; !c.Flavour.PtRegs() || c.Entry == experiment.Sysenter && c.Copy != experiment.Direct {
		return nil, fmt.Errorf("i386pae: %v: the tasks kernel runs under the linux trampolines, SYSENTER with copy direct (stamped or not, or mitigated) or INT 0x80", c)
	}
	k := kstate()
	k.Reset()
	return &Tasks{s: s, k: k}, nil
}

// State returns the tasks kernel's state: after RunTasks, its counts.
func (ts *Tasks) State() *layout.KState { return ts.k }

// AddProcess adds process p with descriptors 0 to nfds-1, all closed, and
// returns its number.
func (ts *Tasks) AddProcess(p *Process, nfds int) (int, error) {
	i := ts.k.AddProcess(nfds, layout.UserData+p.dataPages()*4096)
	if i < 0 {
		return -1, errors.New("i386pae: out of processes or descriptor slots")
	}
	ts.procs = append(ts.procs, p)
	return i, nil
}

// AddTask adds a task of process proc running program p from the top of
// stack esp with arguments args (EBX, ECX, EDX, ESI, EDI, EBP), and
// returns its number. Task 0 is the one the run starts with; the others
// are queued and first run when a switch picks them.
func (ts *Tasks) AddTask(proc int, p Program, esp uint32, args [6]uint32) (int, error) {
	eip, ok := programEntry(p)
	if !ok {
		return -1, fmt.Errorf("i386pae: no program %d", p)
	}
	i := ts.k.AddTask(proc, eip, esp, args)
	if i < 0 {
		return -1, errors.New("i386pae: no room for the task")
	}
	return i, nil
}

// AddPipe adds a pipe whose read end is descriptor rfd of process rproc
// and whose write end is wfd of wproc, and returns its number; its ring is
// made the first time a pipe of that number is.
func (ts *Tasks) AddPipe(rproc, rfd, wproc, wfd int) (int, error) {
	if err := ts.rings(ts.k.FreePipe()); err != nil {
		return -1, err
	}
	n := ts.k.AddPipe(rproc, rfd, wproc, wfd)
	if n < 0 {
		return -1, errors.New("i386pae: no room for the pipe or its descriptors")
	}
	return n, nil
}

// AddSocketPair adds an AF_UNIX stream socket pair whose one endpoint is
// descriptor afd of process aproc and the other bfd of bproc, and returns
// the channel a reads (its bytes: PipeBytes); b reads the next. Its two
// rings are made the first time slots of those numbers are.
func (ts *Tasks) AddSocketPair(aproc, afd, bproc, bfd int) (int, error) {
	if err := ts.rings(ts.k.FreePair() + 1); err != nil {
		return -1, err
	}
	c := ts.k.AddSocketPair(aproc, afd, bproc, bfd)
	if c < 0 {
		return -1, errors.New("i386pae: no room for the socket pair or its descriptors")
	}
	return c, nil
}

// rings makes the rings of pipe slots up to and including n.
func (ts *Tasks) rings(n int) error {
	for n < layout.MaxPipes && len(world.rings) <= n {
		ring, ok := goos.AllocFrames(layout.PipeSize/4096, 4096)
		if !ok {
			return errors.New("i386pae: out of memory for a ring")
		}
		world.rings = append(world.rings, ring)
	}
	return nil
}

// ShareFD gives process to descriptor fd of process from, the same open
// pipe end (as fork does); false when fd is not open in from or taken in
// to.
func (ts *Tasks) ShareFD(from, to, fd int) bool { return ts.k.ShareFD(from, to, fd) }

// EndTSC returns the TSC when the last task exited.
func (ts *Tasks) EndTSC() uint64 { return uint64(ts.k.EndTSC[0]) | uint64(ts.k.EndTSC[1])<<32 }

// Switches returns the switches from one task to another so far (as
// tasks.Run's).
func (ts *Tasks) Switches() uint64 { return uint64(ts.k.Switches) }

// CR3Loads returns the CR3 writes of the context switch so far (process
// changes; as tasks.Run's).
func (ts *Tasks) CR3Loads() uint64 { return uint64(ts.k.CR3Loads) }

// PipeBytes returns the bytes written into and read from pipe n.
func (ts *Tasks) PipeBytes(n int) (written, read uint32) {
	return ts.k.Core.Pipes[n].WPos, ts.k.Core.Pipes[n].RPos
}

// FileFD is the descriptor AddFile and Params.File open a file at.
const FileFD = 3

// AddFile opens descriptor fd of process proc on a new kernel file of size
// bytes (for lseek) and returns the file's number.
func (ts *Tasks) AddFile(proc, fd int, size uint32) (int, error) {
	n := ts.k.AddFile(proc, fd, size)
	if n < 0 {
		return -1, errors.New("i386pae: no room for the file or its descriptor")
	}
	return n, nil
}

// runWithFile runs program p of the main process alone under the tasks
// kernel, with descriptor FileFD open on a file of size bytes.
func runWithFile(s Switch, p Program, size uint32) (Result, error) {
	ts, err := NewTasks(s)
	if err != nil {
		return Result{}, err
	}
	proc, err := ts.AddProcess(world.main, FileFD+1)
	if err != nil {
		return Result{}, err
	}
	if _, err := ts.AddFile(proc, FileFD, size); err != nil {
		return Result{}, err
	}
	if _, err := ts.AddTask(proc, p, layout.UserStackTop, [6]uint32{}); err != nil {
		return Result{}, err
	}
	return ts.RunTasks()
}

// RunTasks runs the tasks: task 0 starts in ring 3, the tasks kernel
// switches to the others in their system calls; it returns when the last
// task has exited (layout.ReasonExit, with the first nonzero exit status),
// every remaining task is blocked (layout.ReasonDeadlock) or an exception
// ended the run.
func (ts *Tasks) RunTasks() (Result, error) {
	k := ts.k
	if k.NTasks == 0 {
		return Result{}, errors.New("i386pae: no tasks")
	}
	// Every process's kernel side, and its rings, for this configuration.
	for i, p := range ts.procs {
		sp, err := p.space(ts.s.c.Mode.Isolated(), ts.s.c.Global)
		if err != nil {
			return Result{}, err
		}
		k.Procs[i].KernelCR3 = uint32(sp.KernelPDPT)
	}
	k.MappedRings = uint32(len(world.rings)) // space mapped them all
	t0 := &k.Tasks[0]
	r := &t0.Regs
	return start(ts.s, ts.procs[t0.Proc], r.IP, r.SP, [6]uint32{r.BX, r.CX, r.DX, r.SI, r.DI, r.BP}, true)
}
