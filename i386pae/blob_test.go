package i386pae

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/arch/x86/x86asm"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/host/blob32"
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/testkit/x86insts"
)

// TestBlobMatchesFreshBuild rebuilds package kernel32 and checks that the
// committed kernel32.bin and kernel32_sym.go are what it gives: run
// `go generate ./i386pae` after changing kernel32 or layout.
func TestBlobMatchesFreshBuild(t *testing.T) {
	b, err := blob32.Build("..")
	require.NoError(t, err)
	// The tasks kernel's Go code depends on the compiler: another
	// toolchain than the one that made the committed blob gives other
	// bytes, and the blob must be made again with it.
	hint := fmt.Sprintf("run go generate ./i386pae (the committed blob was built by %s, this build by %s)", blobGoVersion, b.GoVersion)
	assert.Equal(t, b.Text, blob, "kernel32.bin differs from a fresh build: "+hint)
	src, err := os.ReadFile("kernel32_sym.go")
	require.NoError(t, err)
	assert.Equal(t, string(b.Source()), string(src), "kernel32_sym.go differs from a fresh build: "+hint)
}

// TestBlobIsPositionIndependent links kernel32 at another address: the
// blob's bytes must not change, since the 64-bit side runs them at
// layout.Text and at their physical address, never where they were
// linked.
func TestBlobIsPositionIndependent(t *testing.T) {
	b, err := blob32.BuildAt("..", blob32.LinkAddress+0x1230000)
	require.NoError(t, err)
	assert.Equal(t, blob, b.Text)
}

// decode decodes routine name of the blob in mode (32 or 64), over its
// size.
func decode(t *testing.T, name string, mode int) []x86asm.Inst {
	t.Helper()
	for _, s := range blobSymbols {
		if s.name != name {
			continue
		}
		code := blob[s.off : s.off+s.size]
		var insts []x86asm.Inst
		for off := 0; off < len(code); {
			inst, err := x86asm.Decode(code[off:], mode)
			require.NoError(t, err, "%s+%#x", name, off)
			insts = append(insts, inst)
			off += inst.Len
		}
		return insts
	}
	t.Fatalf("no routine %s in the blob", name)
	return nil
}

// ops lists the mnemonics of insts.
func ops(insts []x86asm.Inst) []string {
	var out []string
	for _, in := range insts {
		out = append(out, in.Op.String())
	}
	return out
}

func TestBlobRoutinesDecode(t *testing.T) {
	for _, s := range blobSymbols {
		if s.name == "landing64" || s.name == "excEntries" {
			continue // 64-bit code; stubs with INT3 padding (below)
		}
		decode(t, s.name, 32)
	}
	// The routines are in the order of the text, user text last.
	for i := 1; i < len(blobSymbols); i++ {
		assert.Greater(t, blobSymbols[i].off, blobSymbols[i-1].off)
	}
	assert.Equal(t, "userTextEnd", blobSymbols[len(blobSymbols)-1].name)
	// The tasks kernel's core (package tasks/core) is in the blob, first,
	// so that the tests below cover it.
	var core []string
	for _, s := range blobSymbols {
		if strings.HasPrefix(s.name, "core.") {
			core = append(core, s.name)
		}
	}
	assert.Subset(t, core, []string{"core.(*Kernel).Read", "core.(*Kernel).PipeWrite", "core.(*Kernel).sockRead",
		"core.(*Kernel).SockWrite", "core.(*Kernel).Next", "core.fromRing", "core.toRing"})
	assert.True(t, strings.HasPrefix(blobSymbols[0].name, "core."), "core's text first: %s", blobSymbols[0].name)
}

