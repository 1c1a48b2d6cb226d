// Package i386pae is ptilab's 32-bit world: the CPU leaves long mode, runs
// a 32-bit kernel in protected mode with PAE paging and a task in ring 3
// that enters the kernel by SYSENTER or INT 0x80, under page-table
// isolation off or on, and comes back to long mode and to Go. It is the
// x86_32 side of the experiment (Linux's entry_SYSENTER_32 and
// entry_INT80_32 under PTI, arch/x86/entry/entry_32.S), measured beside the
// 64-bit one of package pti.
//
// The 32-bit kernel is written in Go's 386 assembler (package
// i386pae/kernel32) and embedded as bytes (kernel32.bin, rebuilt by
// i386pae/mkblob and checked against a fresh build by the tests); the
// contract between the two sides is package i386pae/layout. PAE has no
// PCID: every CR3 write flushes the non-global TLB entries and reloads the
// four PDPTEs (SDM Vol. 3A, 4.4.1).
package i386pae

//go:generate go run ./mkblob -root ..

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/goos"
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/pti"
)

// blob is the 32-bit kernel's text: routines at the off* offsets of
// kernel32_sym.go, mapped at layout.Text.
//
//go:embed kernel32.bin
var blob []byte

// blobSymbol is a routine of the blob (kernel32_sym.go).
type blobSymbol struct {
	name      string
	off, size uint32
}

// Entry is the way a task enters the 32-bit kernel.
type Entry uint8

const (
	// Sysenter: SYSENTER through the vsyscall routine (Linux's
	// __kernel_vsyscall), back by SYSEXIT.
	Sysenter Entry = layout.EntrySysenter
	// Int80: INT 0x80 through a DPL-3 interrupt gate, back by IRET.
	Int80 Entry = layout.EntryInt80
)

var entryNames = [...]string{Sysenter: "sysenter", Int80: "int80"}

func (e Entry) String() string { return entryNames[e] }

// Copy is how the linux trampolines copy pt_regs between the entry stack
// and the task stack.
type Copy uint8

const (
	// Movsl: REP MOVSL both ways, the 17 words of pt_regs (the default).
	Movsl Copy = layout.CopyMovsl
	// Movsb: REP MOVSB both ways, 68 bytes.
	Movsb Copy = layout.CopyMovsb
	// Trim: REP MOVSL in; out only EFLAGS and EAX, 8 bytes, as Linux's
	// SYSEXIT path (the other registers come from the task stack before
	// the CR3 switch).
	Trim Copy = layout.CopyTrim
	// Direct: no copy in (pt_regs built on the task stack after the CR3
	// switch), out as Trim: Linux's entry_SYSENTER_32 as merged in 4.19.
	// Its instrumented variant counts the frame's build as the copy in.
	Direct Copy = layout.CopyDirect
)

var copyNames = [...]string{Movsl: "movsl", Movsb: "movsb", Trim: "trim8", Direct: "direct"}

func (c Copy) String() string { return copyNames[c] }

// Config is one configuration of the 32-bit kernel a task runs under.
type Config struct {
	// Mode is pti.Off or pti.On; pti.OnPCID is not supported: PCIDs exist
	// only in IA-32e mode (SDM Vol. 3A, 4.10.1).
	Mode  pti.Mode
	Entry Entry
	// Flavour is pti.Minimal (the mechanism alone) or pti.Linux (pt_regs
	// built on the entry stack and copied to the task stack and back, as
	// Linux's x86_32 entry under PTI).
	Flavour pti.Flavour
	// Copy is the linux flavour's copy method; INT 0x80 has Movsl only.
	Copy Copy
	// Stamps selects the instrumented linux SYSENTER trampoline, which
	// sums the TSC cycles of each phase (layout.Phase*) in Result.Phases.
	Stamps bool
	// Global makes the entry area and the kernel text global pages
	// (PTE.G with CR4.PGE): their TLB entries survive CR3 writes.
	Global bool
}

