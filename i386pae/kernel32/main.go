//go:build 386 && !kernel32host

// Command kernel32 is ptilab's 32-bit kernel: the code that runs in
// protected mode with PAE paging, and the ring-3 programs of the 32-bit
// world. It is written in Go's 386 assembler, because the amd64 assembler
// encodes 64-bit instructions, and built as its own GOOS=linux GOARCH=386
// executable only to get the assembler's and the linker's output: the
// program never runs. i386pae/mkblob cuts this package's text out of the
// executable (kernel32.bin in package i386pae, embedded in the 64-bit
// image) and records each routine's offset in it.
//
// The text is position-independent: jumps and calls between routines are
// relative, and data is reached at the fixed addresses of
// i386pae/layout (the kernel window at layout.KernelBase, the task's pages
// at layout.UserBase), never through a symbol's address. So the bytes do
// not depend on where the linker put the package (which moves with the
// size of the Go runtime linked before it), and the 64-bit side can map
// them at layout.Text and run the mode-switch routines at their physical
// address.
package main

import (
	"unsafe"

	"github.com/ptilab/ptilab/exitstatus"
	"github.com/ptilab/ptilab/experiment/sites"
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/linuxabi"
)

// cpuData is layout.CPUData, declared here so that its offsets reach the
// assembly through go_asm.h.
type cpuData layout.CPUData

// ptRegs is Linux's i386 struct pt_regs (layout.PtRegs, linuxabi's): the
// frame the linux trampolines build on the entry stack and copy to the
// task stack, 17 words. An alias, so that go_asm.h gives its offsets
// (ptRegs_OrigAX ...).
type ptRegs = layout.PtRegs

// tss32 is layout.TSS, the 32-bit TSS, declared here so that its offsets
// reach the assembly through go_asm.h.
type tss32 layout.TSS

// kState and sample32 are layout.KState and layout.Sample, declared here so
// that their offsets reach the assembly through go_asm.h.
type (
	kState   layout.KState
	sample32 layout.Sample
)

// Constants for the assembly (go_asm.h). Addresses in the kernel window
// are given as negative numbers: the assembler takes 32-bit displacements
// as signed.
const (
	cpu                  = layout.CPU - 1<<32
	gdt                  = layout.Desc + layout.DescGDT - 1<<32
	entryStackTop        = layout.EntryStackTop - 1<<32
	kernelStackTop       = layout.KernelStackTop - 1<<32
	kernelCS             = layout.KERNEL_CS
	kernelDS             = layout.KERNEL_DS
	userCS               = layout.USER_CS
	userDS               = layout.USER_DS
	tssSel               = layout.TSS_SEL
	tssDesc              = gdt + layout.GDT_ENTRY_TSS*8
	dfTSSDesc            = gdt + layout.GDT_ENTRY_DOUBLEFAULT_TSS*8
	tss                  = layout.Desc + layout.DescTSS - 1<<32 // where the #DF task switch saves the interrupted task
	sysExit              = linuxabi.SYS_ia32_exit
	sysGetppid           = linuxabi.SYS_ia32_getppid
	sysWork              = linuxabi.SYS_ia32_ptilab_work
	sysSample            = layout.SysSample
	state                = layout.State - 1<<32
	maxSamples           = layout.MaxSamples
	sampleAPERF          = layout.SampleAPERF
	sampleSMI            = layout.SampleSMI
	sampleNMI            = layout.SampleNMI
	samplePMU            = layout.SamplePMU
	samplePMCs           = layout.SamplePMCs
	sampleSysenter       = layout.SampleSysenter
	msrAPERF             = layout.MSR_APERF
	msrMPERF             = layout.MSR_MPERF
	msrSMICount          = layout.MSR_SMI_COUNT
	sysKernelFault       = layout.SysKernelFault
	sysKernelDoubleFault = layout.SysKernelDoubleFault
	enosys               = linuxabi.ENOSYS
	reasonExit           = layout.ReasonExit
	reasonFault          = layout.ReasonFault
	ptiSwitchMask        = layout.PTISwitchMask
	ptRegsWords          = int(unsafe.Sizeof(ptRegs{})) / 4
	msrEFER              = layout.MSR_EFER
	eferLME              = layout.EFER_LME
	cr0PG                = layout.CR0_PG
	eflagsFixed          = layout.EFLAGS_FIXED
	eflagsTF             = layout.EFLAGS_TF
	eflagsNT             = layout.EFLAGS_NT
	eflagsAC             = layout.EFLAGS_AC
	vectorsWithErrorCode = layout.VectorsWithErrorCode
	rplMask              = layout.SelectorRPL
	tssBusy              = layout.TSSBusy
	descTypeByte         = layout.DescTypeByte
	vectorDF             = layout.VectorDF
	siteVERW             = sites.SiteVERW
	siteRetpoline        = sites.SiteRetpoline
	siteIBPB             = sites.SiteIBPB
	siteRSB              = sites.SiteRSB
	siteSwitch           = sites.SiteIBPB | sites.SiteRSB
	msrPredCmd           = layout.MSR_IA32_PRED_CMD
	predCmdIBPB          = layout.PRED_CMD_IBPB
	PhaseCR3In           = layout.PhaseCR3In
	PhaseCopyIn          = layout.PhaseCopyIn
	PhaseDispatch        = layout.PhaseDispatch
	PhaseCopyOut         = layout.PhaseCopyOut
	PhaseCR3Out          = layout.PhaseCR3Out
	PhaseCount           = layout.PhaseCount
	stampCalBlocks       = layout.StampCalBlocks
	stampBlockCalls      = layout.StampBlockCalls
	taskFrame            = kernelStackTop - ptRegsWords*4 // pt_regs on the task stack
	entryFrame           = entryStackTop - ptRegsWords*4  // pt_regs on the entry stack

	// The task's parameters and results (layout.Param*), at their
	// addresses.
	uN              = layout.UserData + layout.ParamN
	uR              = layout.UserData + layout.ParamR
	uNr             = layout.UserData + layout.ParamNr
	uArg            = layout.UserData + layout.ParamArg
	uEntry          = layout.UserData + layout.ParamEntry
	uNoRDTSCP       = layout.UserData + layout.ParamNoRDTSCP
	uRepeat         = layout.UserData + layout.ParamRepeat
	uSample         = layout.UserData + layout.ParamSample
	uStart          = layout.UserData + layout.ParamStart
	uAddr           = layout.UserData + layout.ParamAddr
	uValue          = layout.UserData + layout.ParamValue
	uResults        = layout.UserData + layout.ParamResults
	uPingOut        = layout.UserData + layout.ParamPingOut
	uPingIn         = layout.UserData + layout.ParamPingIn
	uToken          = layout.UserData + layout.ParamToken
	uPongIn         = layout.UserData + layout.ParamPongIn
	uPongOut        = layout.UserData + layout.ParamPongOut
	uPongTok        = layout.UserData + layout.ParamPongToken
	pingWriteFailed = exitstatus.PingWriteFailed
	pingReadFailed  = exitstatus.PingReadFailed
	pingBadReply    = exitstatus.PingBadReply
	pongWriteFailed = exitstatus.PongWriteFailed
	pongReadFailed  = exitstatus.PongReadFailed
	msgReadyFailed  = exitstatus.MsgReadyFailed
	msgWaitFailed   = exitstatus.MsgWaitFailed
	msgWriteFailed  = exitstatus.MsgWriteFailed
	msgReadFailed   = exitstatus.MsgReadFailed
	sysRead         = linuxabi.SYS_ia32_read
	sysWrite        = linuxabi.SYS_ia32_write
	sysClose        = linuxabi.SYS_ia32_close
)

