// Package jcc checks code against the Skylake JCC erratum, for host
// tests: on Skylake client CPUs (06_4E/5E/8E/9E) with the microcode that
// works around it, a jump that crosses or ends on a 32-byte boundary is
// not kept in the decoded micro-op cache (the DSB) and is decoded again
// on every pass. "Jump" covers conditional and unconditional jumps, calls
// and returns, direct and indirect, and a macro-fused pair (CMP, TEST,
// ADD, SUB, AND, INC or DEC with the Jcc after it) counts from the first
// byte of its first instruction (Intel, "Mitigations for Jump Conditional
// Code Erratum", 2019, sections 2 and 3). Go's compiler pads its own
// amd64 code around such jumps (cmd/internal/obj/x86, padJump); hand-written
// assembly and 386 code it leaves alone.
package jcc

import (
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// Inst is a decoded instruction at offset Off of the decoded code.
type Inst struct {
	Off int
	x86asm.Inst
}

// End is the offset after the instruction.
func (i Inst) End() int { return i.Off + i.Len }

func (i Inst) String() string { return fmt.Sprintf("+%d %v", i.Off, i.Inst) }

// Decode decodes code in mode (32 or 64) from its start to its end.
func Decode(code []byte, mode int) ([]Inst, error) {
	var out []Inst
	for off := 0; off < len(code); {
		in, err := x86asm.Decode(code[off:], mode)
		if err != nil {
			return out, fmt.Errorf("+%#x: %w", off, err)
		}
		out = append(out, Inst{off, in})
		off += in.Len
	}
	return out, nil
}

// conditional are the Jcc instructions.
var conditional = map[x86asm.Op]bool{
	x86asm.JA: true, x86asm.JAE: true, x86asm.JB: true, x86asm.JBE: true, x86asm.JE: true, x86asm.JG: true,
	x86asm.JGE: true, x86asm.JL: true, x86asm.JLE: true, x86asm.JNE: true, x86asm.JNO: true, x86asm.JNP: true,
	x86asm.JNS: true, x86asm.JO: true, x86asm.JP: true, x86asm.JS: true, x86asm.JCXZ: true, x86asm.JECXZ: true,
	x86asm.JRCXZ: true, x86asm.LOOP: true, x86asm.LOOPE: true, x86asm.LOOPNE: true,
}

// IsJump reports whether in is a jump in the erratum's sense: a
// conditional or unconditional jump, a call or a return, near or far.
func IsJump(in x86asm.Inst) bool {
	switch in.Op {
	case x86asm.JMP, x86asm.LJMP, x86asm.CALL, x86asm.LCALL, x86asm.RET, x86asm.LRET:
		return true
	}
	return conditional[in.Op]
}

// Fuses reports whether a and the Jcc b after it may macro-fuse on Sandy
// Bridge and later (Intel 64 and IA-32 Architectures Optimization
// Reference Manual, 3.4.2.2, Table 3-2): CMP, TEST, ADD, SUB, AND, INC and
// DEC, not with a memory operand and an immediate together nor a
// RIP-relative one; TEST and AND with every Jcc; CMP, ADD and SUB with all
// but JO, JNO, JS, JNS, JP and JNP; INC and DEC with JE, JNE, JL, JGE,
// JLE and JG.
func Fuses(a, b x86asm.Inst) bool {
	if !conditional[b.Op] || b.Op == x86asm.JCXZ || b.Op == x86asm.JECXZ || b.Op == x86asm.JRCXZ ||
		b.Op == x86asm.LOOP || b.Op == x86asm.LOOPE || b.Op == x86asm.LOOPNE {
		return false
	}
	mem, imm := false, false
	for _, arg := range a.Args {
		switch arg := arg.(type) {
		case x86asm.Mem:
			mem = true
			if arg.Base == x86asm.RIP {
				return false
			}
		case x86asm.Imm:
			imm = true
		}
	}
	if mem && imm {
		return false
	}
	flagsOnly := map[x86asm.Op]bool{x86asm.JO: true, x86asm.JNO: true, x86asm.JS: true, x86asm.JNS: true, x86asm.JP: true, x86asm.JNP: true}
	switch a.Op {
	case x86asm.TEST, x86asm.AND:
		return true
	case x86asm.CMP, x86asm.ADD, x86asm.SUB:
		return !flagsOnly[b.Op]
	case x86asm.INC, x86asm.DEC:
		switch b.Op {
		case x86asm.JE, x86asm.JNE, x86asm.JL, x86asm.JGE, x86asm.JLE, x86asm.JG:
			return true
		}
	}
	return false
}

// Jump is a jump of the decoded code, or a macro-fused pair: its first
// byte's offset (Start), the offset after it (End), and the instructions.
type Jump struct {
	Start, End int
	Insts      []Inst
}

// Fused reports whether the jump is a macro-fused pair.
func (j Jump) Fused() bool { return len(j.Insts) == 2 }

// Clear reports whether the jump, with the code's offset 0 at address
// base, neither crosses nor ends on a 32-byte boundary: it fits in a
// 32-byte chunk with a byte to spare after it.
func (j Jump) Clear(base uint64) bool {
	start := (base + uint64(j.Start)) % 32
	return start+uint64(j.End-j.Start) < 32
}

// Chunk is the jump's last byte's offset in its 32-byte chunk, with the
// code's offset 0 at address base: where the branch sits.
func (j Jump) Chunk(base uint64) int { return int((base + uint64(j.End) - 1) % 32) }

func (j Jump) String() string {
	s := j.Insts[0].String()
	if j.Fused() {
		s += "; " + j.Insts[1].Inst.String()
	}
	return fmt.Sprintf("%s (bytes %d to %d)", s, j.Start, j.End-1)
}

// Jumps lists the jumps of insts (Decode's) that start in [from, to), a
// Jcc fused with the instruction before it as one.
func Jumps(insts []Inst, from, to int) []Jump {
	var out []Jump
	for i, in := range insts {
		if !IsJump(in.Inst) || in.Off < from || in.Off >= to {
			continue
		}
		j := Jump{Start: in.Off, End: in.End(), Insts: []Inst{in}}
		if i > 0 && Fuses(insts[i-1].Inst, in.Inst) {
			j.Start, j.Insts = insts[i-1].Off, []Inst{insts[i-1], in}
		}
		out = append(out, j)
	}
	return out
}

// At returns the index of the instruction at offset off of insts, or -1.
func At(insts []Inst, off int) int {
	for i, in := range insts {
		if in.Off == off {
			return i
		}
	}
	return -1
}

// Target is the offset a relative jump in goes to (ok false for any
// other operand).
func Target(in Inst) (int, bool) {
	if len(in.Args) == 0 {
		return 0, false
	}
	rel, ok := in.Args[0].(x86asm.Rel)
	return in.End() + int(rel), ok
}

// Loop is a counted loop of decoded code: its head (the back-branch's
// target), its back-branch (a backward Jcc right after a DEC of the count
// register) and the end of its timed region (the first RDTSCP after the
// back-branch: the end stamp, which waits for what came before).
type Loop struct {
	Head, Branch, End int // offsets
	Back              Jump
}

// FindLoop finds the loop whose back-branch follows DEC count in insts.
func FindLoop(insts []Inst, count x86asm.Reg) (Loop, error) {
	for i := 1; i < len(insts); i++ {
		in, dec := insts[i], insts[i-1]
		t, ok := Target(in)
		if !conditional[in.Op] || !ok || t >= in.Off || dec.Op != x86asm.DEC || dec.Args[0] != count {
			continue
		}
		l := Loop{Head: t, Branch: in.Off, End: -1, Back: Jumps(insts, in.Off, in.End())[0]}
		for _, e := range insts[i+1:] {
			if e.Op == x86asm.RDTSCP {
				l.End = e.Off
				break
			}
		}
		if l.End < 0 {
			return l, fmt.Errorf("no RDTSCP after the loop at +%d", t)
		}
		return l, nil
	}
	return Loop{}, fmt.Errorf("no loop counted by DEC %v", count)
}