// TestBlobIsSelfContained checks what position independence and the
// absence of a Go runtime need: every relative call and jump of every
// routine (the tasks kernel's Go code included) lands inside the blob,
// and every absolute memory address is the kernel's (the kernel window,
// the pipes) or the task's, never the executable's.
func TestBlobIsSelfContained(t *testing.T) {
	for _, s := range blobSymbols {
		if s.name == "landing64" || s.name == "excEntries" {
			continue // checked by their own tests
		}
		off := int(s.off)
		for _, in := range decode(t, s.name, 32) {
			off += in.Len
			for _, a := range in.Args {
				switch a := a.(type) {
				case x86asm.Rel:
					target := off + int(a)
					assert.True(t, target >= 0 && target < len(blob), "%s: %v goes to blob offset %#x, outside the blob", s.name, in, target)
				case x86asm.Mem:
					if a.Base == 0 && a.Index == 0 && a.Segment == 0 {
						d := uint32(a.Disp)
						assert.True(t, d >= layout.PipeBase || d >= layout.UserBase && d < layout.UserEnd,
							"%s: %v addresses %#x, neither the kernel's nor the task's", s.name, in, d)
					}
				}
			}
			assert.False(t, in.Op == x86asm.CALL && isIndirect(in.Args[0]), "%s: %v: an indirect call", s.name, in)
		}
	}
}

// Offsets of CPUData fields the blob's hand-assembled instructions use.
const (
	offsetOfFar          = unsafe.Offsetof(layout.CPUData{}.Far)
	offsetOfHighEntry    = unsafe.Offsetof(layout.CPUData{}.HighEntry)
	offsetOfSwitchStack  = unsafe.Offsetof(layout.CPUData{}.SwitchStack)
	offsetOfSwitchIDTPtr = unsafe.Offsetof(layout.CPUData{}.SwitchIDTPtr)
	offsetOfBack64       = unsafe.Offsetof(layout.CPUData{}.Back64)
)

// isIndirect reports whether a branch operand is a register or memory.
func isIndirect(a x86asm.Arg) bool {
	switch a.(type) {
	case x86asm.Reg, x86asm.Mem:
		return true
	}
	return false
}

func TestModeSwitchRoutines(t *testing.T) {
	in := decode(t, "enter32", 32)
	o := ops(in)
	// The switch stack and IDT, then paging off, EFER.LME off, CR4, CR3,
	// paging on, and at once the branch (SDM Vol. 3A, 10.8.5.4), through
	// memory.
	assert.Equal(t, []string{"MOV", "MOV", "MOV", "MOV", "XOR", "MOV", "MOV", "MOV", "LIDT",
		"MOV", "AND", "MOV", "MOV", "RDMSR", "AND", "WRMSR", "MOV", "MOV", "MOV", "MOV", "MOV", "OR", "MOV", "JMP"}, o)
	assert.Equal(t, x86asm.ESP, in[7].Args[0])
	assert.Equal(t, x86asm.Mem{Segment: 0, Base: x86asm.EDI, Disp: int64(offsetOfSwitchStack)}, in[7].Args[1])
	assert.Equal(t, x86asm.Mem{Segment: 0, Base: x86asm.EDI, Disp: int64(offsetOfSwitchIDTPtr + 2)}, in[8].Args[0])
	assert.Equal(t, x86asm.CR0, in[11].Args[0])
	assert.Equal(t, x86asm.CR4, in[17].Args[0])
	assert.Equal(t, x86asm.CR3, in[19].Args[0])
	assert.Equal(t, x86asm.CR0, in[22].Args[0])
	jm := in[23].Args[0].(x86asm.Mem)
	assert.Equal(t, x86asm.EDI, jm.Base)
	assert.EqualValues(t, offsetOfHighEntry, jm.Disp)

	// leave32 moves to the switch stack and IDT before it jumps to
	// leave32low, with EDI the per-CPU data's physical address before the
	// switch IDT (its handlers count through EDI).
	lv := ops(decode(t, "leave32", 32))
	assert.Contains(t, lv, "LIDT")
	assert.Equal(t, "JMP", lv[len(lv)-1])
	lvIn := decode(t, "leave32", 32)
	edi, lidt := -1, -1
	for i, in := range lvIn {
		if in.Op == x86asm.MOV && in.Args[0] == x86asm.EDI && edi < 0 {
			edi = i
		}
		if in.Op == x86asm.LIDT {
			lidt = i
		}
	}
	assert.True(t, edi >= 0 && edi < lidt, "EDI loaded (%d) before the switch IDT (%d)", edi, lidt)

	// The switch IDT's handlers count the NMI in SwitchNMIs, through EDI
	// (zero-extended into RAX in IA-32e mode), and return: IRET in legacy
	// mode, IRETQ in IA-32e.
	count := unsafe.Offsetof(layout.CPUData{}.SwitchNMIs)
	legacy := decode(t, "nmiSwitch", 32)
	assert.Equal(t, []string{"INC", "IRETD"}, ops(legacy))
	assert.Equal(t, x86asm.Mem{Base: x86asm.EDI, Disp: int64(count)}, legacy[0].Args[0])
	ia32e := decode(t, "nmiSwitch64", 64)
	assert.Equal(t, []string{"PUSH", "MOV", "INC", "POP", "IRETQ"}, ops(ia32e))
	assert.Equal(t, x86asm.RAX, ia32e[0].Args[0])
	assert.Equal(t, []x86asm.Arg{x86asm.EAX, x86asm.EDI}, ia32e[1].Args[:2], "MOV EAX, EDI: zero-extended")
	assert.Equal(t, x86asm.Mem{Base: x86asm.RAX, Disp: int64(count)}, ia32e[2].Args[0])
	assert.Equal(t, 32, ia32e[2].DataSize, "a 32-bit count")
	assert.Equal(t, x86asm.RAX, ia32e[3].Args[0])

	out := decode(t, "leave32low", 32)
	last := out[len(out)-1]
	assert.Equal(t, x86asm.LJMP, last.Op, "leave32low ends with a far jump")
	m := last.Args[0].(x86asm.Mem)
	assert.Equal(t, x86asm.EDI, m.Base)
	assert.EqualValues(t, offsetOfFar, m.Disp)

	// landing64 is 64-bit code: MOV ESP, ESP; MOV EDI, EDI (the upper
	// halves zeroed); JMP [RDI+Back64].
	l := decode(t, "landing64", 64)
	require.Len(t, l, 3)
	assert.Equal(t, "MOV ESP, ESP", l[0].String())
	assert.Equal(t, "MOV EDI, EDI", l[1].String())
	assert.Equal(t, x86asm.JMP, l[2].Op)
	jm = l[2].Args[0].(x86asm.Mem)
	assert.Equal(t, x86asm.RDI, jm.Base)
	assert.EqualValues(t, offsetOfBack64, jm.Disp)
}