// The routines, in the order of the text. Register contracts are with each
// routine in the .s files.

// Kernel text (entry_386.s).
func enter32()
func enter32high()
func leave32()
func leave32low()
func landing64()
func sysenterMinimalOff()
func sysenterMinimalOn()
func int80MinimalOff()
func int80MinimalOn()
func sysenterLinuxMovsbOff()
func sysenterLinuxMovsbOn()
func sysenterLinuxMovslOff()
func sysenterLinuxMovslOn()
func sysenterLinuxTrimOff()
func sysenterLinuxTrimOn()
func sysenterStampMovsbOff()
func sysenterStampMovsbOn()
func sysenterStampMovslOff()
func sysenterStampMovslOn()
func sysenterStampTrimOff()
func sysenterStampTrimOn()
func sysenterLinuxDirectOff()
func sysenterLinuxDirectOn()
func sysenterStampDirectOff()
func sysenterStampDirectOn()
func int80LinuxOff()
func int80LinuxOn()
func excEntries()
func doubleFault()
func nmi()
func nmiSwitch()
func nmiSwitch64()
func dispatch()

// For the tasks kernel's Go code (tasks.go): setCR3, rdtsc, endRun.

// The mitigated SYSENTER trampolines, last in the kernel text.
func sysenterMitigatedOff()
func sysenterMitigatedOn()

// User text (user_386.s): copied to the task's code pages.
func userText()
func vsyscall()
func vsyscallRet()
func userSyscalls()
func userProbe()
func userPing()
func userPong()
func userMsgStart()
func userMsgSender()
func userMsgReceiver()
func userTextEnd()

// main is never run: it makes the linker keep the routines, which
// nothing else calls. It lies in the blob, between package tasks/core's
// text and this package's (host/blob32), so it is go:nosplit (no
// stack check) and calls them directly: relative calls, no function
// values, whose addresses would be the executable's.
//
//go:nosplit
func main() {
	enter32()
	enter32high()
	leave32()
	leave32low()
	landing64()
	sysenterMinimalOff()
	sysenterMinimalOn()
	int80MinimalOff()
	int80MinimalOn()
	sysenterLinuxMovsbOff()
	sysenterLinuxMovsbOn()
	sysenterLinuxMovslOff()
	sysenterLinuxMovslOn()
	sysenterLinuxTrimOff()
	sysenterLinuxTrimOn()
	sysenterStampMovsbOff()
	sysenterStampMovsbOn()
	sysenterStampMovslOff()
	sysenterStampMovslOn()
	sysenterStampTrimOff()
	sysenterStampTrimOn()
	sysenterLinuxDirectOff()
	sysenterLinuxDirectOn()
	sysenterStampDirectOff()
	sysenterStampDirectOn()
	sysenterMitigatedOff()
	sysenterMitigatedOn()
	int80LinuxOff()
	int80LinuxOn()
	excEntries()
	doubleFault()
	nmi()
	nmiSwitch()
	nmiSwitch64()
	dispatch()
	userText()
	vsyscall()
	vsyscallRet()
	userSyscalls()
	userProbe()
	userPing()
	userPong()
	userMsgStart()
	userMsgSender()
	userMsgReceiver()
	userTextEnd()
	syscall32(nil)
}
