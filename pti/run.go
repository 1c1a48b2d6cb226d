package pti

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"unsafe"

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

func (f Flavour) String() string {
	if int(f) < len(flavourNames) {
		return flavourNames[f]
	}
	return fmt.Sprintf("flavour(%d)", f)
}

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

// Supported reports whether the CPU can run c: there must be a trampoline
// for its flavour and mode, its mode may need PCID (OnPCID) and Global
// needs PGE.
func Supported(c Config) error {
	if _, ok := trampolines[trampolineKey{c.Flavour, c.Mode}]; !ok {
		return fmt.Errorf("%v: no such trampoline", c)
	}
	if c.Mode.PCID() && !amd64.Features.PCID {
		return fmt.Errorf("%v: PCID: %w", c, ErrUnsupported)
	}
	if c.Global && !amd64.Features.PGE {
		return fmt.Errorf("%v: global pages: %w", c, ErrUnsupported)
	}
	return nil
}

// programTable holds an address per ring-3 program of user_amd64.s, in the
// field of its name (its symbol is "user" and the name): where the program
// is linked (userPrograms fills it, through go_asm.h's offsets) or where it
// starts in every process (env.progs). A test on the built image checks
// that userPrograms sets every field to the symbol of its name.
type programTable struct {
	Syscalls, Empty, Probe, Ping, Pong, MsgStart, MsgSender, MsgReceiver uint64
}

// userPrograms writes the link addresses of the ring-3 programs into t.
//
// defined in user_amd64.s
//
//go:noescape
func userPrograms(t *programTable)

// Program is a ring-3 program a task runs, named by its field in
// programTable (its value is the field's offset). Programs keep no state
// in the SSE registers across system calls: the Go handlers of package
// tasks use them and the context switch does not save them.
type Program uintptr

// The ring-3 programs and their arguments (RDI, RSI, RDX, R10, R8, R9).
const (
	// Syscalls times system calls: args N, R, results, nr, arg, no-RDTSCP.
	Syscalls = Program(unsafe.Offsetof(programTable{}.Syscalls))
	// Empty times the same loop without them.
	Empty = Program(unsafe.Offsetof(programTable{}.Empty))
	// Probe reads an address: args address, where to store it.
	Probe = Program(unsafe.Offsetof(programTable{}.Probe))
	// Ping is the timing side of the ping-pong: args N, R, results,
	// write fd | read fd<<32, a 3-byte token buffer (byte 2: the mark
	// pong adds), no-RDTSCP. It needs the system calls of package tasks.
	Ping = Program(unsafe.Offsetof(programTable{}.Ping))
	// Pong replies to what it reads with its mark added: args read fd,
	// write fd, a 2-byte buffer (byte 1: the mark).
	Pong = Program(unsafe.Offsetof(programTable{}.Pong))
	// MsgStart gives sched-messaging's start signal: args ready fd, wake
	// fd, tasks, a buffer, where to store the start TSC.
	MsgStart = Program(unsafe.Offsetof(programTable{}.MsgStart))
	// MsgSender is a sched-messaging sender: args first write fd,
	// receivers, loops, message, message size, ready fd | wake fd<<32.
	MsgSender = Program(unsafe.Offsetof(programTable{}.MsgSender))
	// MsgReceiver is a sched-messaging receiver: args read fd, messages,
	// message size, buffer, results (count, sum), ready fd | wake fd<<32.
	MsgReceiver = Program(unsafe.Offsetof(programTable{}.MsgReceiver))
)

// at returns program p's field of t.
func (t *programTable) at(p Program) *uint64 { return (*uint64)(unsafe.Add(unsafe.Pointer(t), p)) }

// String returns the program's name: its field's.
func (p Program) String() string {
	if f, ok := fieldAt(reflect.TypeFor[programTable](), uintptr(p)); ok {
		return f.Name
	}
	return fmt.Sprintf("Program(%d)", uintptr(p))
}