func TestTrampolines(t *testing.T) {
	for _, c := range []struct {
		name string
		cr3  int
		last x86asm.Op
	}{
		{"sysenterMinimalOff", 0, x86asm.SYSEXIT},
		{"sysenterMinimalOn", 2, x86asm.SYSEXIT},
		{"int80MinimalOff", 0, x86asm.IRETD},
		{"int80MinimalOn", 2, x86asm.IRETD},
	} {
		in := decode(t, c.name, 32)
		assert.Equal(t, c.cr3, x86insts.CR3Writes(in), "%s: CR3 writes", c.name)
		assert.Equal(t, c.last, in[len(in)-1].Op, c.name)
		var calls int
		for _, i := range in {
			if i.Op == x86asm.CALL {
				calls++
				rel, ok := i.Args[0].(x86asm.Rel)
				require.True(t, ok, "%s: a relative call", c.name)
				_ = rel
			}
		}
		assert.Equal(t, 1, calls, "%s calls dispatch once", c.name)
	}
}

// count counts the instructions of insts with op and, when rep is set, a
// REP prefix.
func count(insts []x86asm.Inst, op x86asm.Op, rep bool) int {
	n := 0
	for _, in := range insts {
		if in.Op == op && (!rep || in.Prefix[0]&0xff == x86asm.PrefixREP) {
			n++
		}
	}
	return n
}