func (c Config) String() string {
	g := "nonglobal"
	if c.Global {
		g = "global"
	}
	f := c.Flavour.String()
	if c.Flavour == pti.Linux {
		f += "/" + c.Copy.String()
		if c.Stamps {
			f += "/stamps"
		}
	}
	return fmt.Sprintf("%v/%v/%s/%s", c.Mode, c.Entry, f, g)
}

// linuxSysenter are the blob offsets of the linux SYSENTER trampolines: [copy]
// [stamps][isolated] for the linux flavour.
var linuxSysenter = [4][2][2]uint32{
	Movsl:  {{offSysenterLinuxMovslOff, offSysenterLinuxMovslOn}, {offSysenterStampMovslOff, offSysenterStampMovslOn}},
	Movsb:  {{offSysenterLinuxMovsbOff, offSysenterLinuxMovsbOn}, {offSysenterStampMovsbOff, offSysenterStampMovsbOn}},
	Trim:   {{offSysenterLinuxTrimOff, offSysenterLinuxTrimOn}, {offSysenterStampTrimOff, offSysenterStampTrimOn}},
	Direct: {{offSysenterLinuxDirectOff, offSysenterLinuxDirectOn}, {offSysenterStampDirectOff, offSysenterStampDirectOn}},
}

// trampoline returns the blob offsets of c's SYSENTER trampoline and INT
// 0x80 gate target.
func trampoline(c Config) (sysenter, int80 uint32) {
	on := 0
	if c.Mode.Isolated() {
		on = 1
	}
	if c.Flavour == pti.Linux {
		st := 0
		if c.Stamps {
			st = 1
		}
		return linuxSysenter[c.Copy][st][on], [2]uint32{offInt80LinuxOff, offInt80LinuxOn}[on]
	}
	return [2]uint32{offSysenterMinimalOff, offSysenterMinimalOn}[on], [2]uint32{offInt80MinimalOff, offInt80MinimalOn}[on]
}

// ErrNotInPAE is returned for a configuration PAE paging cannot have.
var ErrNotInPAE = errors.New("not in PAE")

// Supported reports whether the CPU can run c.
func Supported(c Config) error {
	switch {
	case c.Mode == pti.OnPCID:
		return fmt.Errorf("%v: PCID: %w (PCIDs exist only in IA-32e mode)", c, ErrNotInPAE)
	case c.Entry == Sysenter && !amd64.Features.SEP:
		return fmt.Errorf("%v: SYSENTER: %w", c, pti.ErrUnsupported)
	case c.Global && !amd64.Features.PGE:
		return fmt.Errorf("%v: global pages: %w", c, pti.ErrUnsupported)
	case c.Copy > Direct || c.Flavour > pti.Linux:
		return fmt.Errorf("%v: no such trampoline", c)
	case c.Flavour == pti.Minimal && (c.Copy != Movsl || c.Stamps),
		c.Entry == Int80 && (c.Copy != Movsl || c.Stamps):
		return fmt.Errorf("%v: copy methods and stamps are the linux SYSENTER trampoline's", c)
	}
	return nil
}

// Program is a ring-3 program of the 32-bit world.
type Program uint8

const (
	// Syscalls times system calls (Params N, R, Nr, Arg, Entry).
	Syscalls Program = iota
	// Probe reads Params.Addr.
	Probe
	// Ping is the timing side of the ping-pong (tasks kernel): its
	// parameters in its data page (layout.ParamN, ParamR, ParamEntry,
	// ParamNoRDTSCP, ParamPingOut, ParamPingIn, ParamToken).
	Ping
	// Pong replies to ping: layout.ParamEntry, ParamPongIn, ParamPongOut,
	// ParamPongToken in its data page.
	Pong
	// MsgStart gives sched-messaging's start signal: EBX the ready pipe's
	// read descriptor, ECX the wake pipe's write descriptor, EDX the
	// tasks, ESI a buffer of that many bytes, EDI where to store the start
	// TSC. The messaging programs make their calls as ParamEntry says.
	MsgStart
	// MsgSender is a sched-messaging sender: EBX its group's first
	// receiver's write descriptor (the others follow), ECX the receivers,
	// EDX the loops, ESI the message, EDI its size, EBP the ready
	// descriptor | the wake descriptor << 16.
	MsgSender
	// MsgReceiver is a sched-messaging receiver: EBX its read descriptor,
	// ECX the messages, EDX their size, ESI a buffer, EDI where to store
	// the count and the sum (two 8-byte words), EBP as MsgSender's.
	MsgReceiver
)

