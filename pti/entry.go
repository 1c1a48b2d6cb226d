package pti

import (
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/linuxabi"
)

// nsys is the size of the system-call table of ring 3's kernel.
const nsys = 128

// System calls a task makes (linuxabi's x86-64 numbers).
const (
	SysRead    = linuxabi.SYS_read          // read(fd, buf, n), package tasks
	SysWrite   = linuxabi.SYS_write         // write(fd, buf, n), package tasks
	SysClose   = linuxabi.SYS_close         // close(fd), package tasks
	SysExit    = linuxabi.SYS_exit          // exit(status): the task is done
	SysGetppid = linuxabi.SYS_getppid       // the null call: returns 1
	SysWork    = linuxabi.SYS_ptilab_work   // ptilab's: spend RDI TSC cycles in the kernel, return 0
	SysSample  = linuxabi.SYS_ptilab_sample // ptilab's: record a cpustate.Sample (samples.go), return 0
	SysSecret  = linuxabi.SYS_ptilab_secret // ptilab's: read the oracle's secret in the kernel (oracle.go), return 0
	SysTouch   = linuxabi.SYS_ptilab_touch  // ptilab's: read a byte in each of RDI kernel pages from RSI, RDX apart (sweep.go), return 0
)

// ptRegs is Linux's x86-64 struct pt_regs, which the Linux-shaped
// trampolines build on the kernel stack: go_asm.h gives the assembly its
// field offsets (ptRegs_OrigAX ...).
type ptRegs = linuxabi.PtRegs

// enosys is what the trampolines answer for a number outside the table,
// negated, and what a Linux-shaped frame's RAX holds until the call
// returns (Linux: regs->ax = -ENOSYS).
const enosys = linuxabi.ENOSYS

// entryData is the per-CPU data page of the entry area (at EntryData): what
// the trampolines read and write while the kernel side's own memory may not
// be mapped, the run's setup, and the Go context restored at its end.
type entryData struct {
	UserRSP      uint64 // the task's RSP, saved on entry (Linux: TSS.sp2)
	TaskStackTop uint64 // the kernel stack of the system-call path (Linux: cpu_current_top_of_stack)
	KernelRoot   uint64 // the kernel side's PML4, PCID 0: loaded before CR4.PCIDE is set
	KernelCR3    uint64 // the kernel side's CR3
	UserCR3      uint64 // the user side's CR3
	RunCR4       uint64 // CR4 during the run (PGE, PCIDE)
	RunFSBase    uint64 // FS base during the run: goos's kernel TLS, for Go handlers
	Trampoline   uint64 // LSTAR during the run (the FRED entry's page with FRED)
	ToUser       uint64 // address of toUser (toUserFRED with FRED) in the entry text
	// UserCR4 is the CR4 toUser loads before the task starts, 0 to keep
	// RunCR4: a lass run's RunCR4 with LASS (lass.go), which enterUser
	// cannot load, since its own next fetch, in the lower half, would
	// then fault.
	UserCR4  uint64
	ExitRun  uint64 // address of runExit (kernel text)
	UserRIP  uint64 // where the task starts
	UserRSP0 uint64 // the task's initial stack pointer
	Args     [6]uint64

	RunGDT, RunIDT amd64.DescPtr

	// The FRED entry's (fred.go): IA32_FRED_CONFIG during the run, 0 when
	// the run does not enter by FRED (enterUser then leaves the FRED MSRs
	// alone), where the FRED ring-3 entries send an event that is not a
	// SYSCALL (the run's fredEvent copy), and where the linux ones go on
	// (the mode's FRED_LINUX_EXIT).
	FREDConfig, FREDEvent, FREDExit uint64
	// APIC is the local APIC's (xAPIC) base, for the test images'
	// self-NMI (selfnmi_on.go); 0 in every other image.
	APIC uint64

	// The NMI entry's: the address of the kernel's NMI counter
	// (amd64.NMICounterAddr, mapped on the kernel side), and what it ORs
	// into the interrupted CR3 when it writes it back (NOFLUSH with PCIDs).
	NMICounter, NMIRestore uint64

	// Go's context, saved by enterUser and restored by runExit.
	GoRSP, GoCR3, GoCR4, GoLSTAR, GoFSBase, GoGSBase, GoKernelGSBase, GoTR uint64
	GoGDT, GoIDT                                                           amd64.DescPtr

	// How the run ended.
	Reason, Status                                           uint64
	Vector, ErrorCode, FaultRIP, FaultCS, FaultRSP, FaultCR2 uint64

	Table [nsys]uint64 // the system-call table: kernel addresses

	// The sample call's (sysSample): the counters to read
	// (cpustate.SampleSources), the kernel buffer of samples, how many it
	// holds and how many the run recorded.
	SampleSrc, SampleBuf, SampleCap, SampleN uint64
	// The performance counters' MSRs it reads with cpustate.SamplePMU
	// (cpustate.SamplePMCMSRs widened), 0 for a slot not read.
	SampleMSR [cpustate.SamplePMCs]uint64

	// The fault recovery of the leak oracle (StartRecovering): while
	// Recovered < RecoverMax, a #PF from ring 3 does not end the run:
	// excCommon counts it in Recovered, keeps its CR2 and error code in
	// RecoverCR2 and RecoverError, and returns to ring 3 at RecoverRIP
	// with every register as it was at the fault. RecoverMax 0: every
	// exception ends the run.
	RecoverRIP, RecoverMax, Recovered, RecoverCR2, RecoverError uint64
	// Secret is the address of the oracle's secret that the secret call
	// (sysSecret) reads: the run's (StartRecovering), else the kernel's.
	Secret uint64

	// The deferred modes' (deferred.go): the dispatcher their trampolines
	// call (in the deferred entry text: DispatchOn or DispatchPCID), and
	// OnNoSwitch's table: per system call, where its handler's copy runs
	// on the user table (in EntryNoSwitchText), 0 for a call that switches
	// to the kernel table through the dispatcher.
	Dispatch uint64
	NoSwitch [nsys]uint64

	// The asi modes' (asi.go): while ASIHi is not 0, a ring-0 #PF of a
	// page not present, on the nonsensitive table (CR3 bit 12 set), at an
	// address in [ASILo, ASIHi) (the span of the sensitive blocks) is an
	// ASI fault: excCommon writes the sensitive table's CR3 (bit 12 and
	// the user PCID cleared, ASINoflush ORed in), counts it in
	// ASITransitions, sets ASISensitive and retries the access; the
	// return to ring 3 then writes the nonsensitive CR3 and clears
	// ASISensitive (TO_USER_ASI).
	ASILo, ASIHi, ASINoflush, ASISensitive, ASITransitions uint64
	// ASIActions are the actions that switch back runs (site bits of
	// experiment.Config.ASIActions: siteVERW, siteL1D, siteRSB), by a
	// call of asiActions, copied to ASIActionsAt; 0: no call.
	ASIActions, ASIActionsAt uint64

	// The mitigated trampoline's: the sites turned on (siteX bits), the
	// IA32_SPEC_CTRL values its IBRS sites write on entry and before the
	// return, and VERW's operand, the kernel data selector (Linux:
	// mds_verw_sel, __KERNEL_DS), here because the user side maps it.
	Sites, SpecCtrlEntry, SpecCtrlExit uint64
	VerwSel                            uint64
}

