// Package layout is the contract between the 32-bit kernel (package
// i386pae/kernel32, built for GOARCH=386) and the 64-bit side that sets it
// up and enters it (package i386pae): the 32-bit world's virtual layout, its
// selectors (its system-call numbers and errno values are linuxabi's,
// which kernel32 uses as they are), the per-CPU data page both sides
// read and write, the 32-bit TSS, and the hardware numbers of package amd64
// the 32-bit kernel uses (it cannot import amd64; a test compares them).
// Both packages take their assembly's offsets from these declarations
// through go_asm.h; CPUData has only 32-bit fields, so its layout is the
// same for GOARCH=386 and GOARCH=amd64.
package layout

import (
	"unsafe"

	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/tasks/core"
)

// The 32-bit world's virtual layout (PAE paging, 4 GiB).
//
// A task's pages sit at UserBase, in the 4-8 MiB window (PDPT entry 0, PD
// entries 2 and 3), mirroring the 64-bit task's layout. The kernel sits at a
// fixed address at the top, KernelBase (PDPT entry 3, PD entries 508-511),
// like Linux's x86_32 fixmap and cpu_entry_area: its code reaches its data
// by absolute addresses. The kernel's frames (KernelPages contiguous ones,
// below 4 GiB) are also mapped at their physical addresses in the kernel
// tables, supervisor-only, for the switch into and out of long mode, which
// runs with paging off for a few instructions; they never overlap the user
// window or the kernel window.
const (
	UserBase       = 0x00400000
	UserCode       = UserBase + 0x1000   // the task's code (the user text of the blob), up to UserCodePages
	UserData       = UserBase + 0x10000  // the task's data: arguments, results, probe page
	UserStackTop   = UserBase + 0x100000 // the task's stack grows down from here
	UserEnd        = UserBase + 0x400000 // the end of the user window
	UserCodePages  = 4
	UserDataPages  = 16
	UserStackPages = 4

	KernelBase = 0xff800000
	// The entry area: mapped in the user tables too (supervisor-only) when
	// isolation is on.
	CPU           = KernelBase + 0x0000 // CPUData: per-CPU entry data (1 page)
	Desc          = KernelBase + 0x1000 // GDT (+DescGDT), TSS (+DescTSS), #DF TSS (+DescDFTSS), IDT (+DescIDT)
	EntryStack    = KernelBase + 0x2000 // the entry stack: SYSENTER_ESP and TSS.ESP0 (2 pages)
	EntryStackTop = KernelBase + 0x4000
	Text          = KernelBase + 0x4000 // the blob: entry text and kernel text (TextPages)
	TextPages     = 16
	// Kernel only.
	KernelStack    = KernelBase + 0x14000 // the kernel stack of system calls (2 pages)
	KernelStackTop = KernelBase + 0x16000
	DFStack        = KernelBase + 0x16000 // the #DF task's stack (1 page)
	DFStackTop     = KernelBase + 0x17000
	LowPML4        = KernelBase + 0x17000 // a PML4 below 4 GiB for the way back to long mode (1 page)
	State          = KernelBase + 0x18000 // the tasks kernel's state: KState (StatePages)
	StatePages     = uint32(unsafe.Sizeof(KState{})+4095) / 4096
	KernelPages    = (State-KernelBase)/4096 + StatePages

	// PipeBase is where the pipes' rings are mapped, PipeSize apart, in
	// every process's kernel side (kernel only).
	PipeBase = 0xf0000000

	EntryPages = (Text - KernelBase + TextPages*4096) / 4096 // CPU through the text

	DescGDT   = 0x000
	DescTSS   = 0x100
	DescDFTSS = 0x180
	DescIDT   = 0x800
)

