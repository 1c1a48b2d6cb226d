package i386pae

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/goos"
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/pti"
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
	flags := uint64(amd64.PTE_W|amd64.PTE_NX) & nxMask
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
	c     Config
	procs []*Process
	k     *layout.KState
	err   error
}

// NewTasks starts the state of a tasks run under c (linux trampolines:
// Sysenter with Copy Direct, or Int80; the tasks switch by the pt_regs
// frame). Setup must have run.
func NewTasks(c Config) (*Tasks, error) {
	if !world.ready {
		return nil, errors.New("i386pae: Setup has not run")
	}
	if err := Supported(c); err != nil {
		return nil, err
	}
	if c.Flavour != pti.Linux || c.Entry == Sysenter && c.Copy != Direct || c.Entry == Int80 && c.Stamps {
		return nil, fmt.Errorf("i386pae: %v: the tasks kernel runs under the linux trampolines, SYSENTER with copy direct (stamped or not) or INT 0x80", c)
	}
	k := kstate()
	*k = layout.KState{}
	k.Cur, k.Loaded, k.Head, k.Tail = layout.NoTask, layout.NoTask, layout.NoTask, layout.NoTask
	for i := range k.Pipes {
		pp := &k.Pipes[i]
		pp.ReadHead, pp.ReadTail, pp.WriteHead, pp.WriteTail = layout.NoTask, layout.NoTask, layout.NoTask, layout.NoTask
	}
	return &Tasks{c: c, k: k}, nil
}

// State returns the tasks kernel's state: after RunTasks, its counts.
func (ts *Tasks) State() *layout.KState { return ts.k }

// AddProcess adds process p with descriptors 0 to nfds-1, all closed, and
// returns its number.
func (ts *Tasks) AddProcess(p *Process, nfds int) (int, error) {
	i := len(ts.procs)
	k := ts.k
	if i == layout.MaxProcs || nfds < 0 || nfds > layout.MaxFDSlots-int(k.NFDSlots) {
		return -1, errors.New("i386pae: out of processes or descriptor slots")
	}
	ts.procs = append(ts.procs, p)
	k.Procs[i] = layout.Proc{Used: 1, FDBase: k.NFDSlots, NFDs: uint32(nfds), DataEnd: layout.UserData + p.dataPages()*4096}
	k.NFDSlots += uint32(nfds)
	return i, nil
}

// fd returns the slot of descriptor fd of process proc, nil when there is
// none.
func (ts *Tasks) fd(proc, fd int) *uint32 {
	if proc < 0 || proc >= len(ts.procs) || fd < 0 || uint32(fd) >= ts.k.Procs[proc].NFDs {
		return nil
	}
	return &ts.k.FDSlots[ts.k.Procs[proc].FDBase+uint32(fd)]
}

// AddTask adds a task of process proc running program p from the top of
// stack esp with arguments args (EBX, ECX, EDX, ESI, EDI, EBP), and
// returns its number. Task 0 is the one the run starts with; the others
// are queued and first run when a switch picks them.
func (ts *Tasks) AddTask(proc int, p Program, esp uint32, args [6]uint32) (int, error) {
	k := ts.k
	i := int(k.NTasks)
	if i == layout.MaxTasks || proc < 0 || proc >= len(ts.procs) {
		return -1, errors.New("i386pae: no room for the task")
	}
	eip, ok := programEntry(p)
	if !ok {
		return -1, fmt.Errorf("i386pae: no program %d", p)
	}
	k.NTasks++
	t := &k.Tasks[i]
	t.Proc, t.Next = uint32(proc), layout.NoTask
	t.Regs = layout.PtRegs{IP: eip, CS: layout.USER_CS, Flags: layout.EFLAGS_FIXED, SP: esp, SS: layout.USER_DS, DS: layout.USER_DS, ES: layout.USER_DS,
		BX: args[0], CX: args[1], DX: args[2], SI: args[3], DI: args[4], BP: args[5]}
	k.Procs[proc].Threads++
	k.Live++
	if i == 0 {
		t.State = layout.TaskRunning
		k.Cur, k.Loaded = 0, uint32(proc)
	} else {
		t.State = layout.TaskRunnable
		if k.Tail == layout.NoTask {
			k.Head = uint32(i)
		} else {
			k.Tasks[k.Tail].Next = uint32(i)
		}
		k.Tail = uint32(i)
	}
	return i, nil
}