// Run end reasons.
const (
	ReasonExit     = 1 // the task (with package tasks: the last task) exited
	ReasonFault    = 2 // a CPU exception ended the run
	ReasonDeadlock = 3 // tasks remain and every one is blocked (package tasks)
	ReasonNoSwitch = 4 // a task would switch under a trampoline without a pt_regs frame
)

// dataBase is EntryData as a negative number: the trampolines address the
// entry area with absolute 32-bit displacements, which the CPU
// sign-extends.
const dataBase = EntryData - 1<<64

// eEntryStackTop is the entry stack's top, negative for the assembly's
// immediates. The assembly reaches entryData's fields at their absolute
// addresses, const_dataBase+entryData_X (go_asm.h).
const eEntryStackTop = EntryStackTop - 1<<64

// descPtr is amd64.DescPtr (the LGDT/LIDT/SGDT/SIDT operand), named here
// so that its offsets reach the assembly through go_asm.h
// (descPtr_Limit, the operand's address, and descPtr_Base).
type descPtr = amd64.DescPtr

// amd64's selectors, RFLAGS, MSR numbers, error-code vectors and routine
// end marker, and pti's CR3 mask, as local constants for the assembly
// (go_asm.h).
const (
	userCS            = amd64.USER_CS
	userDS            = amd64.USER_DS
	tssSel            = amd64.TSS_SEL
	userFlags         = amd64.RFLAGS_FIXED // a new task's RFLAGS: IF clear
	msrLSTAR          = amd64.MSR_LSTAR
	msrFSBase         = amd64.MSR_FS_BASE
	msrGSBase         = amd64.MSR_GS_BASE
	msrKernelGSBase   = amd64.MSR_KERNEL_GS_BASE
	cr4PGE            = amd64.CR4_PGE
	cr4LASSBit        = amd64.CR4_LASS_BIT
	rplMask           = amd64.SelectorRPL
	tssBusy           = amd64.TSSBusy
	descTypeByte      = amd64.DescTypeByte
	canonicalShift    = 64 - amd64.VirtualAddressBits // SHL then SAR by it leaves a canonical address as it was
	cr3NoflushBit     = CR3_NOFLUSH_BIT
	sysretUnsafeFlags = amd64.RFLAGS_TF | amd64.RFLAGS_RF // flags SYSRET must not restore (Linux: X86_EFLAGS_TF | X86_EFLAGS_RF)
	endMarker         = amd64.EndMarker
	ptiMask           = PTIUserMask
	msrAPERF          = amd64.MSR_IA32_APERF
	msrMPERF          = amd64.MSR_IA32_MPERF
	msrSMICount       = amd64.MSR_SMI_COUNT
	sampleAPERF       = cpustate.SampleAPERF
	sampleSMI         = cpustate.SampleSMI
	sampleNMI         = cpustate.SampleNMI
	samplePMU         = cpustate.SamplePMU
	samplePMCs        = cpustate.SamplePMCs
	vectorPF          = amd64.VectorPF
	pfP               = amd64.PF_P
	msrSpecCtrl       = amd64.MSR_IA32_SPEC_CTRL
	msrFlushCmd       = amd64.MSR_IA32_FLUSH_CMD
	flushCmdL1D       = amd64.FLUSH_CMD_L1D
)

// sample is cpustate.Sample, named here so that its size and offsets reach
// the assembly through go_asm.h (sample__size, sample_APERF ...).
type sample = cpustate.Sample

// entryData must fit in its page: this fails to compile otherwise.
var _ [4096 - unsafe.Sizeof(entryData{})]byte
