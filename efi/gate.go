package efi

import (
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
)

// descPtr is amd64.DescPtr (the LGDT/LIDT operand), named in this package
// so that its offsets reach the assembly through go_asm.h.
type descPtr = amd64.DescPtr

// context is one side's CPU state across a gate crossing: the firmware's as
// it was at the image entry point (fwctx), and the kernel's while it is in
// a firmware call (kctx). Segment selectors are zero-extended; XMM holds
// XMM6-XMM15, callee-saved in the Microsoft x64 calling convention (UEFI
// 2.10, 2.3.4.2).
type context struct {
	RSP, RBX, RBP, RDI, RSI, R12, R13, R14, R15 uint64
	RFLAGS, CR3, CR4                            uint64
	GDT, IDT                                    descPtr
	CS, SS, DS, ES, TR                          uint64
	FSBase, GSBase                              uint64
	XMM                                         [20]uint64
}

var (
	fwctx context // the firmware's state at entry
	kctx  context // the kernel's state during a firmware call
)

// maxArgs is the most arguments a firmware function takes through Call.
const maxArgs = 10

// amd64's MSR numbers and descriptor fields, for the assembly (go_asm.h).
const (
	msrFSBase     = amd64.MSR_FS_BASE
	msrGSBase     = amd64.MSR_GS_BASE
	selectorFlags = amd64.SelectorRPL | amd64.SelectorTI // a selector less its index
	tssBusy       = amd64.TSSBusy
	descTypeByte  = amd64.DescTypeByte
	rflagsIF      = amd64.RFLAGS_IF
)

// NMIs inside firmware calls. The firmware's own NMI handler does not
// return (OVMF prints "X64 Exception Type - 02(NMI Interrupt)" and loops),
// so the gate runs every firmware call with fwIDT: a copy of the
// firmware's IDT whose NMI gate points at amd64's counting handler on the
// firmware's code selector, without an IST (the firmware need not have a
// TSS). Every other vector stays the firmware's.
var (
	fwIDT    [256]amd64.Gate
	fwIDTPtr descPtr
	// fwCodeMapped is set while the firmware's CS names 64-bit ring-0 code
	// in the kernel's GDT too: in the firmware's own GDT, which the kernel
	// runs on until it loads its own, and in ptilab's GDT when
	// SetFirmwareCodeMapped says PlaceFirmwareCode put it there. The gate
	// then switches CS before the GDT, so that every intermediate state
	// names valid segments (see TO_FIRMWARE).
	fwCodeMapped = true
	// fwAVXUpper is set when the firmware runs with AVX enabled (its CR4
	// has OSXSAVE, its XCR0 the AVX state) while the kernel runs without:
	// the gate then executes VZEROUPPER after each firmware call, still
	// under the firmware's CR4, so that AVX code in the firmware (a vendor
	// memory copy, say) leaves no dirty YMM upper halves behind, which
	// would slow every later SSE instruction (Intel's optimization manual,
	// "Mixing AVX code with SSE code") and which nothing can clean once
	// OSXSAVE is clear again (VZEROUPPER is #UD then).
	fwAVXUpper uint8
)

// SetFirmwareAVX tells the gate that the firmware runs with AVX enabled
// and the kernel without (goos boot clears CR4.OSXSAVE): see fwAVXUpper.
func SetFirmwareAVX(on bool) {
	fwAVXUpper = 0
	if on {
		fwAVXUpper = 1
	}
}

// syncFirmwareIDT copies the firmware's IDT (as it was at entry: at most
// 256 gates) into fwIDT and points its NMI gate at amd64's NMI handler on
// the firmware's CS. Call runs it before every call, so that a gate the
// firmware changed in its own table since is carried over.
func syncFirmwareIDT() {
	const nmi = amd64.VectorNMI
	n := min((int(fwctx.IDT.Limit)+1)/16, len(fwIDT))
	fwIDT[nmi] = amd64.InterruptGate(amd64.NMIEntryPC(), uint16(fwctx.CS), 0, 0, amd64.TypeInterruptGate)
	if fwctx.IDT.Base != 0 {
		// Around the NMI gate, never over it: fwIDT may be the IDT loaded.
		fw := (*[256]amd64.Gate)(Pointer(fwctx.IDT.Base))
		copy(fwIDT[:min(n, nmi)], fw[:min(n, nmi)])
		if n > nmi+1 {
			copy(fwIDT[nmi+1:n], fw[nmi+1:n])
		}
	}
	fwIDTPtr.Limit = uint16(max(n, nmi+1)*16 - 1)
	fwIDTPtr.Base = addr(&fwIDT)
}