// GDT layout: Linux's x86_32 one (arch/x86/include/asm/segment.h), so that
// selectors read as in Linux dumps and SYSENTER/SYSEXIT find what they
// need (SDM Vol. 2B, SYSENTER: SS = SYSENTER_CS+8; SYSEXIT: CS =
// SYSENTER_CS+16, SS = SYSENTER_CS+24, RPL 3), plus two entries ptilab uses
// to return to long mode at the selectors of the 64-bit GDT (amd64.KERNEL_CS
// and amd64.KERNEL_DS).
const (
	GDT_ENTRY_KERNEL64_CS     = 2
	GDT_ENTRY_KERNEL64_DS     = 3
	GDT_ENTRY_KERNEL_CS       = 12
	GDT_ENTRY_KERNEL_DS       = 13
	GDT_ENTRY_DEFAULT_USER_CS = 14
	GDT_ENTRY_DEFAULT_USER_DS = 15
	GDT_ENTRY_TSS             = 16
	GDT_ENTRY_DOUBLEFAULT_TSS = 31
	GDT_ENTRIES               = 32

	KERNEL64_CS     = GDT_ENTRY_KERNEL64_CS * 8       // 0x10
	KERNEL64_DS     = GDT_ENTRY_KERNEL64_DS * 8       // 0x18
	KERNEL_CS       = GDT_ENTRY_KERNEL_CS * 8         // 0x60
	KERNEL_DS       = GDT_ENTRY_KERNEL_DS * 8         // 0x68
	USER_CS         = GDT_ENTRY_DEFAULT_USER_CS*8 | 3 // 0x73
	USER_DS         = GDT_ENTRY_DEFAULT_USER_DS*8 | 3 // 0x7b
	TSS_SEL         = GDT_ENTRY_TSS * 8               // 0x80
	DOUBLEFAULT_TSS = GDT_ENTRY_DOUBLEFAULT_TSS * 8   // 0xf8
)

// Hardware numbers of the 32-bit kernel: package amd64's, which the 32-bit
// kernel cannot import (it builds for GOARCH=386, and amd64 has only amd64
// assembly); a test of package i386pae compares each with amd64's.
const (
	MSR_EFER     = 0xc0000080 // amd64.MSR_EFER
	EFER_LME     = 1 << 8     // amd64.EFER_LME
	CR0_PG       = 1 << 31    // amd64.CR0_PG
	EFLAGS_FIXED = 1 << 1     // amd64.RFLAGS_FIXED: a new task's EFLAGS, IF clear
	EFLAGS_TF    = 1 << 8     // amd64.RFLAGS_TF
	EFLAGS_NT    = 1 << 14    // amd64.RFLAGS_NT
	EFLAGS_AC    = 1 << 18    // amd64.RFLAGS_AC
	SelectorRPL  = 3          // amd64.SelectorRPL
	DescTypeByte = 5          // amd64.DescTypeByte
	TSSBusy      = 0x2        // amd64.TSSBusy
	VectorDF     = 8          // amd64.VectorDF
	// MSR_IA32_PRED_CMD and PRED_CMD_IBPB are amd64's: the mitigated
	// trampoline's IBPB.
	MSR_IA32_PRED_CMD = 0x49   // amd64.MSR_IA32_PRED_CMD
	PRED_CMD_IBPB     = 1 << 0 // amd64.PRED_CMD_IBPB
	// VectorsWithErrorCode is amd64.VectorsWithErrorCode: bit v set for
	// each exception vector v for which the CPU pushes an error code.
	VectorsWithErrorCode = 1<<8 | 1<<10 | 1<<11 | 1<<12 | 1<<13 | 1<<14 | 1<<17 | 1<<21 | 1<<29 | 1<<30
)

// Ways into the 32-bit kernel.
const (
	EntrySysenter = 0 // SYSENTER, back by SYSEXIT
	EntryInt80    = 1 // INT 0x80 through a DPL-3 gate, back by IRET
	EntryNone     = 2 // no system call: the empty loop
)

// Run end reasons (as package pti's: a test compares them).
const (
	ReasonExit  = 1 // the task exited
	ReasonFault = 2 // a CPU exception ended the run
)

