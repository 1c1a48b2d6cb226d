package pti

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/goos"
)

// Flavour is a shape of the system-call trampoline.
type Flavour uint8

const (
	// Minimal: SWAPGS, stack switch, CR3 switch, dispatch, switch back,
	// SYSRETQ: the mechanism alone.
	Minimal Flavour = iota
	// Linux: also saves and restores a full pt_regs frame, clears the
	// registers and checks that SYSRET is safe, as Linux's
	// entry_SYSCALL_64.
	Linux
)

var flavourNames = [...]string{Minimal: "minimal", Linux: "linux"}

func (f Flavour) String() string { return flavourNames[f] }

// Config is one configuration of the kernel a task runs under.
type Config struct {
	Mode    Mode
	Flavour Flavour
	// Global makes the entry area and the kernel text global pages
	// (PTE.G with CR4.PGE): their TLB entries survive CR3 writes.
	Global bool
}

func (c Config) String() string {
	g := "nonglobal"
	if c.Global {
		g = "global"
	}
	return fmt.Sprintf("%v/%v/%s", c.Mode, c.Flavour, g)
}

// ErrUnsupported is returned for a configuration the CPU cannot run.
var ErrUnsupported = errors.New("not supported by this CPU")

// Supported reports whether the CPU can run c: OnPCID needs PCID, Global
// needs PGE.
func Supported(c Config) error {
	if c.Mode == OnPCID && !amd64.Features.PCID {
		return fmt.Errorf("%v: PCID: %w", c, ErrUnsupported)
	}
	if c.Global && !amd64.Features.PGE {
		return fmt.Errorf("%v: global pages: %w", c, ErrUnsupported)
	}
	return nil
}

// Program is a ring-3 program a task runs. Programs keep no state in the
// SSE registers across system calls: the Go handlers of package tasks use
// them and the context switch does not save them.
type Program uint8

const (
	// Syscalls times system calls: args N, R, results, nr, arg, no-RDTSCP.
	Syscalls Program = iota
	// Empty times the same loop without them.
	Empty
	// Probe reads an address: args address, where to store it.
	Probe
	// Ping is the timing side of the ping-pong: args N, R, results,
	// write fd | read fd<<32, a 3-byte token buffer (byte 2: the mark
	// pong adds), no-RDTSCP. It needs the system calls of package tasks.
	Ping
	// Pong replies to what it reads with its mark added: args read fd,
	// write fd, a 2-byte buffer (byte 1: the mark).
	Pong
	// MsgStart gives sched-messaging's start signal: args ready fd, wake
	// fd, tasks, a buffer, where to store the start TSC.
	MsgStart
	// MsgSender is a sched-messaging sender: args first write fd,
	// receivers, loops, message, message size, ready fd | wake fd<<32.
	MsgSender
	// MsgReceiver is a sched-messaging receiver: args read fd, messages,
	// message size, buffer, results (count, sum), ready fd | wake fd<<32.
	MsgReceiver
	programCount
)

// userPrograms writes the addresses of the ring-3 programs into t.
//
// defined in user_amd64.s
//
//go:noescape
func userPrograms(t *[programCount]uint64)

// Result is how a run ended.
type Result struct {
	Reason uint64 // ReasonExit, ReasonFault, ReasonDeadlock or ReasonNoSwitch
	Status uint64 // the exit status
	// The exception that ended the run, with ReasonFault.
	Vector, ErrorCode, RIP, CS, CR2 uint64
}

// FromUser reports whether the exception came from ring 3.
func (r Result) FromUser() bool { return r.CS&3 == 3 }