// TestLinuxTrampolines checks the linux flavour's shape: the CR3 writes of
// the mode, the copy method (REP MOVSB or REP MOVSL both ways, or REP
// MOVSL in and no string copy out when trimmed), one call of dispatch,
// six TSC stamps in the instrumented ones and none in the others, the
// return instruction, and the SYSENTER ones' out-of-line fix of the flags
// (PUSH 2; POPF; JMP back: NT, AC and TF must not stay on in the kernel).
func TestLinuxTrampolines(t *testing.T) {
	for _, copyName := range []string{"Movsb", "Movsl", "Trim"} {
		for _, stamps := range []bool{false, true} {
			for _, mode := range []string{"Off", "On"} {
				kind := "Linux"
				if stamps {
					kind = "Stamp"
				}
				name := "sysenter" + kind + copyName + mode
				in := decode(t, name, 32)
				assert.Equal(t, map[string]int{"Off": 0, "On": 2}[mode], x86insts.CR3Writes(in), name)
				assert.Equal(t, 1, count(in, x86asm.SYSEXIT, false), name)
				assert.Equal(t, x86asm.SYSEXIT, in[len(in)-4].Op, name)
				assertFixFlags(t, name, in)
				assert.Equal(t, 1, count(in, x86asm.CALL, false), name)
				assert.Equal(t, map[bool]int{false: 0, true: 6}[stamps], count(in, x86asm.RDTSC, false), name)
				b, l := count(in, x86asm.MOVSB, true), count(in, x86asm.MOVSD, true)
				switch copyName {
				case "Movsb":
					assert.Equal(t, [2]int{2, 0}, [2]int{b, l}, name)
				case "Movsl":
					assert.Equal(t, [2]int{0, 2}, [2]int{b, l}, name)
				case "Trim":
					assert.Equal(t, [2]int{0, 1}, [2]int{b, l}, name)
				}
			}
		}
	}
	for _, mode := range []string{"Off", "On"} {
		// Linux 4.19's shape: no copy in, the trimmed exit by SYSEXIT;
		// and by IRET, after the frame is copied back, when its EIP is
		// not the vsyscall return point (the tasks kernel's new tasks).
		in := decode(t, "sysenterLinuxDirect"+mode, 32)
		assert.Equal(t, map[string]int{"Off": 0, "On": 3}[mode], x86insts.CR3Writes(in), "to the kernel, to the user on each exit")
		assert.Equal(t, 1, count(in, x86asm.SYSEXIT, false))
		assert.Equal(t, x86asm.IRETD, in[len(in)-4].Op)
		assertFixFlags(t, "sysenterLinuxDirect"+mode, in)
		assert.Zero(t, count(in, x86asm.MOVSB, true))
		assert.Equal(t, 1, count(in, x86asm.MOVSD, true), "the copy before IRET")
		assert.Zero(t, count(in, x86asm.RDTSC, false))
	}
	for _, mode := range []string{"Off", "On"} {
		in := decode(t, "int80Linux"+mode, 32)
		assert.Equal(t, map[string]int{"Off": 0, "On": 2}[mode], x86insts.CR3Writes(in))
		assert.Equal(t, x86asm.IRETD, in[len(in)-1].Op)
		assert.Equal(t, 2, count(in, x86asm.MOVSD, true))
	}
}

// assertFixFlags checks that a SYSENTER trampoline tests NT, AC and TF in
// its frame and ends with the out-of-line fix: PUSH 2; POPF; JMP.
func assertFixFlags(t *testing.T, name string, in []x86asm.Inst) {
	t.Helper()
	tail := ops(in[len(in)-3:])
	assert.Equal(t, []string{"PUSH", "POPFD", "JMP"}, tail, name)
	found := false
	for _, i := range in {
		if i.Op == x86asm.TEST {
			if imm, ok := i.Args[1].(x86asm.Imm); ok && imm == 0x44100 {
				found = true
			}
		}
	}
	assert.True(t, found, "%s tests the frame's NT, AC and TF", name)
}

