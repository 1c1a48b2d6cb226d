package tlb

import (
	"fmt"
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
)

// The operations FlushLoop times (SDM Vol. 3A, 4.10.4.1 and Vol. 2A/2B,
// INVLPG, INVPCID, MOV to CR3/CR4).
const (
	// FlushEmpty: the loop alone (DEC; JNZ), the overhead the others'
	// figures subtract.
	FlushEmpty = iota
	// FlushCR3: MOV a to CR3.
	FlushCR3
	// FlushINVLPG: INVLPG of the page at address a.
	FlushINVLPG
	// FlushINVPCID: INVPCID of type a with the 16-byte descriptor at desc
	// (PCID in bits 11:0 of its first quadword, the linear address in its
	// second).
	FlushINVPCID
	// FlushCR4: MOV a to CR4, then MOV b to CR4 (a CR4.PGE toggle when a
	// and b differ in PGE alone): two writes per operation.
	FlushCR4
	// FlushINVLPGLive: a byte load from address a, then INVLPG of its
	// page: the INVLPG drops a translation the TLB holds, and the next
	// load walks the tables again.
	FlushINVLPGLive
)

// FlushLoop times n (at least 1) operations op in ring 0 with interrupts
// masked (RFLAGS restored at the end): it loads CR4 with cr4, reads the
// TSC (LFENCE; RDTSC), runs the loop, reads it again (LFENCE; RDTSC;
// LFENCE) and returns the difference; then it loads CR3 and CR4 with the
// values they had on entry, CR3 first. CR3 on entry must have bits 11:0
// clear when cr4 sets CR4.PCIDE (SDM Vol. 3A, 4.10.1), and every CR3 value
// the loop loads must map the loop's code and stack as the entry CR3 does.
// An op other than the Flush constants is FlushEmpty.
//
// Registers: AX..DX, SI, DI, R8..R11 are clobbered.
//
// defined in flush_amd64.s
func FlushLoop(op, n, cr4, a, b uint64, desc *[2]uint64) (cycles uint64)

// FlushOp is an operation of the flush-cost table: its record name, its
// row's title, the FlushLoop operation and operands, whether CR4.PCIDE is
// set around it, and why it cannot run ("" when it can).
type FlushOp struct {
	Name, Title string
	Op, A, B    uint64
	PCIDE       bool
	Missing     string
}

// Reasons an operation cannot run.
const (
	noPCID    = "no PCID (CPUID.01H:ECX[17])"
	noINVPCID = "no INVPCID (CPUID.(EAX=07H,ECX=0):EBX[10])"
	noPGE     = "no global pages (CPUID.01H:EDX[13])"
)

// invpcidTypes name INVPCID's types (SDM Vol. 2A, INVPCID).
var invpcidTypes = [4]string{"one address", "one PCID", "all, global too", "all but global"}

// flushDesc is the INVPCID descriptor (SDM Vol. 2A, INVPCID: PCID in bits
// 11:0 of the first quadword, the linear address in the second);
// flushTarget holds the page that INVLPG and INVPCID type 0 invalidate,
// mapped in the Go kernel's table and never touched by the loops, and
// after it the page the live INVLPG loads from and invalidates.
var (
	flushDesc   [2]uint64
	flushTarget [3 * amd64.PageSize]byte
)

// FlushCost is the setting of the flush-cost table (Linux
// arch/x86/mm/tlb.c: native_flush_tlb_global toggles CR4.PGE, or uses
// INVPCID type 2 where the CPU has it): the Go kernel's table, whose CR3
// is Root (PCID 0), the page at Target that INVLPG and INVPCID type 0
// name (no loop touches it: the TLB does not hold it), the page at Live
// that the live INVLPG loads from before each INVLPG, and the CR4 the
// loops run with, Base: the kernel's CR4 with CR4.PCIDE clear and CR4.PGE
// set where the CPU has global pages.
type FlushCost struct {
	Root, Target, Live, Base uint64
}