// CPUData is the per-CPU entry data at CPU: what the entry code reads
// while only the entry area may be mapped, what the switch into and out of
// long mode needs, and how the run ended. The 64-bit side's save area
// (package i386pae) follows it in the same page, at SaveArea.
type CPUData struct {
	// Set by the 64-bit side before a run.
	KernelCR3 uint32    // the kernel side's PDPT (8 KiB aligned: bit 12 clear)
	UserCR3   uint32    // the user side's PDPT: KernelCR3 | 1<<12 with isolation, KernelCR3 without
	CR4       uint32    // CR4 in the 32-bit world: PAE, PGE when global pages are on
	LowPML4   uint32    // CR3 for the way back: a PML4 below 4 GiB sharing the Go kernel's mappings
	Phys      uint32    // the physical address of this page (of the kernel's first frame)
	HighEntry uint32    // the address of enter32high at Text
	LeaveLow  uint32    // the physical address of leave32low
	Handler   uint32    // the system-call path's handler table base: unused by the minimal flavour
	Back64    [2]uint32 // where the landing stub jumps in long mode: the Go image's back64 (low, high)
	Far       [2]uint32 // far pointer (m16:32) to the landing stub: physical address, then KERNEL64_CS
	UserEIP   uint32    // where the task starts
	UserESP   uint32    // the task's initial stack pointer
	// SysexitEIP is where SYSEXIT returns: the vsyscall routine's return
	// point in the task's code (Linux: the vDSO's __kernel_vsyscall).
	SysexitEIP uint32
	Args       [6]uint32 // the task's EBX, ECX, EDX, ESI, EDI, EBP at start
	// LGDT/LIDT operands: limit in the upper half of the first word, base
	// in the second; the operand is at the field's address + 2.
	GDT, IDT [2]uint32
	// GDTPhys is the LGDT operand of the GDT at its physical address, for
	// the way back: the far jump to KERNEL64_CS reads the GDT after the
	// kernel window is gone.
	GDTPhys [2]uint32

	// How the run ended.
	Reason, Status                                           uint32
	Vector, ErrorCode, FaultEIP, FaultCS, FaultESP, FaultCR2 uint32

	// The instrumented linux trampolines' TSC stamps: cycles summed over
	// the run's calls for each phase (low, high words), in the order of
	// the Phase* constants, how many times each phase was stamped (a call
	// that ends the task or returns by IRET stamps fewer), and the last
	// stamp.
	Phase     [PhaseCount][2]uint32
	PhaseN    [PhaseCount]uint32
	PhasePrev uint32
	// The stamps' own cost (set by the 64-bit side: StampCalOn, 0 for an
	// uninstrumented run): before the task starts, enter32high runs the
	// stamps of one call back to back, nothing between them,
	// StampCalBlocks blocks of StampBlockCalls times, summing each phase's
	// cycles in StampCal as the trampolines sum theirs in Phase, and moving
	// each block's sums to StampBlock. A block's sum over StampBlockCalls
	// is what one stamp adds to its phase: the stamp's own instructions
	// after its RDTSC, the next one's fences and RDTSC; the 64-bit side
	// takes the median over the blocks, so that a disturbance (an SMI, an
	// NMI) inflates one block's figure and not the cost.
	StampCalOn uint32
	StampCal   [PhaseCount][2]uint32
	StampCalNs [PhaseCount]uint32 // STAMP_TO's counts: StampCalBlocks*StampBlockCalls each
	StampBlock [StampCalBlocks][PhaseCount][2]uint32

	// Tasks is 1 when the tasks kernel answers the system calls the
	// assembly does not (linux trampolines only: it switches tasks by
	// their pt_regs frames).
	Tasks uint32

	// NMIs counts the NMIs the 32-bit kernel's handler took during the
	// run, SwitchNMIs those the switch IDT's handlers took in the mode
	// switches (the 64-bit side adds both to amd64's counter when it
	// returns).
	NMIs, SwitchNMIs uint32

	// The mode switches' NMI safety: while paging is off, and while the
	// IDT loaded is not the one of the mode the CPU is in, an NMI needs an
	// IDT, a handler and a stack at physical addresses, valid in legacy
	// protected mode and in IA-32e mode alike. SwitchIDT is that IDT (at
	// its physical address through SwitchIDTPtr, an LIDT operand as GDT's),
	// SwitchStack the stack top both switches run on (the #DF task's stack
	// at its physical address).
	SwitchIDT    [SwitchIDTSize / 4]uint32
	SwitchIDTPtr [2]uint32
	SwitchStack  uint32

	// The mitigated SYSENTER trampoline's. Set by the 64-bit side: Sites,
	// its knobs' site bits (package experiment/sites: the 32-bit kernel
	// tests const_siteX, each a TEST of its bit and a JEQ over its code
	// when clear); VerwSel, the selector VERW checks
	// (KERNEL_DS, as Linux's mds_verw_sel holds __KERNEL_DS); Dispatch,
	// dispatch's address, the retpoline's target. Its own: Loads, the
	// tasks kernel's KState.CR3Loads at the entry (a switch to another
	// process during the dispatch changes it); IBPBs and RSBFills, the
	// IBPBs and RSB stuffings it ran after such switches.
	Sites, VerwSel, Dispatch, Loads uint32
	IBPBs, RSBFills                 uint32
}