// AddPipe adds a pipe whose read end is descriptor rfd of process rproc
// and whose write end is wfd of wproc, and returns its number; its ring is
// made the first time a pipe of that number is.
func (ts *Tasks) AddPipe(rproc, rfd, wproc, wfd int) (int, error) {
	k := ts.k
	n := 0
	for n < layout.MaxPipes && k.Pipes[n].Ring != 0 {
		n++
	}
	if n == layout.MaxPipes || !ts.fdFree(rproc, rfd) || !ts.fdFree(wproc, wfd) || rproc == wproc && rfd == wfd {
		return -1, errors.New("i386pae: no room for the pipe or its descriptors")
	}
	for len(world.rings) <= n {
		ring, ok := goos.AllocFrames(layout.PipeSize/4096, 4096)
		if !ok {
			return -1, errors.New("i386pae: out of memory for a pipe's ring")
		}
		world.rings = append(world.rings, ring)
	}
	k.Pipes[n].Ring = uint32(layout.PipeBase + n*layout.PipeSize)
	k.Pipes[n].Readers, k.Pipes[n].Writers = 1, 1
	*ts.fd(rproc, rfd) = layout.FDPipeRead + 2*uint32(n)
	*ts.fd(wproc, wfd) = layout.FDPipeWrite + 2*uint32(n)
	return n, nil
}

// ShareFD gives process to descriptor fd of process from, the same open
// pipe end (as fork does); false when fd is not open in from or taken in
// to.
func (ts *Tasks) ShareFD(from, to, fd int) bool {
	src := ts.fd(from, fd)
	if src == nil || !ts.fdFree(to, fd) {
		return false
	}
	obj := *src
	switch {
	case obj == 0 || obj >= layout.FDFile:
		return false
	case obj&1 == layout.FDPipeRead:
		ts.k.Pipes[obj>>1].Readers++
	default:
		ts.k.Pipes[(obj-layout.FDPipeWrite)>>1].Writers++
	}
	*ts.fd(to, fd) = obj
	return true
}

// EndTSC returns the TSC when the last task exited.
func (ts *Tasks) EndTSC() uint64 { return uint64(ts.k.EndTSC[0]) | uint64(ts.k.EndTSC[1])<<32 }

// Switches returns the switches from one task to another so far (as
// tasks.Run's).
func (ts *Tasks) Switches() uint64 { return uint64(ts.k.Switches) }

// CR3Loads returns the CR3 writes of the context switch so far (process
// changes; as tasks.Run's).
func (ts *Tasks) CR3Loads() uint64 { return uint64(ts.k.CR3Loads) }

func (ts *Tasks) fdFree(proc, fd int) bool {
	slot := ts.fd(proc, fd)
	return slot != nil && *slot == 0
}

// PipeBytes returns the bytes written into and read from pipe n.
func (ts *Tasks) PipeBytes(n int) (written, read uint32) {
	return ts.k.Pipes[n].WPos, ts.k.Pipes[n].RPos
}

// FileFD is the descriptor AddFile and Params.File open a file at.
const FileFD = 3

// AddFile opens descriptor fd of process proc on a new kernel file of size
// bytes (for lseek) and returns the file's number.
func (ts *Tasks) AddFile(proc, fd int, size uint32) (int, error) {
	k := ts.k
	if k.NFiles == layout.MaxFiles || !ts.fdFree(proc, fd) {
		return -1, errors.New("i386pae: no room for the file or its descriptor")
	}
	n := k.NFiles
	k.NFiles++
	k.Files[n] = layout.File{Size: size}
	*ts.fd(proc, fd) = layout.FDFile + n
	return int(n), nil
}

// runWithFile runs program p of the main process alone under the tasks
// kernel, with descriptor FileFD open on a file of size bytes.
func runWithFile(c Config, p Program, size uint32) (Result, error) {
	ts, err := NewTasks(c)
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
		sp, err := p.space(ts.c.Mode.Isolated(), ts.c.Global)
		if err != nil {
			return Result{}, err
		}
		k.Procs[i].KernelCR3 = uint32(sp.KernelPDPT)
	}
	t0 := &k.Tasks[0]
	r := &t0.Regs
	return start(ts.c, ts.procs[t0.Proc], r.IP, r.SP, [6]uint32{r.BX, r.CX, r.DX, r.SI, r.DI, r.BP}, true)
}