func (r Result) String() string {
	switch r.Reason {
	case ReasonExit:
		return fmt.Sprintf("exit %d", r.Status)
	case ReasonDeadlock:
		return "deadlock: every remaining task is blocked"
	case ReasonNoSwitch:
		return "a task blocked or yielded under a trampoline without a pt_regs frame"
	case ReasonFault:
	default:
		return fmt.Sprintf("unknown end %d", r.Reason)
	}
	ring := 0
	if r.FromUser() {
		ring = 3
	}
	return fmt.Sprintf("%s in ring %d, error %#x, RIP %#x, CR2 %#x", amd64.VectorName(r.Vector), ring, r.ErrorCode, r.RIP, r.CR2)
}

// env is the one CPU's entry area, the task's memory and the address
// spaces built so far.
var env struct {
	ready   bool
	entry   uint64 // physical address of the entry area's EntryPages frames
	code    uint64 // physical address of the code pages every process shares
	progOff [programCount]uint64
	main    *Process // the process of single-task runs (Exec)
	text    [routineCount]uint64
	kern    [routineCount]uint64
	ktext   struct{ start, end uint64 } // the kernel text's pages
	nasid   uint16                      // address-space ids handed out
}

// Process is a task's address space: the shared code pages, its own data
// and stack pages, and the tables of each mode, built when first used.
// Its threads share it.
type Process struct {
	Task
	asid   uint16 // address-space id: kernel PCID = KernelPCID + asid
	spaces map[[2]bool]Space
}

// NewProcess allocates a process's data pages (UserDataPages) and stack
// pages. Setup must have run.
func NewProcess() (*Process, error) { return NewProcessData(UserDataPages) }

// NewProcessData allocates a process with dataPages data pages (1 to
// MaxDataPages) and the stack pages. Setup must have run.
func NewProcessData(dataPages int) (*Process, error) {
	if !env.ready {
		return nil, errors.New("pti: Setup has not run")
	}
	if dataPages < 1 || dataPages > MaxDataPages {
		return nil, fmt.Errorf("pti: %d data pages: a process has 1 to %d", dataPages, MaxDataPages)
	}
	if env.nasid >= 1<<PTIUserPCIDBit-KernelPCID {
		return nil, errors.New("pti: out of address-space ids")
	}
	p := &Process{Task: Task{Code: env.code, DataPages: dataPages}, spaces: map[[2]bool]Space{}}
	var ok bool
	if p.Data, ok = goos.AllocFrames(uint64(dataPages), amd64.PageSize); !ok {
		return nil, errors.New("pti: out of memory for a process's data")
	}
	if p.Stack, ok = goos.AllocFrames(UserStackPages, amd64.PageSize); !ok {
		goos.FreeFrames(p.Data, uint64(dataPages))
		return nil, errors.New("pti: out of memory for a process's stack")
	}
	p.asid = env.nasid
	env.nasid++
	return p, nil
}

// DataPages returns the process's data pages, as the kernel sees them.
func (p *Process) DataPages() []byte { return goos.Frames(p.Data, p.dataPages()) }

// space returns p's address space in mode with global entry pages or not,
// building it the first time. The tables are the same for on and on+pcid.
func (p *Process) space(mode Mode, global bool) (Space, error) {
	k := [2]bool{mode.Isolated(), global}
	sp, ok := p.spaces[k]
	if !ok {
		if sp, ok = Build(goos.PhysTables{}, goos.KernelTable(), p.Task, env.entry, mode, global, amd64.Features.NX); !ok {
			return Space{}, errors.New("pti: out of memory for page tables")
		}
		sp.ASID = p.asid
		p.spaces[k] = sp
	}
	sp.Mode = mode
	return sp, nil
}

// CR3 returns the CR3 values of p's kernel and user sides under c; the
// tasks' kernel loads the first when it switches to one of p's threads.
func (p *Process) CR3(c Config) (kernel, user uint64, err error) {
	sp, err := p.space(c.Mode, c.Global)
	if err != nil {
		return 0, 0, err
	}
	return KernelCR3(sp, true), UserCR3(sp, true), nil
}

// entryEnd is the marker at the end of every copied routine and program.
var entryEnd = []byte{0x0f, 0x0b, 'P', 'T', 'I', 'E', 'N', 'D'}