// SwitchIDTSize is the size of CPUData.SwitchIDT in bytes: NMI's gate of
// both formats, the 8-byte legacy one at 16 and the 16-byte IA-32e one at
// 32 (SDM Vol. 3A, 6.11 and 6.14.1).
const SwitchIDTSize = 48

// The stamps' calibration (CPUData.StampCalOn): StampCalBlocks blocks of
// StampBlockCalls calls' stamps, 1000 in all (about 60 µs on hardware).
const (
	StampCalBlocks  = 8
	StampBlockCalls = 125
)

// Phases of a system call through the instrumented linux trampolines,
// each from the stamp before it: the switch to the kernel side's CR3 (from
// the end of the register saves), the copy of pt_regs from the entry stack
// to the task stack, the dispatch, the copy back (or the 8 trimmed bytes),
// the switch to the user side's CR3.
const (
	PhaseCR3In = iota
	PhaseCopyIn
	PhaseDispatch
	PhaseCopyOut
	PhaseCR3Out
	PhaseCount
)

// How the linux trampolines copy pt_regs between the entry stack and the
// task stack (Linux x86_32 PTI, arch/x86/entry/entry_32.S,
// SWITCH_TO_KERNEL_STACK and SWITCH_TO_ENTRY_STACK).
const (
	CopyMovsl = 0 // REP MOVSL both ways (17 words)
	CopyMovsb = 1 // REP MOVSB both ways (68 bytes)
	CopyTrim  = 2 // REP MOVSL in; out only EFLAGS and EAX (8 bytes) to the entry stack, as Linux's SYSEXIT path
	// CopyDirect is Linux's entry_SYSENTER_32 as merged (4.19): pt_regs
	// built on the task stack after the CR3 switch (no copy in), the exit
	// as CopyTrim.
	CopyDirect = 3
)

// SaveArea is the offset in the CPU page of the 64-bit side's save area,
// above CPUData (checked at compile time below).
const SaveArea = 0x800

var _ [SaveArea - unsafe.Sizeof(CPUData{})]byte

// PTISwitchMask is what the trampolines OR into CR3 to go to the user
// side and clear to come back: bit 12, the upper PDPT of the 8 KiB pair
// (Linux x86_32: PTI_SWITCH_MASK).
const PTISwitchMask = 1 << 12

// SysKernelFault is ptilab's system call that faults in the 32-bit kernel
// on purpose (a read of address 0): its record must come back to the 64-bit
// side and the run go on.
const SysKernelFault = linuxabi.SYS_ia32_ptilab_kernel_fault

// SysKernelDoubleFault is ptilab's system call that double-faults in the
// 32-bit kernel on purpose (a #PF with the stack pointer on an unmapped
// page): the #DF task must bring the record back.
const SysKernelDoubleFault = linuxabi.SYS_ia32_ptilab_kernel_double_fault