// fieldAt returns the field of struct type t at offset off.
func fieldAt(t reflect.Type, off uintptr) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); f.Offset == off {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// Exit statuses of the ring-3 programs besides 0, for user_amd64.s
// (go_asm.h): each names one failure, so that a Result says which.
const (
	pingWriteFailed = 1 // ping's write of the token was short or failed
	pingReadFailed  = 2 // ping's read of the reply was short or failed
	pingBadReply    = 3 // the reply was not the token plus pong's mark
	pongWriteFailed = 4
	pongReadFailed  = 5
	msgReadyFailed  = 6 // a messaging task's ready byte, or the starter's read of them
	msgWaitFailed   = 7 // the start signal: a task's read, or the starter's write
	msgWriteFailed  = 8 // a sender's write was short or failed
	msgReadFailed   = 9 // a receiver's read failed, or its pipe ended early
)

// exitStatusNames say what each exit status of the ring-3 programs means.
var exitStatusNames = map[uint64]string{
	pingWriteFailed: "ping: write failed",
	pingReadFailed:  "ping: read failed",
	pingBadReply:    "ping: wrong reply",
	pongWriteFailed: "pong: write failed",
	pongReadFailed:  "pong: read failed",
	msgReadyFailed:  "messaging: ready signal failed",
	msgWaitFailed:   "messaging: start signal failed",
	msgWriteFailed:  "messaging sender: write failed",
	msgReadFailed:   "messaging receiver: read failed",
}

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
		if name, ok := exitStatusNames[r.Status]; ok {
			return fmt.Sprintf("exit %d (%s)", r.Status, name)
		}
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
	ready  bool
	entry  uint64                      // physical address of the entry area's EntryPages frames
	code   uint64                      // physical address of the code pages every process shares
	link   entryRoutines               // where the entry routines are linked
	text   entryRoutines               // where they were copied, in the entry text
	kern   kernelRoutines              // the kernel routines (they run where linked)
	progs  programTable                // where each program starts, in every process
	copied []Copied                    // what Setup copied
	main   *Process                    // the process of single-task runs (Exec)
	ktext  struct{ start, end uint64 } // the kernel text's pages
	nasid  uint16                      // address-space ids handed out
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
var entryEnd = binary.LittleEndian.AppendUint64(nil, amd64.EndMarker)

// code returns the bytes of the routine at addr: up to and including the
// UD2 of its end marker.
func code(addr uint64) ([]byte, error) {
	b := efi.Bytes(addr, 4096)
	i := bytes.Index(b, entryEnd)
	if i < 0 {
		return nil, fmt.Errorf("no end marker within 4 KiB of %#x", addr)
	}
	return b[:i+2], nil
}

// Copied is a routine or a program that Setup copied out of the image:
// its name (its field's in entryRoutines or programTable), where it is
// linked, where it runs (in the entry text or, for a program, in every
// process's code pages) and its size in bytes (up to and including the
// UD2 of its end marker).
type Copied struct {
	Name     string
	Link, At uint64
	Size     int
}

func (c Copied) String() string {
	return fmt.Sprintf("%s: %d bytes at %#x (linked at %#x)", c.Name, c.Size, c.At, c.Link)
}

// Listing returns what Setup copied, in order: the entry routines into the
// entry text, then the programs into the code pages.
func Listing() []Copied { return slices.Clone(env.copied) }

// place copies the routines whose link addresses are the fields of link
// (a pointer to a struct of uint64s, one per routine) into dst, at 64-byte
// aligned offsets, sets the same fields of at to where each landed (base
// plus its offset) and lists each in env.copied. what names dst in errors.
func place(link, at any, dst []byte, base uint64, what string) error {
	lv, av := reflect.ValueOf(link).Elem(), reflect.ValueOf(at).Elem()
	first := len(env.copied)
	off := 0
	for i := range lv.NumField() {
		name, addr := lv.Type().Field(i).Name, lv.Field(i).Uint()
		c, err := code(addr)
		if err != nil {
			return fmt.Errorf("pti: %s: %w", name, err)
		}
		if off+len(c) > len(dst) {
			return fmt.Errorf("pti: %s (%d bytes) does not fit in the %s (%d bytes) after %v", name, len(c), what, len(dst), env.copied[first:])
		}
		copy(dst[off:], c)
		av.Field(i).SetUint(base + uint64(off))
		env.copied = append(env.copied, Copied{Name: name, Link: addr, At: base + uint64(off), Size: len(c)})
		off = (off + len(c) + 63) &^ 63
	}
	return nil
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

	// The entry routines into the entry text, every program into the
	// shared code pages.
	routines(&env.link, &env.kern)
	env.copied = nil
	if err := place(&env.link, &env.text, goos.Frames(env.entry, EntryTextPages), EntryText, "entry text"); err != nil {
		return err
	}
	var progs programTable
	userPrograms(&progs)
	if err := place(&progs, &env.progs, goos.Frames(env.code, UserCodePages), UserCode, "code pages"); err != nil {
		return err
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
	d.ToUser = env.text.ToUser
	d.ExitRun = env.kern.RunExit

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
		idt[v] = amd64.InterruptGate(env.text.ExcEntries+16*uint64(v), amd64.KERNEL_CS, ist, 0, amd64.TypeInterruptGate)
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
		d.Table[i] = env.kern.SysNoSys
	}
	d.Table[SysGetppid] = env.kern.SysGetppid
	d.Table[SysWork] = env.kern.SysWork
	d.Table[SysExit] = env.kern.SysExitRun
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
	tramp := env.text.at(trampolines[trampolineKey{c.Flavour, c.Mode}])
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
	d.KernelCR3 = KernelCR3(sp, true)
	d.UserCR3 = UserCR3(sp, true)
	// CR4.TSD off: ring 3 reads the TSC. SMAP off: the tasks' kernel
	// copies user memory without STAC.
	cr4 := amd64.CR4() &^ (amd64.CR4_PGE | amd64.CR4_PCIDE | amd64.CR4_TSD | amd64.CR4_SMAP)
	if amd64.Features.PGE {
		cr4 |= amd64.CR4_PGE
	}
	if c.Mode.PCID() {
		cr4 |= amd64.CR4_PCIDE
	}
	d.RunCR4 = cr4
	d.Trampoline = *tramp
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

// ProgramEntry returns the address of program p in every task's address
// space.
func ProgramEntry(p Program) uint64 { return *env.progs.at(p) }

// MainProcess returns the process of the single-task runs (Exec).
func MainProcess() *Process { return env.main }