// Params are a run's parameters, written to the task's data page.
type Params struct {
	N, R     uint32 // calls per repeat, repeats (at most layout.MaxRepeats)
	Nr, Arg  uint32 // the system call and its argument (EBX)
	Empty    bool   // time the loop without the system calls
	NoRDTSCP bool   // end stamps with LFENCE;RDTSC;LFENCE
	Addr     uint32 // Probe: the address to read
	// File runs the task under the tasks kernel (linux trampolines: see
	// NewTasks), its process with descriptor 3 open on a kernel file of
	// File bytes, for lseek; 0: without the tasks kernel.
	File uint32
}

// Result is how a run ended.
type Result struct {
	Reason uint32 // layout.ReasonExit or layout.ReasonFault
	Status uint32 // the exit status
	// The exception that ended the run, with ReasonFault.
	Vector, ErrorCode, EIP, CS, ESP, CR2 uint32
	// Cycles are the R TSC differences of a Syscalls run.
	Cycles []uint64
	// Value is what Probe read, or the last result of Syscalls' calls.
	Value uint32
	// Phases are the TSC cycles of each phase (layout.Phase*) summed over
	// the run's calls, with Config.Stamps.
	Phases [layout.PhaseCount]uint64
}

// FromUser reports whether the exception came from ring 3.
func (r Result) FromUser() bool { return r.CS&3 == 3 }

func (r Result) String() string {
	switch r.Reason {
	case layout.ReasonExit:
		return fmt.Sprintf("exit %d", r.Status)
	case layout.ReasonDeadlock:
		return "deadlock: every remaining task is blocked"
	case layout.ReasonFault:
	default:
		return fmt.Sprintf("unknown end %d", r.Reason)
	}
	ring := 0
	if r.FromUser() {
		ring = 3
	}
	return fmt.Sprintf("%s in ring %d (32-bit), error %#x, EIP %#x, CR2 %#x", amd64.VectorName(uint64(r.Vector)), ring, r.ErrorCode, r.EIP, r.CR2)
}

// descPtr is amd64.DescPtr (the LGDT/LIDT/SGDT/SIDT operand of long
// mode), named here so that its offsets reach switch_amd64.s through
// go_asm.h.
type descPtr = amd64.DescPtr

// saveArea is the 64-bit side's part of the per-CPU page, at
// layout.SaveArea: what run32 saves of the Go context and back64 restores,
// and what run32 loads.
type saveArea struct {
	GoRFLAGS, GoRSP, GoCR0, GoCR3, GoCR4, GoTR uint64
	GoFSBase, GoGSBase, GoKGSBase              uint64
	GoSysenterCS, GoSysenterESP, GoSysenterEIP uint64
	GoGDT, GoIDT                               descPtr

	RunSysenterCS, RunSysenterESP, RunSysenterEIP uint64
	RunGDT                                        descPtr // the 32-bit GDT at its physical address
	Enter32                                       uint64  // the physical address of enter32
}

// cpuData is layout.CPUData, declared here for go_asm.h.
type cpuData layout.CPUData

// Constants for switch_amd64.s.
const (
	saveAreaOff     = layout.SaveArea
	kernelCS32      = layout.KERNEL_CS
	kernelDS64      = amd64.KERNEL_DS
	msrSysenterCS   = amd64.MSR_IA32_SYSENTER_CS
	msrSysenterESP  = amd64.MSR_IA32_SYSENTER_ESP
	msrSysenterEIP  = amd64.MSR_IA32_SYSENTER_EIP
	msrFSBase       = amd64.MSR_FS_BASE
	msrGSBase       = amd64.MSR_GS_BASE
	msrKernelGSBase = amd64.MSR_KERNEL_GS_BASE
)