// The task's parameters and results in its first data page (at UserData),
// byte offsets. The 64-bit side writes the parameters before a run and
// reads the results after it.
const (
	ParamN         = 0   // system calls per repeat
	ParamR         = 4   // repeats
	ParamNr        = 8   // the system call's number
	ParamArg       = 12  // its argument (EBX)
	ParamEntry     = 16  // EntrySysenter, EntryInt80 or EntryNone
	ParamNoRDTSCP  = 20  // 1: end stamps with LFENCE;RDTSC;LFENCE
	ParamRepeat    = 24  // the task's repeat counter
	ParamSample    = 28  // 0: no sample call (SysSample); SampleSysenter: by SYSENTER, else by INT 0x80, before each repeat and after the last
	ParamStart     = 32  // the repeat's start stamp (8 bytes)
	ParamAddr      = 40  // the probe's address
	ParamValue     = 44  // what the probe read
	ParamPingOut   = 48  // ping's write descriptor
	ParamPingIn    = 52  // ping's read descriptor
	ParamToken     = 56  // ping's token (3 bytes: the token, the reply, pong's mark)
	ParamPongIn    = 60  // pong's read descriptor
	ParamPongOut   = 64  // pong's write descriptor
	ParamPongToken = 68  // pong's buffer (2 bytes: the token, its mark)
	ParamResults   = 128 // R TSC deltas of 8 bytes
	MaxRepeats     = (4096 - ParamResults) / 8
)

// The tasks kernel of the 32-bit world: processes (each a PAE address
// space), threads sharing one, a FIFO run queue, pipes with Linux's
// semantics, AF_UNIX stream socket pairs and files for lseek. Its state,
// KState at State, is written by the 64-bit side before a run (the
// processes, tasks, pipes and files) and read after it (the counts); the
// kernel's Go code (package kernel32, tasks.go) runs the system calls on
// it. The rings, wait queues and scheduler decisions are package
// tasks/core's, which the 64-bit tasks kernel runs too: KState.Core.
const (
	MaxTasks   = core.MaxTasks
	MaxProcs   = 1024
	MaxPipes   = core.MaxPipes // pipes and socket pairs' channels (two each)
	MaxFDSlots = 16384         // descriptors of all processes: sched-messaging -g 25 has 14504
	MaxFiles   = 16
	PipeSize   = core.RingSize // a pipe's ring: Linux's default 16 pages; also each way of a socket pair

	NoTask = core.NoTask // an empty link
)

// Run end reasons of the tasks kernel, beside ReasonExit and ReasonFault.
const (
	ReasonDeadlock = 3 // tasks remain and every one is blocked
)

// PtRegs is Linux's i386 struct pt_regs (linuxabi.PtRegs32), 17 words, as
// the linux trampolines build it.
type PtRegs = linuxabi.PtRegs32

// Task is what the 32-bit world keeps of a task beside the core's
// (KState.Core.Tasks, by task).
type Task struct {
	Regs PtRegs // its registers while it does not run
	Proc uint32 // its process
	// 76 bytes, not 72: the compiler reaches Tasks[i].Proc by IMUL and a
	// load where a 72-byte stride takes two LEAs and a load, an
	// instruction more on every system call of the tasks kernel (lseek32's
	// path included, which must keep its length).
	_ uint32
}

// Proc is a process: its kernel side's CR3, its descriptors (NFDs slots
// of KState.FDSlots from FDBase) and where its data pages end. A descriptor is 0 when closed, else
// FDPipeRead+2*pipe, FDPipeWrite+2*pipe, FDSocket+channel or FDFile+file.
type Proc struct {
	Used, KernelCR3, Threads uint32
	FDBase, NFDs             uint32
	DataEnd                  uint32 // the end of its data pages (from UserData)
}

// Descriptor encodings.
const (
	FDPipeRead  = 1
	FDPipeWrite = 2
	// FDSocket+c is an endpoint of a socket pair that reads channel c
	// (a pipe slot) and writes channel c^1: between the pipes and the
	// files, so that lseek's ESPIPE covers both without a check more.
	FDSocket = 1 + 2*MaxPipes
	FDFile   = FDSocket + MaxPipes
)

// File is a kernel file for lseek: its position and size.
type File struct {
	Pos, Size uint32
}