// CountFirmwareNMIs loads fwIDT (see syncFirmwareIDT) in place of the
// firmware's IDT, which the kernel runs on at boot until it loads its own:
// from then on an NMI is counted instead of ending in the firmware's
// handler. Call it first thing at boot, on the firmware's GDT and CS.
func CountFirmwareNMIs() {
	syncFirmwareIDT()
	amd64.LoadIDT(&fwIDTPtr)
}

// FirmwareCode returns the firmware's code selector at the image entry
// point and its descriptor in the firmware's GDT (0 when the selector is
// beyond the GDT's limit or in an LDT).
func FirmwareCode() (sel uint16, desc uint64) {
	sel = uint16(fwctx.CS)
	off := uint64(sel &^ (amd64.SelectorRPL | amd64.SelectorTI))
	if sel&amd64.SelectorTI != 0 || off+7 > uint64(fwctx.GDT.Limit) {
		return sel, 0
	}
	return sel, Read64(fwctx.GDT.Base + off)
}

// SetFirmwareCodeMapped tells the gate whether the firmware's CS names
// 64-bit ring-0 code in the GDT the kernel now runs on
// (amd64.PlaceFirmwareCode). Without it the gate switches GDT and CS
// together as fast as it can, and an NMI in between is not survivable.
func SetFirmwareCodeMapped(ok bool) { fwCodeMapped = ok }

// enter records the firmware's state at the image entry point (UEFI 2.10,
// 4.1: RCX = image handle, RDX = system table, the firmware's stack with
// the return address at 0(SP)) and enables SSE where the firmware left it
// off (enableSSE; where it cannot, it returns Unsupported to the firmware
// itself, noSSE). The PE entry point must CALL it before it changes any
// register but RSP, and run no SSE instruction before; on return only
// RAX, RBX, RCX and RDX are changed, and the x87 and MXCSR are in their
// initial state.
//
// defined in gate_amd64.s
func enter()

// call invokes fn with the maxArgs arguments at args under the Microsoft
// x64 calling convention, in the firmware's environment: its stack (below
// the RSP it entered the image with), GDT, TR, CR3 and interrupt flag, and
// fwIDT (the firmware's IDT but for the NMI gate).
// It restores the caller's environment, with interrupts masked, and returns
// RAX.
//
// defined in gate_amd64.s
//
//go:noescape
func call(fn uint64, args *[maxArgs]uint64) uint64

// exit frees the pages recorded in claims, restores the firmware's state at
// entry and returns status to the firmware, as if the entry point returned
// (UEFI 2.10, 7.4.1 StartImage). It runs the FreePages calls with fwIDT
// and loads the firmware's own IDT just before it returns. It does not
// return.
//
// defined in gate_amd64.s
func exit(status uint64)

// Kernel stack bounds: Call refuses to run on any other stack, since a
// pointer to a local variable is then not an address the firmware can use.
var kstackLo, kstackHi uintptr

// SetKernelStack declares [lo, hi) as the stacks kernel code runs on, all
// identity-mapped. Until it is called, Call runs on any stack (the entry
// code runs on the firmware's identity-mapped stack).
func SetKernelStack(lo, hi uintptr) { kstackLo, kstackHi = lo, hi }

// Call calls the firmware function at fn with up to maxArgs arguments and
// returns its RAX. Pointer arguments must be identity-mapped addresses:
// locals of kernel code, the image's data, firmware memory or the bounce
// buffer. It must run on a kernel stack: elsewhere it calls nothing and
// returns Aborted.
func Call(fn uint64, args ...uint64) uint64 {
	var a [maxArgs]uint64
	if kstackHi != 0 {
		sp := uintptr(unsafe.Pointer(&a))
		if sp < kstackLo || sp >= kstackHi {
			return uint64(Aborted)
		}
	}
	copy(a[:], args)
	syncFirmwareIDT()
	return call(fn, &a)
}

// Exit returns to the firmware with status after freeing the pages
// AllocatePages claimed. Boot services must still be what they were at
// entry.
func Exit(status Status) {
	syncFirmwareIDT()
	exit(uint64(status))
}