// code returns the bytes of the routine at addr: up to and including the
// UD2 of its end marker.
func code(addr uint64) ([]byte, error) {
	b := efi.Bytes(addr, 4096)
	i := bytes.Index(b, entryEnd)
	if i < 0 {
		return nil, fmt.Errorf("pti: no end marker within 4 KiB of %#x", addr)
	}
	return b[:i+2], nil
}

func data() *entryData { return (*entryData)(goos.Pointer(EntryData)) }

// Setup allocates the entry area, the task's memory and its kernel stack,
// copies the trampolines into the entry area, fills its GDT, TSS, IDT and
// system-call table, and maps it into the kernel's own table (which the
// run's first and last instructions execute on). Call it once.
func Setup() error {
	if env.ready {
		return nil
	}
	var ok bool
	alloc := func(pa *uint64, n uint64) {
		if ok {
			*pa, ok = goos.AllocFrames(n, amd64.PageSize)
		}
	}
	ok = true
	alloc(&env.entry, EntryPages)
	alloc(&env.code, UserCodePages)
	if !ok {
		return errors.New("pti: out of memory for the entry area and the code pages")
	}

	var addrs [routineCount]uint64
	routines(&addrs)
	text := goos.Frames(env.entry, EntryTextPages)
	off := 0
	for i := routineMinimalOff; i <= routineExcEntries; i++ {
		c, err := code(addrs[i])
		if err != nil {
			return err
		}
		if off+len(c) > len(text) {
			return errors.New("pti: the trampolines do not fit in the entry text")
		}
		copy(text[off:], c)
		env.text[i] = EntryText + uint64(off)
		off = (off + len(c) + 63) &^ 63
	}
	env.kern = addrs

	// Every program in the shared code pages, 64-byte aligned.
	var progs [programCount]uint64
	userPrograms(&progs)
	codePages := goos.Frames(env.code, UserCodePages)
	off = 0
	for i, a := range progs {
		c, err := code(a)
		if err != nil {
			return err
		}
		if off+len(c) > len(codePages) {
			return fmt.Errorf("pti: program %d does not fit in the code pages", i)
		}
		copy(codePages[off:], c)
		env.progOff[i] = uint64(off)
		off = (off + len(c) + 63) &^ 63
	}

	// Map the entry area into the kernel's table: enterUser's first and
	// runExit's last instructions read its data with the kernel's CR3.
	kpt := goos.KernelTable()
	if !kpt.Map(EntryBase, env.entry, EntryPages*amd64.PageSize, amd64.PageSize, amd64.PTE_W) {
		return errors.New("pti: out of memory mapping the entry area")
	}

	d := data()
	*d = entryData{}
	ResetSyscalls()
	// The system-call path runs on goos's kernel stack with goos's kernel
	// TLS, so that Go handlers (package tasks) run under its kernelG.
	d.TaskStackTop, d.RunFSBase = goos.KernelContext()
	d.ToUser = env.text[routineToUser]
	d.ExitRun = addrs[routineRunExit]

	// The IDT of a run: every exception vector to its stub in the entry
	// text, on stacks in the entry area (mapped in both tables): IST1 (the
	// entry stack), and their own for #DF, NMI and #MC.
	idt := (*[256]amd64.Gate)(goos.Pointer(EntryIDT))
	for v := 0; v < 32; v++ {
		ist := uint8(1)
		switch v {
		case amd64.VectorDF:
			ist = 2
		case amd64.VectorNMI:
			ist = 3
		case amd64.VectorMC:
			ist = 4
		}
		idt[v] = amd64.InterruptGate(env.text[routineExcEntries]+16*uint64(v), amd64.KERNEL_CS, ist, 0, amd64.TypeInterruptGate)
	}
	d.RunIDT.Limit, d.RunIDT.Base = 256*16-1, EntryIDT
	d.RunGDT.Limit, d.RunGDT.Base = amd64.GDT_ENTRIES*8-1, EntryDesc

	env.ktext.start, env.ktext.end = kernelText()
	env.ready = true
	main, err := NewProcess()
	if err != nil {
		env.ready = false
		return err
	}
	env.main = main
	return nil
}