// The save area must fit in the page after CPUData.
var (
	_ [layout.SaveArea - unsafe.Sizeof(cpuData{})]byte
	_ [4096 - layout.SaveArea - unsafe.Sizeof(saveArea{})]byte
)

// run32 runs the prepared 32-bit world (see switch_amd64.s).
//
// defined in switch_amd64.s
func run32(cpu uint64)

// back64Addr returns the address of back64, where the 32-bit world comes
// back to long mode.
//
// defined in switch_amd64.s
func back64Addr() uint64

// tables is the 32-bit world's TableMemory: frames from goos's pool, the
// PDPT pairs below 4 GiB (CR3 is 32 bits in PAE mode).
type tables struct{ goos.PhysTables }

func (tables) NewTablePair() (uint64, bool) { return goos.AllocFramesIn(2, 2*4096, 0, 1<<32) }

// world is the 32-bit world's state: the kernel's frames, the shared
// code pages, the main process (of the single-task runs) and the pipes'
// rings.
var world struct {
	ready  bool
	kernel uint64 // physical address of the layout.KernelPages frames
	code   uint64 // the code pages every process shares
	main   *Process
	rings  []uint64 // physical addresses of the rings of pipes 0, 1, ...
}

// Setup allocates the kernel's frames (above the user window, below the
// pipes' window and the kernel window: their identity copy overlaps none
// of them), copies
// the blob into the text pages, and allocates the task's pages and copies
// the user text into its code pages. Call it once.
func Setup() error {
	if world.ready {
		return nil
	}
	if len(blob) != blobSize || len(blob) > layout.TextPages*4096 {
		return fmt.Errorf("i386pae: kernel32.bin is %d bytes, kernel32_sym.go says %d (at most %d)", len(blob), blobSize, layout.TextPages*4096)
	}
	k, ok := goos.AllocFramesIn(uint64(layout.KernelPages), 4096, layout.UserEnd, layout.PipeBase)
	if !ok {
		return errors.New("i386pae: no frames for the 32-bit kernel between 8 MiB and 3.75 GiB")
	}
	world.kernel = k
	copy(kernelPage(layout.Text, layout.TextPages), blob)

	if world.code, ok = goos.AllocFrames(layout.UserCodePages, 4096); !ok {
		return errors.New("i386pae: out of memory for the code pages")
	}
	user := blob[offUserText:offUserTextEnd]
	if len(user) > layout.UserCodePages*4096 {
		return errors.New("i386pae: the user text does not fit in the code pages")
	}
	place(goos.Frames(world.code, layout.UserCodePages), user)
	world.ready = true
	main, err := NewProcess()
	if err != nil {
		world.ready = false
		return err
	}
	world.main = main
	return nil
}

// place copies src into dst. It is a function of its own because Go
// 1.26.8's compiler panics ("disjointTypes: one of arguments is not a
// pointer") when it inlines a copy of a length it knows into memory from
// goos.Frames.
//
//go:noinline
func place(dst, src []byte) { copy(dst, src) }

// kernelPage returns n pages of the kernel window from va, as the 64-bit
// side sees them (through the identity map).
func kernelPage(va uint32, n int) []byte {
	return goos.Frames(world.kernel+uint64(va-layout.KernelBase), uint64(n))
}

// kernelVA returns the kernel-window address of the routine at blob
// offset off.
func kernelVA(off uint32) uint32 { return layout.Text + off }

// physical returns the physical address of the routine at blob offset off,
// where the mode switch runs it.
func physical(off uint32) uint64 {
	return world.kernel + (layout.Text - layout.KernelBase) + uint64(off)
}