// KState is the tasks kernel's state.
type KState struct {
	Core     core.Kernel // the running task, the run queue, the tasks' states, the pipes and sockets
	Loaded   uint32      // the process whose CR3 is loaded
	NTasks   uint32      // tasks made
	Switches uint32      // switches from one task to another
	CR3Loads uint32      // CR3 writes by the context switch
	EndTSC   [2]uint32
	NFiles   uint32
	// MappedRings is the pipe slots whose rings every process's kernel
	// side maps: socketpair(2) takes its two channels among them.
	MappedRings uint32
	Files       [MaxFiles]File
	// Rings are the pipe slots' rings, PipeSize bytes at PipeBase +
	// slot*PipeSize; 0 for a slot the run does not use.
	Rings    [MaxPipes]uint32
	Procs    [MaxProcs]Proc
	Tasks    [MaxTasks]Task
	NFDSlots uint32 // descriptor slots handed out
	FDSlots  [MaxFDSlots]uint32

	// The sample call's (SysSample; the 64-bit side sets them before
	// every run, tasks or not): the counters to read (SampleAPERF,
	// SampleSMI, SampleNMI, SamplePMU), how many samples are recorded,
	// the performance counters' MSRs read with SamplePMU (by Sample.PMC
	// slot, 0 for a slot not read), and the samples, each Sample's
	// counters as low, high words.
	SampleSrc, SampleN uint32
	SampleMSR          [SamplePMCs]uint32
	Samples            [MaxSamples]Sample
}

// Sample is cpustate.Sample in 32-bit words: IA32_APERF, IA32_MPERF,
// MSR_SMI_COUNT, the NMI count (CPUData.NMIs, the run's) and the
// performance counters KState.SampleMSR names, each low then high.
type Sample struct {
	APERF, MPERF, SMI, NMI [2]uint32
	PMC                    [SamplePMCs][2]uint32
}

// The sample call: its number, the counters it reads (cpustate.SampleAPERF,
// cpustate.SampleSMI, cpustate.SampleNMI and cpustate.SamplePMU's bits, the MSR numbers amd64's; a test of
// package i386pae compares them), and how many samples it records: one
// before each repeat of a timing program and one after its last.
const (
	SysSample     = linuxabi.SYS_ia32_ptilab_sample
	SampleAPERF   = 1 << 0
	SampleSMI     = 1 << 1
	SampleNMI     = 1 << 2
	SamplePMU     = 1 << 3 // the performance counters of KState.SampleMSR
	SamplePMCs    = 7      // cpustate.SamplePMCs: 3 fixed-function, 4 programmable
	MSR_APERF     = 0xe8
	MSR_MPERF     = 0xe7
	MSR_SMI_COUNT = 0x34
	MaxSamples    = MaxRepeats + 1
	// SampleSysenter is ParamSample's value for sample calls by SYSENTER
	// (through the vsyscall routine); 1 + EntryInt80 makes them by INT
	// 0x80. A timing loop's empty loop (ParamEntry EntryNone) samples by
	// its calls' entry, so that both loops' sample calls run the same
	// instructions (the PMU cross-check subtracts one from the other).
	SampleSysenter = 1 + EntrySysenter
)

// TSS is the 32-bit task-state segment (SDM Vol. 3A, 8.2.1, Figure 8-2),
// one uint32 per 4-byte slot. The selector fields (Link, SS0, SS1, SS2,
// ES, CS, SS, DS, FS, GS, LDT) use their low 16 bits, the upper ones are
// reserved. IOMap holds the T (debug trap) flag in bit 0 and the I/O map
// base, the offset of the I/O permission bitmap from the TSS's base, in
// its upper 16 bits; set it beyond the TSS's limit (i386pae.TSSNoIOMap)
// so that ring 3 has no I/O ports (SDM Vol. 1, 19.5.2, I/O Permission
// Bit Map).
type TSS struct {
	Link           uint32 // previous task link: the selector of the task that called this one
	ESP0, SS0      uint32 // the stack of ring 0: loaded on a change to ring 0
	ESP1, SS1      uint32
	ESP2, SS2      uint32
	CR3            uint32 // the task's PDPT: loaded on a task switch to it
	EIP, EFLAGS    uint32
	EAX, ECX       uint32
	EDX, EBX       uint32
	ESP, EBP       uint32
	ESI, EDI       uint32
	ES, CS, SS, DS uint32
	FS, GS         uint32
	LDT            uint32 // LDT segment selector
	IOMap          uint32 // T in bit 0, I/O map base in bits 31:16
}
