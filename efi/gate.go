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
	// transitCS is the code selector the gate's switches pass through
	// (amd64.Transit): the firmware's own CS, or where that collides with
	// an entry of ptilab's GDT a free one that the copy fwGDT adds. fwIDT's
	// NMI gate is on it.
	transitCS uint64
	// fwCodeMapped is set while transitCS names 64-bit ring-0 code in
	// the kernel's GDT too: in the firmware's own GDT, which the kernel
	// runs on until it loads its own, and in ptilab's GDT when
	// PlaceTransit put it there. The gate then passes through it on the
	// way to the firmware and back, so that every intermediate state
	// names valid segments (see TO_FIRMWARE).
	fwCodeMapped = true
	// fwGDT is the copy of the firmware's GDT that its calls run on
	// where the transit selector is not its own CS (amd64.Transit.Copy):
	// its entries, and the firmware's code descriptor at the transit's
	// index. It lives in the image, which the firmware frees after the
	// image returns: exit loads entryGDT again before it does.
	fwGDT [fwGDTEntries]uint64
	// entryGDT is the firmware's GDT at the entry point, which exit gives
	// back (with the CS it entered with, Entry.CS).
	entryGDT descPtr
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
	fwIDT[nmi] = amd64.InterruptGate(amd64.NMIEntryPC(), uint16(transitCS), 0, 0, amd64.TypeInterruptGate)
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
// (In the test image built with ptilab_fw_cs the firmware's GDT and CS
// are first replaced by a pretend firmware's: pretendFirmwareCS.)
func CountFirmwareNMIs() {
	pretendFirmwareCS()
	syncFirmwareIDT()
	amd64.LoadIDT(&fwIDTPtr)
}

// fwGDTEntries is the most entries of a firmware GDT that fwGDT can copy:
// EDK2's has 9, firmware with a TSS per processor more.
const fwGDTEntries = 64

// FirmwareCS returns the firmware's code selector at the image entry
// point (the firmware's calls run on it).
func FirmwareCS() uint16 { return uint16(fwctx.CS) }

// PlaceTransit chooses the code selector that the gate's switches pass
// through and puts its descriptor into ptilab's GDT g
// (amd64.PlaceTransit): the firmware's own CS where g has room for it,
// else a free index, with the firmware's calls running on a copy of its
// GDT that adds the same descriptor there (fwGDT), loaded here, on the
// firmware's CS, before fwIDT's NMI gate moves onto the transit. Call it
// before ptilab's GDT is loaded, on the firmware's GDT and CS; then load
// CS = t.Sel, ptilab's GDT, ptilab's CS. With ok false (the firmware's CS
// is not 64-bit ring-0 code in its GDT, or no index is free in both), t.Sel
// is the firmware's CS and the gate switches GDT and CS as close together
// as it can, where an NMI between them is not survivable.
func PlaceTransit(g *[amd64.GDT_ENTRIES]uint64) (t amd64.Transit, ok bool) {
	n := (int(fwctx.GDT.Limit) + 1) / 8
	fw := unsafe.Slice((*uint64)(Pointer(fwctx.GDT.Base)), n)
	t, ok = amd64.PlaceTransit(g, fw, uint16(fwctx.CS), len(fwGDT))
	if !ok {
		fwCodeMapped = false
		return amd64.Transit{Sel: uint16(fwctx.CS)}, false
	}
	if t.Copy {
		copy(fwGDT[:], fw)
		i := int(t.Sel >> 3)
		fwGDT[i] = g[i]
		fwctx.GDT = descPtr{Limit: uint16(max(n, i+1)*8 - 1), Base: addr(&fwGDT)}
		// The firmware's CS and data selectors name the same descriptors
		// in the copy; fwIDT's NMI gate (on the firmware's CS) too.
		amd64.LoadGDT(&fwctx.GDT)
	}
	transitCS = uint64(t.Sel)
	Entry.Transit, Entry.TransitPlaced = t, true
	// fwIDT's NMI gate onto the transit selector: only the gate's lower
	// quadword changes, written by one aligned store (SDM Vol. 3A, 9.1.1).
	syncFirmwareIDT()
	amd64.LoadIDT(&fwIDTPtr)
	return t, true
}

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