// The run's GDT (Linux's layout, as the kernel's) and TSS, in the entry
// area's descriptor page: the GDT at its start, the TSS 128 bytes in.
const tssOffset = 128

func writeDescriptors() {
	gdt := (*[amd64.GDT_ENTRIES]uint64)(goos.Pointer(EntryDesc))
	*gdt = [amd64.GDT_ENTRIES]uint64{
		amd64.GDT_ENTRY_KERNEL32_CS: amd64.DescKernel32Code,
		amd64.GDT_ENTRY_KERNEL_CS:   amd64.DescKernelCode,
		amd64.GDT_ENTRY_KERNEL_DS:   amd64.DescKernelData,
		amd64.GDT_ENTRY_USER32_CS:   amd64.DescUser32Code,
		amd64.GDT_ENTRY_USER_DS:     amd64.DescUserData,
		amd64.GDT_ENTRY_USER_CS:     amd64.DescUserCode,
	}
	gdt[amd64.GDT_ENTRY_TSS], gdt[amd64.GDT_ENTRY_TSS+1] = amd64.TSSDescriptor(EntryDesc+tssOffset, amd64.TSSSize-1)
	tss := (*amd64.TSS)(goos.Pointer(EntryDesc + tssOffset))
	*tss = amd64.TSS{}
	tss.SetRSP0(EntryStackTop)
	tss.SetIST(1, EntryStackTop)
	tss.SetIST(2, EntryISTDF)
	tss.SetIST(3, EntryISTNMI)
	tss.SetIST(4, EntryISTMC)
	tss.SetIOMapBase(amd64.TSSSize)
}

// kernelText returns the pages of the image's .text section, from the PE
// section table the firmware loaded with the image (PE/COFF: e_lfanew at
// 0x3c, the COFF header after "PE\0\0", the section headers after the
// optional header; each 40 bytes with the name at 0, VirtualSize at 8 and
// VirtualAddress at 12).
func kernelText() (start, end uint64) {
	base := efi.Firmware.ImageBase
	pe := base + uint64(efi.Read32(base+0x3c))
	nsec := uint64(efi.Read16(pe + 6))
	sec := pe + 24 + uint64(efi.Read16(pe+20))
	for i := uint64(0); i < nsec; i++ {
		h := sec + 40*i
		if string(efi.Bytes(h, 8)) == ".text\x00\x00\x00" {
			s := base + uint64(efi.Read32(h+12))
			return s &^ (amd64.PageSize - 1), (s + uint64(efi.Read32(h+8)) + amd64.PageSize - 1) &^ (amd64.PageSize - 1)
		}
	}
	return 0, 0
}

// setKernelTextGlobal sets or clears the global bit of the kernel text's
// pages in the kernel's table (which every task's kernel side shares),
// splitting the 2 MiB pages that hold it.
func setKernelTextGlobal(on bool) error {
	kpt := goos.KernelTable()
	for va := env.ktext.start; va < env.ktext.end; va += amd64.PageSize {
		if !kpt.Split(va) {
			return errors.New("pti: out of memory splitting the kernel text's pages")
		}
		pte := kpt.PTE(va, false)
		if pte == nil {
			return fmt.Errorf("pti: kernel text page %#x is not mapped", va)
		}
		if on {
			*pte |= amd64.PTE_G
		} else {
			*pte &^= amd64.PTE_G
		}
	}
	return nil
}

// SetSyscall makes the task's system call nr go to handler, a kernel
// address with the contract of the handlers in entry_amd64.s (tasks.Entry
// is one). Setup must have run.
func SetSyscall(nr int, handler uint64) error {
	if !env.ready {
		return errors.New("pti: Setup has not run")
	}
	if nr < 0 || nr >= nsys {
		return fmt.Errorf("pti: system call %d is out of the table", nr)
	}
	data().Table[nr] = handler
	return nil
}

