// Package amd64 holds the long-mode CPU primitives of ptilab: CPUID, MSRs,
// control registers, port I/O, the TSC, descriptor-table encodings and the
// 4-level paging structures.
//
// Everything here runs in ring 0 and is safe to call from kernel mode (on a
// kernel stack, before the Go runtime starts or inside the system-call
// handler): no function allocates or writes a heap pointer.
//
// Each assembly function is declared here without a body; its register
// contract is the Go ABI0 one unless the comment says otherwise. The manual
// references are to the Intel 64 and IA-32 Architectures Software
// Developer's Manual (SDM).
package amd64

import "unsafe"

// CPUID executes CPUID with EAX=leaf and ECX=subleaf (SDM Vol. 2A, CPUID).
//
// defined in cpu_amd64.s
func CPUID(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

// RDMSR reads model-specific register msr (SDM Vol. 2B, RDMSR). An MSR the
// CPU lacks raises #GP: use ReadMSRSafe for MSRs that may be absent.
//
// defined in cpu_amd64.s
func RDMSR(msr uint32) uint64

// WRMSR writes model-specific register msr (SDM Vol. 2B, WRMSR).
//
// defined in cpu_amd64.s
func WRMSR(msr uint32, val uint64)

// rdmsrSafe and wrmsrSafe are RDMSR and WRMSR whose #GP is survivable: if
// the instruction faults, the kernel's #GP handler (see SafeMSRFixup) skips
// it and sets R8 to 1, and the function returns ok=false.
//
// defined in cpu_amd64.s
func rdmsrSafe(msr uint32) (val uint64, ok bool)
func wrmsrSafe(msr uint32, val uint64) (ok bool)

// safeMSRStart returns the addresses of rdmsrSafe's and wrmsrSafe's first
// instructions.
//
// defined in cpu_amd64.s
func safeMSRStart() (rd, wr uintptr)

// safeMSRSize bounds the length of rdmsrSafe and wrmsrSafe in bytes: the
// fix-up applies only to the instruction inside [start, start+safeMSRSize).
const safeMSRSize = 64

// ReadMSRSafe reads msr and reports whether the CPU let it. It needs the
// kernel's #GP handler to call SafeMSRFixup.
func ReadMSRSafe(msr uint32) (uint64, bool) { return rdmsrSafe(msr) }

// WriteMSRSafe writes msr and reports whether the CPU let it.
func WriteMSRSafe(msr uint32, val uint64) bool { return wrmsrSafe(msr, val) }

// SafeMSRFixup is called by the #GP handler with the faulting RIP and the
// first two bytes there. When the fault is the RDMSR of ReadMSRSafe or the
// WRMSR of WriteMSRSafe it returns the RIP to resume at and true; the
// handler must then set R8 to 1.
func SafeMSRFixup(rip uintptr, op0, op1 byte) (uintptr, bool) {
	rd, wr := safeMSRStart()
	switch {
	case rip >= rd && rip < rd+safeMSRSize && op0 == 0x0f && op1 == 0x32:
	case rip >= wr && rip < wr+safeMSRSize && op0 == 0x0f && op1 == 0x30:
	default:
		return 0, false
	}
	return rip + 2, true
}

// RDTSC reads the time-stamp counter, unserialized (SDM Vol. 2B, RDTSC).
//
// defined in cpu_amd64.s
func RDTSC() uint64

// TSCBegin reads the TSC at the start of a timed region: LFENCE; RDTSC, so
// that earlier instructions have completed (SDM Vol. 3B, 18.17).
//
// defined in cpu_amd64.s
func TSCBegin() uint64

// TSCEndL reads the TSC at the end of a timed region without RDTSCP:
// LFENCE; RDTSC; LFENCE.
//
// defined in cpu_amd64.s
func TSCEndL() uint64

// Pause executes PAUSE, the spin-wait hint.
//
// defined in cpu_amd64.s
func Pause()

// Halt executes CLI; HLT in a loop: the CPU stops for good.
//
// defined in cpu_amd64.s
func Halt()

// DisableInterrupts executes CLI.
//
// defined in cpu_amd64.s
func DisableInterrupts()

// Control registers (SDM Vol. 3A, 2.5).
//
// defined in cpu_amd64.s
func CR0() uint64
func CR2() uint64
func CR3() uint64
func CR4() uint64
func SetCR0(v uint64)
func SetCR3(v uint64)
func SetCR4(v uint64)

// RFLAGS returns the flags register.
//
// defined in cpu_amd64.s
func RFLAGS() uint64

// INVLPG invalidates the TLB entries for the page holding va (SDM Vol. 2A,
// INVLPG).
//
// defined in cpu_amd64.s
func INVLPG(va uintptr)

// RDRAND returns a hardware random number and whether the CPU produced one
// (CF=1) within 10 tries (SDM Vol. 1, 7.3.17).
//
// defined in cpu_amd64.s
func RDRAND() (uint64, bool)

// RDSEED is RDRAND's entropy-source counterpart.
//
// defined in cpu_amd64.s
func RDSEED() (uint64, bool)

// XGETBV returns extended control register xcr (0: XCR0, the state
// components XSAVE manages; SDM Vol. 2C, XGETBV). CR4.OSXSAVE must be set.
//
// defined in cpu_amd64.s
func XGETBV(xcr uint32) uint64

// xrstor executes XRSTOR64 from the 64-byte aligned XSAVE area at p with
// EDX:EAX = mask (SDM Vol. 2C, XRSTOR). CR4.OSXSAVE must be set.
//
// defined in cpu_amd64.s
func xrstor(p uintptr, mask uint64)

// xinit is an XSAVE area (legacy region, 512 bytes, and XSAVE header, 64
// bytes; SDM Vol. 1, 13.4) with room for 64-byte alignment: a header
// whose XSTATE_BV and XCOMP_BV are 0, so that XRSTOR puts every
// requested component in its initial configuration, and the legacy
// region's MXCSR (offset 24) at its power-on value, which XRSTOR loads
// whenever the mask names SSE or AVX (SDM Vol. 1, 13.8.1).
var xinit [512 + 64 + 63]byte

// mxcsrInit is MXCSR's value after reset: all exceptions masked.
const mxcsrInit = 0x1f80

// InitXState puts every state component that XCR0 enables (x87, SSE, AVX
// and, where enabled, AVX-512 and the rest) in its initial configuration
// by an XRSTOR whose header says "all in init" (SDM Vol. 1, 13.6 and
// 13.8.1): among others, the upper halves of the YMM registers become
// clean. Firmware that ran with CR4.OSXSAVE may leave them dirty, and on
// Skylake dirty upper state makes every later SSE instruction slower, for
// good once CR4.OSXSAVE is cleared (VZEROUPPER then raises #UD). It
// returns XCR0. CR4.OSXSAVE must be set.
func InitXState() uint64 {
	off := -uintptr(unsafe.Pointer(&xinit)) & 63
	area := (*[512 + 64]byte)(xinit[off:])
	for i := range area {
		area[i] = 0
	}
	area[24], area[25] = mxcsrInit&0xff, mxcsrInit>>8
	xcr0 := XGETBV(0)
	xrstor(uintptr(unsafe.Pointer(area)), xcr0)
	return xcr0
}

// FXSAVE stores the x87/SSE state into the 512-byte, 16-byte aligned area
// at p (SDM Vol. 2A, FXSAVE).
//
// defined in cpu_amd64.s
func FXSAVE(p uintptr)

// Port I/O (SDM Vol. 1, 19.2).
//
// defined in cpu_amd64.s
func In8(port uint16) uint8
func In16(port uint16) uint16
func In32(port uint16) uint32
func Out8(port uint16, v uint8)
func Out16(port uint16, v uint16)
func Out32(port uint16, v uint32)

// Memory-mapped I/O: one access of exactly the width named at the
// identity-mapped physical address addr, never merged, split, hoisted out
// of a loop or left out by the compiler (a device register, such as a
// 16550's line status, changes under the CPU).
//
// defined in cpu_amd64.s
func MMIORead8(addr uintptr) uint8
func MMIORead16(addr uintptr) uint16
func MMIORead32(addr uintptr) uint32
func MMIOWrite8(addr uintptr, v uint8)
func MMIOWrite16(addr uintptr, v uint16)
func MMIOWrite32(addr uintptr, v uint32)

// Load reads the 8 bytes at addr: a way to touch an arbitrary address on
// purpose (the deliberate-fault tests use it; Go code cannot name such an
// address without the compiler's nil checks getting in the way).
//
// defined in cpu_amd64.s
func Load(addr uintptr) uint64

// MSR numbers (SDM Vol. 4, Table 2-2).
const (
	MSR_IA32_BIOS_SIGN_ID = 0x0000008b // microcode revision in EDX after CPUID(1)
	MSR_IA32_SYSENTER_CS  = 0x00000174
	MSR_IA32_SYSENTER_ESP = 0x00000175
	MSR_IA32_SYSENTER_EIP = 0x00000176
	MSR_IA32_PAT          = 0x00000277
	MSR_EFER              = 0xc0000080
	MSR_STAR              = 0xc0000081
	MSR_LSTAR             = 0xc0000082
	MSR_CSTAR             = 0xc0000083
	MSR_SFMASK            = 0xc0000084
	MSR_FS_BASE           = 0xc0000100
	MSR_GS_BASE           = 0xc0000101
	MSR_KERNEL_GS_BASE    = 0xc0000102
	MSR_TSC_AUX           = 0xc0000103
	EFER_SCE              = 1 << 0  // SYSCALL enable
	EFER_LME              = 1 << 8  // long mode enable
	EFER_LMA              = 1 << 10 // long mode active
	EFER_NXE              = 1 << 11 // execute-disable bit enable
)

// Control-register bits (SDM Vol. 3A, 2.5).
const (
	CR0_PE         = 1 << 0
	CR0_MP         = 1 << 1
	CR0_EM         = 1 << 2
	CR0_TS         = 1 << 3
	CR0_WP         = 1 << 16
	CR0_PG         = 1 << 31
	CR4_TSD        = 1 << 2
	CR4_PAE        = 1 << 5
	CR4_PGE        = 1 << 7
	CR4_OSFXSR     = 1 << 9
	CR4_OSXMMEXCPT = 1 << 10
	CR4_LA57       = 1 << 12 // 5-level paging
	CR4_FSGSBASE   = 1 << 16
	CR4_PCIDE      = 1 << 17
	CR4_OSXSAVE    = 1 << 18
	CR4_SMEP       = 1 << 20
	CR4_SMAP       = 1 << 21
	CR4_CET        = 1 << 23 // control-flow enforcement technology
)

// CR3 with CR4.PCIDE = 1 (SDM Vol. 3A, 4.5, Table 4-13, and 4.10.4.1): a
// MOV to CR3 whose bit 63 is set keeps the TLB entries of the PCID it
// loads (bit 63 itself is not stored).
const (
	CR3_NOFLUSH_BIT = 63
	CR3_NOFLUSH     = 1 << CR3_NOFLUSH_BIT
)

// XCR0 state-component bits (SDM Vol. 1, 13.1): XCR0_AVX is the upper
// halves of YMM0-15.
const (
	XCR0_X87 = 1 << 0
	XCR0_SSE = 1 << 1
	XCR0_AVX = 1 << 2
)

// RefusedCR4 names the first CR4 bit in cr4 that ptilab cannot run with,
// "" when there is none: CR4.LA57 (5-level paging: CR3 would name a PML5,
// and ptilab builds 4-level tables; the bit can change only with paging
// off, SDM Vol. 3A, 4.1.1) and CR4.CET (supervisor shadow stacks and
// indirect-branch tracking, SDM Vol. 1, 18: ptilab's code has no ENDBR64
// and switches stacks by hand). Firmware of CPUs newer than the reference
// boxes may leave either set.
func RefusedCR4(cr4 uint64) string {
	switch {
	case cr4&CR4_LA57 != 0:
		return "CR4.LA57 (5-level paging)"
	case cr4&CR4_CET != 0:
		return "CR4.CET (control-flow enforcement)"
	}
	return ""
}

// RFLAGS bits (SDM Vol. 1, 3.4.3). RFLAGS_FIXED is bit 1, reserved and
// always 1 (Linux: X86_EFLAGS_FIXED): the RFLAGS of a new ring-3 task is
// RFLAGS_FIXED alone (interrupts masked).
const (
	RFLAGS_CF    = 1 << 0
	RFLAGS_FIXED = 1 << 1
	RFLAGS_TF    = 1 << 8
	RFLAGS_IF    = 1 << 9
	RFLAGS_DF    = 1 << 10
	RFLAGS_IOPL  = 3 << 12
	RFLAGS_NT    = 1 << 14
	RFLAGS_RF    = 1 << 16
	RFLAGS_AC    = 1 << 18
)

// LoadGDT executes LGDT on p (SDM Vol. 2A, LGDT).
//
// defined in cpu_amd64.s
//
//go:noescape
func LoadGDT(p *DescPtr)

// LoadIDT executes LIDT on p.
//
// defined in cpu_amd64.s
//
//go:noescape
func LoadIDT(p *DescPtr)

// LoadTR executes LTR with selector sel; the TSS descriptor must be marked
// available (not busy), or LTR raises #GP.
//
// defined in cpu_amd64.s
func LoadTR(sel uint16)

// FSGSSelectors returns the FS and GS selectors (not their bases).
//
// defined in cpu_amd64.s
func FSGSSelectors() (fs, gs uint16)

// LoadSegments reloads CS with cs (by a far return) and DS, ES and SS with
// ds. FS and GS are left alone: their bases belong to the Go runtime and the
// kernel.
//
// defined in cpu_amd64.s
func LoadSegments(cs, ds uint16)