// NewFlushCost reads the kernel's CR3 and CR4 and points the INVPCID
// descriptor at the target page. It is an error when the kernel's CR3 has
// bits 11:0 set: CR4.PCIDE cannot be set under it (SDM Vol. 3A, 4.10.1).
func NewFlushCost() (FlushCost, error) {
	root := amd64.CR3()
	if root&0xfff != 0 {
		return FlushCost{}, fmt.Errorf("the kernel's CR3 %#x has bits 11:0 set: CR4.PCIDE cannot be set under it", root)
	}
	target := (uint64(uintptr(unsafe.Pointer(&flushTarget))) + amd64.PageSize - 1) &^ (amd64.PageSize - 1)
	flushDesc = [2]uint64{0, target}
	base := amd64.CR4() &^ (amd64.CR4_PCIDE | amd64.CR4_PGE)
	if amd64.Features.PGE {
		base |= amd64.CR4_PGE
	}
	return FlushCost{Root: root, Target: target, Live: target + amd64.PageSize, Base: base}, nil
}

// Ops lists the table's operations in its order: MOV to CR3 without
// PCID, with PCID 0 and NOFLUSH, with PCID 0 without NOFLUSH; INVLPG of
// the target page, which the TLB does not hold, and of the live page
// after a load from it (the load's page walk in the figure); INVPCID
// types 0 to 3; the CR4.PGE toggle. Those the CPU lacks (amd64.Features)
// say why in Missing.
func (fc FlushCost) Ops() []FlushOp {
	f := amd64.Features
	pcid, invpcid, pge := "", "", ""
	if !f.PCID {
		pcid = noPCID
	}
	if !f.INVPCID {
		invpcid = noINVPCID
	}
	if !f.PGE {
		pge = noPGE
	}
	ops := []FlushOp{
		{Name: "mov cr3", Title: "MOV to CR3, no PCID", Op: FlushCR3, A: fc.Root},
		{Name: "mov cr3 pcid noflush", Title: "MOV to CR3, PCID 0, NOFLUSH", Op: FlushCR3, A: fc.Root | amd64.CR3_NOFLUSH, PCIDE: true, Missing: pcid},
		{Name: "mov cr3 pcid", Title: "MOV to CR3, PCID 0, no NOFLUSH", Op: FlushCR3, A: fc.Root, PCIDE: true, Missing: pcid},
		{Name: "invlpg", Title: "INVLPG of a page the TLB does not hold", Op: FlushINVLPG, A: fc.Target},
		{Name: "invlpg live", Title: "load + INVLPG of a just-used page", Op: FlushINVLPGLive, A: fc.Live},
	}
	for t := range uint64(4) {
		ops = append(ops, FlushOp{Name: fmt.Sprintf("invpcid %d", t), Title: fmt.Sprintf("INVPCID type %d (%s)", t, invpcidTypes[t]),
			Op: FlushINVPCID, A: t, PCIDE: f.PCID, Missing: invpcid})
	}
	return append(ops, FlushOp{Name: "cr4.pge toggle", Title: "CR4.PGE toggle (two MOVs to CR4)", Op: FlushCR4, Missing: pge})
}

// Time runs op n times per FlushLoop call, once per element of cycles,
// and stores each call's TSC cycles there. CR4 is Base, with CR4.PCIDE
// where op says; the CR4.PGE toggle writes that CR4 without PGE and then
// with it. An op the CPU lacks (Missing) must not be timed.
func (fc FlushCost) Time(op FlushOp, n uint64, cycles []uint64) {
	cr4 := fc.Base
	if op.PCIDE {
		cr4 |= amd64.CR4_PCIDE
	}
	if op.Op == FlushCR4 {
		op.A, op.B = cr4&^amd64.CR4_PGE, cr4
	}
	for i := range cycles {
		cycles[i] = FlushLoop(op.Op, n, cr4, op.A, op.B, &flushDesc)
	}
}