// TestExceptionStubs checks the 32 stubs: 16 bytes each, PUSH 0 (or two
// NOPs where the CPU pushes an error code: amd64.HasErrorCode, itself
// checked against the SDM's table), PUSH n, JMP to +512.
func TestExceptionStubs(t *testing.T) {
	base := int(offExcEntries)
	for v := 0; v < 32; v++ {
		code := blob[base+16*v : base+16*v+16]
		stub := amd64.ExceptionStub(v, 512)
		assert.Equal(t, stub[:], code, "vector %d: amd64.ExceptionStub's bytes (as pti's)", v)
		var in []x86asm.Inst
		for off := 0; off < 9; {
			i, err := x86asm.Decode(code[off:], 32)
			require.NoError(t, err)
			in = append(in, i)
			off += i.Len
		}
		if amd64.HasErrorCode(v) {
			assert.Equal(t, []string{"NOP", "NOP", "PUSH", "JMP"}, ops(in), "vector %d", v)
		} else {
			assert.Equal(t, []string{"PUSH", "PUSH", "JMP"}, ops(in), "vector %d", v)
			assert.EqualValues(t, 0, in[0].Args[0].(x86asm.Imm))
		}
		push := in[len(in)-2]
		assert.EqualValues(t, v, push.Args[0].(x86asm.Imm), "vector %d", v)
		rel := in[len(in)-1].Args[0].(x86asm.Rel)
		assert.Equal(t, 512, 16*v+9+int(rel), "vector %d jumps to the common path", v)
	}
}

// TestUserTextStaysInUserSpace checks that the ring-3 programs address
// only the task's pages: no absolute address in the kernel window.
func TestUserTextStaysInUserSpace(t *testing.T) {
	for _, name := range []string{"vsyscall", "userSyscalls", "userProbe"} {
		for _, in := range decode(t, name, 32) {
			for _, a := range in.Args {
				if m, ok := a.(x86asm.Mem); ok && m.Base == 0 {
					d := uint32(m.Disp)
					assert.True(t, d >= layout.UserBase && d < layout.UserEnd, "%s: %v addresses %#x", name, in, d)
				}
			}
		}
		assert.False(t, strings.Contains(strings.Join(ops(decode(t, name, 32)), " "), "SYSEXIT"))
	}
	assert.Equal(t, "SYSENTER", ops(decode(t, "vsyscall", 32))[4])
	assert.Equal(t, []string{"POP", "POP", "POP", "RET"}, ops(decode(t, "vsyscallRet", 32)))
}

// TestNMIHandler checks the 32-bit NMI handler: DS saved, the kernel's
// loaded, one increment of the per-CPU NMI count, DS and EAX restored, IRET.
func TestNMIHandler(t *testing.T) {
	insts := decode(t, "nmi", 32)
	require.Equal(t, []string{"PUSH", "PUSH", "MOV", "MOV", "INC", "POP", "POP", "IRETD"}, ops(insts[:8]))
	assert.Equal(t, x86asm.DS, insts[0].Args[0])
	assert.Equal(t, x86asm.DS, insts[3].Args[0])
	inc, ok := insts[4].Args[0].(x86asm.Mem)
	require.True(t, ok, "INC of memory: %v", insts[4])
	assert.Equal(t, int64(layout.CPU+uint32(unsafe.Offsetof(layout.CPUData{}.NMIs))), inc.Disp&0xffffffff)
	assert.Equal(t, x86asm.DS, insts[6].Args[0])
}

// TestSampleRoutine checks the 32-bit sample call's reads of the
// performance counters (layout.SamplePMU): one RDMSR in a loop over
// KState.SampleMSR's slots (ECX from the slot, scaled by 4), its EDX:EAX
// stored in Sample.PMC's low and high words (scaled by 8), besides the
// RDMSRs of APERF, MPERF and MSR_SMI_COUNT.
func TestSampleRoutine(t *testing.T) {
	insts := decode(t, "sample", 32)
	assert.Equal(t, 4, count(insts, x86asm.RDMSR, false), "APERF, MPERF, MSR_SMI_COUNT and the counters' loop")
	msrs := int64(layout.State + uint32(unsafe.Offsetof(layout.KState{}.SampleMSR)))
	pmc := int64(unsafe.Offsetof(layout.Sample{}.PMC))
	var tested, loaded bool
	var stored []x86asm.Reg
	for i, in := range insts {
		if in.Op == x86asm.TEST {
			if imm, ok := in.Args[1].(x86asm.Imm); ok && imm == layout.SamplePMU {
				tested = true
			}
		}
		if in.Op != x86asm.MOV {
			continue
		}
		if m, ok := in.Args[1].(x86asm.Mem); ok && m.Disp&0xffffffff == msrs && m.Scale == 4 && in.Args[0] == x86asm.ECX {
			loaded = true
			assert.Equal(t, x86asm.RDMSR, insts[i+3].Op, "the slot's MSR tested for 0, then read")
		}
		if m, ok := in.Args[0].(x86asm.Mem); ok && m.Scale == 8 && (m.Disp == pmc || m.Disp == pmc+4) {
			stored = append(stored, in.Args[1].(x86asm.Reg))
		}
	}
	assert.True(t, tested, "SamplePMU tested in KState.SampleSrc")
	assert.True(t, loaded, "ECX from KState.SampleMSR")
	assert.Equal(t, []x86asm.Reg{x86asm.EAX, x86asm.EDX}, stored, "EDX:EAX into Sample.PMC")
}