// userVA returns the address of the user routine at blob offset off in the
// task's code pages.
func userVA(off uint32) uint32 { return layout.UserCode + off - offUserText }

// writeDescriptors fills the GDT, the TSS, the #DF TSS and the IDT for a
// run of c on the kernel PDPT kernelPDPT.
func writeDescriptors(c Config, kernelPDPT uint32) {
	desc := kernelPage(layout.Desc, 1)
	gdt := GDT(layout.Desc+layout.DescTSS, layout.Desc+layout.DescDFTSS)
	for i, d := range gdt {
		binary.LittleEndian.PutUint64(desc[layout.DescGDT+8*i:], d)
	}
	tss := (*TSS)(unsafe.Pointer(&desc[layout.DescTSS]))
	*tss = TSS{ESP0: layout.EntryStackTop, SS0: layout.KERNEL_DS, IOMap: TSSNoIOMap}
	df := (*TSS)(unsafe.Pointer(&desc[layout.DescDFTSS]))
	*df = TSS{
		CR3: kernelPDPT, EIP: kernelVA(offDoubleFault), EFLAGS: 2, ESP: layout.DFStackTop,
		CS: layout.KERNEL_CS, SS: layout.KERNEL_DS, DS: layout.KERNEL_DS, ES: layout.KERNEL_DS,
		IOMap: TSSNoIOMap,
	}
	for v := 0; v < 256; v++ {
		var g uint64
		switch {
		case v == amd64.VectorDF:
			g = TaskGate(layout.DOUBLEFAULT_TSS)
		case v < 32:
			g = InterruptGate(kernelVA(offExcEntries+16*uint32(v)), layout.KERNEL_CS, 0)
		case v == 0x80:
			_, off := trampoline(c)
			g = InterruptGate(kernelVA(off), layout.KERNEL_CS, 3)
		}
		binary.LittleEndian.PutUint64(desc[layout.DescIDT+8*v:], g)
	}
}

// Run runs program p in ring 3 of the 32-bit world under c with params,
// in the main process, and returns how it ended. Setup must have run.
func Run(c Config, p Program, params Params) (Result, error) {
	if !world.ready {
		return Result{}, errors.New("i386pae: Setup has not run")
	}
	if params.R > layout.MaxRepeats {
		return Result{}, fmt.Errorf("i386pae: %d repeats: at most %d", params.R, layout.MaxRepeats)
	}
	eip, ok := programEntry(p)
	if !ok || p != Syscalls && p != Probe {
		return Result{}, fmt.Errorf("i386pae: program %d does not run alone", p)
	}
	data := world.main.DataPages()[:4096]
	clear(data)
	put := func(off int, v uint32) { binary.LittleEndian.PutUint32(data[off:], v) }
	entry := uint32(c.Entry)
	if params.Empty {
		entry = layout.EntryNone
	}
	put(layout.ParamN, params.N)
	put(layout.ParamR, params.R)
	put(layout.ParamNr, params.Nr)
	put(layout.ParamArg, params.Arg)
	put(layout.ParamEntry, entry)
	if params.NoRDTSCP {
		put(layout.ParamNoRDTSCP, 1)
	}
	put(layout.ParamAddr, params.Addr)

	var r Result
	var err error
	if params.File != 0 {
		r, err = runWithFile(c, p, params.File)
	} else {
		r, err = start(c, world.main, eip, layout.UserStackTop, [6]uint32{}, false)
	}
	if err != nil {
		return r, err
	}
	r.Value = binary.LittleEndian.Uint32(data[layout.ParamValue:])
	if p == Syscalls && r.Reason == layout.ReasonExit {
		r.Cycles = make([]uint64, params.R)
		for i := range r.Cycles {
			r.Cycles[i] = binary.LittleEndian.Uint64(data[layout.ParamResults+8*i:])
		}
	}
	return r, nil
}

