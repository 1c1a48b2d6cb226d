package bench

import (
	"fmt"
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/pti"
)

// Flush costs: what the TLB invalidations PTI and its alternatives use
// cost in ring 0 (SDM Vol. 3A, 4.10.4.1; Vol. 2A INVLPG, INVPCID; Linux
// arch/x86/mm/tlb.c: native_flush_tlb_global toggles CR4.PGE, or uses
// INVPCID type 2 where the CPU has it).

// flushOp is an operation of the flush-cost table: its record name, its
// row's title, the FlushLoop operation and operands, whether CR4.PCIDE is
// set around it, and why it cannot run ("" when it can).
type flushOp struct {
	name, title string
	op, a, b    uint64
	pcide       bool
	missing     string
}

// flushDesc is the INVPCID descriptor (SDM Vol. 2A, INVPCID: PCID in bits
// 11:0 of the first quadword, the linear address in the second);
// flushTarget holds the page that INVLPG and INVPCID type 0 invalidate,
// mapped in the Go kernel's table and never touched by the loops.
var (
	flushDesc   [2]uint64
	flushTarget [2 * amd64.PageSize]byte
)

// Reasons an operation cannot run.
const (
	noPCID    = "no PCID (CPUID.01H:ECX[17])"
	noINVPCID = "no INVPCID (CPUID.(EAX=07H,ECX=0):EBX[10])"
	noPGE     = "no global pages (CPUID.01H:EDX[13])"
)

// flushOps lists the table's operations on the Go kernel's table, whose
// CR3 is root (PCID 0), invalidating the page at target.
func flushOps(root, target uint64) []flushOp {
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
	ops := []flushOp{
		{name: "mov cr3", title: "MOV to CR3, no PCID", op: amd64.FlushCR3, a: root},
		{name: "mov cr3 pcid noflush", title: "MOV to CR3, PCID 0, NOFLUSH", op: amd64.FlushCR3, a: root | pti.CR3_NOFLUSH, pcide: true, missing: pcid},
		{name: "mov cr3 pcid", title: "MOV to CR3, PCID 0, no NOFLUSH", op: amd64.FlushCR3, a: root, pcide: true, missing: pcid},
		{name: "invlpg", title: "INVLPG of a present page", op: amd64.FlushINVLPG, a: target},
	}
	for t := range uint64(4) {
		ops = append(ops, flushOp{name: fmt.Sprintf("invpcid %d", t), title: fmt.Sprintf("INVPCID type %d (%s)", t, invpcidTypes[t]),
			op: amd64.FlushINVPCID, a: t, pcide: f.PCID, missing: invpcid})
	}
	return append(ops, flushOp{name: "cr4.pge toggle", title: "CR4.PGE toggle (two MOVs to CR4)", op: amd64.FlushCR4, missing: pge})
}

// invpcidTypes name INVPCID's types (SDM Vol. 2A, INVPCID).
var invpcidTypes = [4]string{"one address", "one PCID", "all, global too", "all but global"}

// flushCost times each operation of flushOps in ring 0, plan.N per
// repeat, and prints a table and a record per operation (unsupported ones
// say why); it returns units per operation by record name.
func flushCost(x *Ctx) any {
	out := map[string]float64{}
	if x.World.Width() != 64 {
		x.Fail(contract.Error{Name: x.Name, Error: "the flush costs are measured in the 64-bit world only"})
		return out
	}
	p := x.Plan
	root := amd64.CR3()
	if root&0xfff != 0 {
		x.Fail(contract.Error{Name: x.Name, Error: fmt.Sprintf("the kernel's CR3 %#x has bits 11:0 set: CR4.PCIDE cannot be set under it", root)})
		return out
	}
	target := (uint64(uintptr(unsafe.Pointer(&flushTarget))) + amd64.PageSize - 1) &^ (amd64.PageSize - 1)
	flushDesc = [2]uint64{0, target}
	base := amd64.CR4() &^ (amd64.CR4_PCIDE | amd64.CR4_PGE)
	if amd64.Features.PGE {
		base |= amd64.CR4_PGE
	}
	loop := func(op flushOp, cr4 uint64) []float64 {
		cycles := make([]uint64, p.Warmup+p.R)
		for i := range cycles {
			cycles[i] = amd64.FlushLoop(op.op, uint64(p.N), cr4, op.a, op.b, &flushDesc)
		}
		return PerOp(cycles[p.Warmup:], p.N, 0)
	}
	empty := Summarize(loop(flushOp{op: amd64.FlushEmpty}, base)).Median

	x.Printf("")
	x.Printf("TLB flush costs in ring 0, interrupts masked, per operation: %s, empty-loop overhead (%.1f per iteration) subtracted; %s",
		repeatsOf(p.R, p.N, p.Warmup, "operation", "operations"), empty, x.Clock.unitNote())
	x.Printf("%s; the Go kernel's table, PCID 0; INVLPG and INVPCID type 0 name a mapped page the loop never touches", x.Clock.header())
	x.Printf("%-40s %10s %7s %10s %10s %10s", "operation", x.Clock.counted("insns/op", "tsc/op"), "+-", "median", "min", "ns/op")
	for _, op := range flushOps(root, target) {
		s := x.subject("flushcost", experiment.Config{})
		s.Mode, s.Entry, s.Flavour, s.Target = "", "", "", op.name
		if op.missing != "" {
			x.Printf("%-40s unsupported: %s", op.title, op.missing)
			x.Record(contract.Unsupported{Subject: s, N: p.N, R: p.R, Warmup: p.Warmup, Reason: op.missing})
			continue
		}
		cr4 := base
		if op.pcide {
			cr4 |= amd64.CR4_PCIDE
		}
		if op.op == amd64.FlushCR4 {
			op.a, op.b = cr4&^amd64.CR4_PGE, cr4
		}
		per := loop(op, cr4)
		for i := range per {
			per[i] -= empty
		}
		st := Summarize(per)
		out[op.name] = st.Mean
		x.Printf("%-40s %10.1f %7s %10.1f %10.1f %10.1f", op.title, st.Mean, spread(st), st.Median, st.Min, x.Clock.Ns(st.Mean))
		x.Record(contract.FlushCost{Subject: s, N: p.N, R: p.R, Warmup: p.Warmup, Unit: x.Clock.Unit(),
			PerOp:           contract.Spread{N: st.N, Mean: round(st.Mean), Stddev: round(st.Stddev), Median: round(st.Median), Min: round(st.Min), Max: round(st.Max)},
			EmptyLoopCycles: round(empty), TSCHz: x.Clock.Hz})
	}
	return out
}