// ResetSyscalls points the system-call table back at the built-in
// handlers: getppid, work and exit, ENOSYS for the rest.
func ResetSyscalls() {
	d := data()
	for i := range d.Table {
		d.Table[i] = env.kern[routineNoSys]
	}
	d.Table[SysGetppid] = env.kern[routineGetppid]
	d.Table[SysWork] = env.kern[routineWork]
	d.Table[SysExit] = env.kern[routineExitRun]
}

// Exec runs program p in ring 3 under configuration c with arguments args
// (RDI, RSI, RDX, R10, R8, R9) and returns how it ended. Setup must have
// run.
func Exec(c Config, p Program, args [6]uint64) (Result, error) {
	return Start(c, env.main, p, UserStackTop, args)
}

// Start runs a task of process proc in ring 3 under c: program p with its
// stack at rsp and arguments args (RDI, RSI, RDX, R10, R8, R9), and
// returns when the run ends: the task (or, with the tasks' kernel, the
// last task) exited, or a CPU exception ended it. Other tasks of a run are
// the tasks' kernel's business: it switches to them in system calls.
func Start(c Config, proc *Process, p Program, rsp uint64, args [6]uint64) (Result, error) {
	if !env.ready {
		return Result{}, errors.New("pti: Setup has not run")
	}
	if err := Supported(c); err != nil {
		return Result{}, err
	}
	sp, err := proc.space(c.Mode, c.Global)
	if err != nil {
		return Result{}, err
	}
	if amd64.Features.PGE {
		if err := setKernelTextGlobal(c.Global); err != nil {
			return Result{}, err
		}
	}
	writeDescriptors()

	d := data()
	d.KernelRoot = sp.KernelRoot
	if bugPCIDBeforePCIDE && c.Mode == OnPCID {
		d.KernelRoot = KernelCR3(sp, false) // the test-only bug: see bug_pcide.go
	}
	d.KernelCR3 = KernelCR3(sp, true)
	d.UserCR3 = UserCR3(sp, true)
	// CR4.TSD off: ring 3 reads the TSC. SMAP off: the tasks' kernel
	// copies user memory without STAC.
	cr4 := amd64.CR4() &^ (amd64.CR4_PGE | amd64.CR4_PCIDE | amd64.CR4_TSD | amd64.CR4_SMAP)
	if amd64.Features.PGE {
		cr4 |= amd64.CR4_PGE
	}
	if c.Mode == OnPCID {
		cr4 |= amd64.CR4_PCIDE
	}
	d.RunCR4 = cr4
	d.Trampoline = env.text[trampoline(c)]
	d.UserRIP = ProgramEntry(p)
	d.UserRSP0 = rsp
	d.Args = args
	d.Reason, d.Status = 0, 0

	enterUser()

	return Result{
		Reason: d.Reason, Status: d.Status,
		Vector: d.Vector, ErrorCode: d.ErrorCode, RIP: d.FaultRIP, CS: d.FaultCS, CR2: d.FaultCR2,
	}, nil
}

func trampoline(c Config) int {
	i := routineMinimalOff
	if c.Flavour == Linux {
		i = routineLinuxOff
	}
	return i + int(c.Mode)
}

// ProgramEntry returns the address of program p in every task's address
// space.
func ProgramEntry(p Program) uint64 { return UserCode + env.progOff[p] }

// MainProcess returns the process of the single-task runs (Exec).
func MainProcess() *Process { return env.main }

// Trampoline returns the address of the trampoline of c in the entry area
// and its bytes, for inspection.
func Trampoline(c Config) (uint64, []byte) {
	i := trampoline(c)
	b, _ := code(env.kern[i])
	return env.text[i], b
}
