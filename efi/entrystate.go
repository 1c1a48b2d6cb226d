package efi

import "github.com/ptilab/ptilab/amd64"

// EntryState is the firmware's CPU state at the image entry point, for
// the cpu-state record: the control registers, EFER, the segment
// selectors (zero-extended), RFLAGS (its IF says whether the firmware ran
// with interrupts enabled, its DF should be clear) and TR. Recorded by
// enter before the kernel changes anything; then what enter changed so
// that SSE runs (enableSSE).
type EntryState struct {
	CR0, CR3, CR4, EFER        uint64
	CS, SS, DS, ES, FS, GS, TR uint64
	RFLAGS                     uint64

	// CR0Fixed and CR4Fixed are the bits of CR0 and CR4 that enableSSE
	// changed (CR0.MP set, CR0.EM and CR0.TS cleared, CR4.OSFXSR and
	// CR4.OSXMMEXCPT set): 0 where the firmware had SSE enabled, as
	// UEFI firmware must. FCW and MXCSR are the x87 FPU control word and
	// MXCSR as the firmware left them (UEFI 2.10, 2.3.4: 0x037F and
	// 0x1F80), read once SSE was enabled; enableSSE then loads those.
	CR0Fixed, CR4Fixed uint64
	FCW, MXCSR         uint32

	// Transit is the code selector the gate's switches pass through, and
	// whether the firmware's calls run on a copy of its GDT
	// (PlaceTransit); TransitPlaced is false until PlaceTransit placed
	// one, and stays false where it could not.
	Transit       amd64.Transit
	TransitPlaced bool
}

// SSE's control bits (SDM Vol. 3A, 13.1.3, "Initialization of the SSE
// Extensions"): CR0.MP set, CR0.EM clear (x87 instructions and SSE
// raise #UD or #NM otherwise), CR0.TS clear (#NM otherwise), CR4.OSFXSR
// (SSE instructions raise #UD without it) and CR4.OSXMMEXCPT set. UEFI
// 2.10, 2.3.4 ("x64 Platforms") requires CR0.EM and CR0.TS clear and
// MXCSR at 0x1F80 at the image entry point, and its calling convention
// passes floating-point values in XMM registers (2.3.4.2), but does not
// name CR0.MP nor the CR4 bits: U-Boot's x86-64 UEFI (2023.01) starts
// images with CR0 0x80000011 and CR4 0x20, SSE off.
const (
	cr0SSESet   = amd64.CR0_MP
	cr0SSEClear = amd64.CR0_EM | amd64.CR0_TS
	cr4SSESet   = amd64.CR4_OSFXSR | amd64.CR4_OSXMMEXCPT
	// cpuidSSE is CPUID.01H:EDX's FXSR (24), SSE (25) and SSE2 (26): the
	// Go runtime needs all three (GOAMD64=v1).
	cpuidSSE = 1<<24 | 1<<25 | 1<<26
	// mxcsrInit is the MXCSR that UEFI asks for at entry and a Linux
	// process starts with, as the x87 control word FNINIT loads
	// (0x037F): every exception masked, round to nearest.
	mxcsrInit = 0x1f80
	// statusUnsupported is what enter returns to the firmware when SSE
	// cannot be enabled.
	statusUnsupported = uint64(Unsupported)
)

// fwPCID is the PCID the test image's pretend firmware puts in CR3
// (firmwarePCIDE); cpuidPCID is CPUID.01H:ECX's PCID bit, cpuidPGE
// CPUID.01H:EDX's PGE bit, cr4PCIDE amd64.CR4_PCIDE and cr4PGE
// amd64.CR4_PGE, for the assembly.
const (
	fwPCID    = 1
	cpuidPCID = 1 << 17
	cpuidPGE  = 1 << 13
	cr4PCIDE  = amd64.CR4_PCIDE
	cr4PGE    = amd64.CR4_PGE
)

// pretendPCIDE sets CR4.PCIDE and CR4.PGE and loads CR3 with fwPCID
// where firmwarePCIDE is 1, the CPU has PCID and PGE and CR3[11:0] is 0;
// otherwise it does nothing. It changes RAX, RBX, RCX and RDX.
//
// defined in gate_amd64.s
func pretendPCIDE()

// mxcsrInitWord is mxcsrInit in memory, for LDMXCSR.
var mxcsrInitWord uint32 = mxcsrInit

// noSSEMessage is what enter writes on the firmware's console (ConOut)
// when SSE cannot be enabled and no Go code can run, before it returns
// Unsupported to the firmware. ASCII; noSSEText is its UTF-16 copy.
var noSSEMessage = "ptilab: cannot run: SSE cannot be enabled, and the Go runtime needs it (CPUID.01H:EDX lacks FXSR, SSE or SSE2, or CR0.MP, CR0.EM, CR0.TS, CR4.OSFXSR or CR4.OSXMMEXCPT did not take)"

var noSSEText [256]uint16

// enableSSE checks CPUID.01H:EDX for FXSR, SSE and SSE2, sets CR0.MP and
// CR4.OSFXSR and CR4.OSXMMEXCPT and clears CR0.EM and CR0.TS where the
// firmware left them otherwise, reads them back and records in Entry
// which bits changed; then records the firmware's x87 control word and
// MXCSR, and loads FNINIT's x87 state and MXCSR 0x1F80. Where SSE is
// missing or the bits do not take, it jumps to noSSE, which does not
// return. Called by enter after saveEntryState, before the first SSE
// instruction; it changes RAX, RBX (CPUID), RCX and RDX.
//
// defined in gate_amd64.s
func enableSSE()

// noSSE writes noSSEMessage through the firmware's ConOut (its console,
// a screen or a serial terminal: nothing else is set up yet) and returns
// Unsupported to the firmware from the entry point, with the registers
// the firmware entered with (fwctx). Jumped to by enableSSE. It does not
// write COM1 itself: where the firmware has a serial console, ConOut
// reaches it already (OVMF and U-Boot mirror ConOut onto COM1), and the
// line would be there twice.
//
// defined in gate_amd64.s
func noSSE()

// Entry is the firmware's state at entry.
var Entry EntryState

// msrEFER is amd64.MSR_EFER for the assembly (go_asm.h).
const msrEFER = amd64.MSR_EFER

// saveEntryState fills Entry from the CPU. Called by enter; it changes
// RAX, RCX and RDX only.
//
// defined in gate_amd64.s
func saveEntryState()