// TestMitigatedTrampolines checks the mitigated SYSENTER trampolines'
// shape: the direct trampoline's CR3 writes, exits and flag fix; a VERW
// on each exit, before SYSEXIT (after the last POP, as Linux's
// entry_SYSENTER_32) and before IRET, besides a SYSEXIT without it; the
// retpoline thunk (CALL over a 2-byte JMP, the target pushed, CALL over
// PAUSE, LFENCE and a JMP back to the PAUSE, the return address dropped,
// RET) beside the direct CALL of dispatch; one WRMSR (the IBPB) and 32
// CALLs over an INT3 (the RSB stuffing), then ADD ESP, 128.
func TestMitigatedTrampolines(t *testing.T) {
	for _, mode := range []string{"Off", "On"} {
		name := "sysenterMitigated" + mode
		in := decode(t, name, 32)
		assert.Equal(t, map[string]int{"Off": 0, "On": 3}[mode], x86insts.CR3Writes(in), name)
		assert.Equal(t, 2, count(in, x86asm.SYSEXIT, false), name)
		assert.Equal(t, 1, count(in, x86asm.IRETD, false), name)
		assert.Equal(t, 2, count(in, x86asm.VERW, false), name)
		assertFixFlags(t, name, in)
		var verwNext []x86asm.Op
		slots, thunk := 0, -1
		for i, x := range in {
			switch {
			case x.Op == x86asm.VERW:
				next := in[i+1].Op
				if next == x86asm.POPFD {
					// The SYSEXIT path: SYSEXIT's EDX loaded before the
					// clear, the user's EFLAGS (whose ZF VERW writes) and
					// EAX after it, then SYSEXIT.
					assert.Equal(t, x86asm.MOV, in[i-1].Op, "%s: EDX loaded before VERW", name)
					assert.Equal(t, x86asm.POP, in[i+2].Op, name)
					next = in[i+3].Op
				}
				verwNext = append(verwNext, next)
			case x.Op == x86asm.CALL && x.Args[0] == x86asm.Rel(2):
				thunk = i
			case x.Op == x86asm.CALL && x.Args[0] == x86asm.Rel(1):
				assert.Equal(t, x86asm.INT, in[i+1].Op, name)
				slots++
			}
		}
		assert.ElementsMatch(t, []x86asm.Op{x86asm.SYSEXIT, x86asm.IRETD}, verwNext, name)
		assert.Equal(t, 32, slots, "%s: RSB_CLEAR_LOOPS", name)
		require.GreaterOrEqual(t, thunk, 0, name)
		assert.Equal(t, []string{"CALL", "JMP", "PUSH", "CALL", "PAUSE", "LFENCE", "JMP", "LEA", "RET", "CALL"}, ops(in[thunk:thunk+10]), name)
		assert.Equal(t, 2, in[thunk+1].Len, "%s: CALL rel 2 skips the JMP", name)
		assert.Equal(t, x86asm.Rel(7), in[thunk+3].Args[0], name)
		assert.Equal(t, 7, in[thunk+4].Len+in[thunk+5].Len+in[thunk+6].Len, "%s: CALL rel 7 skips the trap", name)
		assert.Equal(t, x86asm.Rel(-7), in[thunk+6].Args[0], "%s: the trap loops on its PAUSE", name)
		assert.Equal(t, 1, count(in, x86asm.WRMSR, false), name)
	}
}