// start runs a task of process proc in ring 3 under c, from eip with its
// stack at esp and arguments args (EBX, ECX, EDX, ESI, EDI, EBP), and
// returns how the run ended; with tasks, the tasks kernel (its state
// prepared by the caller) answers the calls the assembly does not.
func start(c Config, proc *Process, eip, esp uint32, args [6]uint32, tasks bool) (Result, error) {
	if err := Supported(c); err != nil {
		return Result{}, err
	}
	cr4 := amd64.CR4()
	if cr4&amd64.CR4_PCIDE != 0 {
		return Result{}, errors.New("i386pae: CR4.PCIDE is set: long mode cannot be left (SDM Vol. 3A, 4.10.1)")
	}
	sp, err := proc.space(c.Mode.Isolated(), c.Global)
	if err != nil {
		return Result{}, err
	}
	writeDescriptors(c, uint32(sp.KernelPDPT))

	// The low PML4: the Go kernel's top-level entries, refreshed for each
	// run (the runtime may have added some).
	low := kernelPage(layout.LowPML4, 1)
	kpml4 := goos.KernelTable()
	copy(low, goos.Frames(kpml4.Root, 1))

	cpuPA := world.kernel + (layout.CPU - layout.KernelBase)
	page := kernelPage(layout.CPU, 1)
	clear(page)
	d := (*layout.CPUData)(unsafe.Pointer(&page[0]))
	d.KernelCR3 = uint32(sp.KernelPDPT)
	d.UserCR3 = uint32(sp.UserPDPT)
	// CR4 of the 32-bit world: Go's, with PGE when the CPU has it (the G
	// bits decide what is global), without TSD (ring 3 reads the TSC),
	// SMAP and FSGSBASE (64-bit only).
	run := cr4 &^ (amd64.CR4_PGE | amd64.CR4_TSD | amd64.CR4_SMAP | amd64.CR4_FSGSBASE)
	if amd64.Features.PGE {
		run |= amd64.CR4_PGE
	}
	d.CR4 = uint32(run)
	d.LowPML4 = uint32(world.kernel + (layout.LowPML4 - layout.KernelBase))
	d.Phys = uint32(cpuPA)
	d.HighEntry = kernelVA(offEnter32high)
	d.LeaveLow = uint32(physical(offLeave32low))
	back := back64Addr()
	d.Back64 = [2]uint32{uint32(back), uint32(back >> 32)}
	d.Far = [2]uint32{uint32(physical(offLanding64)), layout.KERNEL64_CS}
	d.SysexitEIP = userVA(offVsyscallRet)
	d.UserEIP = eip
	d.UserESP = esp
	d.Args = args
	d.GDT = [2]uint32{(layout.GDT_ENTRIES*8 - 1) << 16, layout.Desc + layout.DescGDT}
	d.IDT = [2]uint32{(256*8 - 1) << 16, layout.Desc + layout.DescIDT}
	d.GDTPhys = [2]uint32{d.GDT[0], uint32(world.kernel + (layout.Desc - layout.KernelBase) + layout.DescGDT)}
	if tasks {
		d.Tasks = 1
	}

	s := (*saveArea)(unsafe.Pointer(&page[layout.SaveArea]))
	s.RunSysenterCS = layout.KERNEL_CS
	s.RunSysenterESP = layout.EntryStackTop
	sysenter, _ := trampoline(c)
	s.RunSysenterEIP = uint64(kernelVA(sysenter))
	s.RunGDT.Limit = layout.GDT_ENTRIES*8 - 1
	s.RunGDT.Base = world.kernel + (layout.Desc - layout.KernelBase) + layout.DescGDT
	s.Enter32 = physical(offEnter32)

	run32(cpuPA)

	r := Result{
		Reason: d.Reason, Status: d.Status,
		Vector: d.Vector, ErrorCode: d.ErrorCode, EIP: d.FaultEIP, CS: d.FaultCS, ESP: d.FaultESP, CR2: d.FaultCR2,
	}
	for i, ph := range d.Phase {
		r.Phases[i] = uint64(ph[0]) | uint64(ph[1])<<32
	}
	return r, nil
}
