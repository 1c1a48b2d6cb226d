package image

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/arch/x86/x86asm"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/testkit/x86insts"
)

// routine returns the decoded instructions of the entry routine sym in the
// built image, up to the UD2 of its "PTIEND" end marker (the bytes pti
// copies into the entry area).
func routine(t *testing.T, sym string) []x86asm.Inst {
	t.Helper()
	f := openImage(t)
	syms, err := f.Symbols()
	require.NoError(t, err)
	var s *elf.Symbol
	for i := range syms {
		if syms[i].Name == "github.com/ptilab/ptilab/pti."+sym {
			s = &syms[i]
		}
	}
	require.NotNil(t, s, "symbol pti.%s", sym)
	text := f.Section(".text")
	code, err := text.Data()
	require.NoError(t, err)
	body := code[s.Value-text.Addr:]
	end := bytes.Index(body, binary.LittleEndian.AppendUint64(nil, amd64.EndMarker))
	require.Positive(t, end, "end marker of %s", sym)
	var insts []x86asm.Inst
	for off := 0; off < end; {
		inst, err := decode(body[off:end])
		require.NoError(t, err, "%s+%#x", sym, off)
		insts = append(insts, inst)
		off += inst.Len
	}
	return insts
}

// decode decodes one 64-bit instruction, and ERETU and ERETS too, which
// x86asm does not know ("unrecognized instruction"): as an Inst of Op 0
// and length 4 with the F3 (ERETU) or F2 (ERETS) prefix, which shape
// names.
func decode(b []byte) (x86asm.Inst, error) {
	for _, e := range []struct {
		bytes  [4]byte
		prefix x86asm.Prefix
	}{{amd64.ERETU, x86asm.PrefixREP}, {amd64.ERETS, x86asm.PrefixREPN}} {
		if bytes.HasPrefix(b, e.bytes[:]) {
			return x86asm.Inst{Prefix: x86asm.Prefixes{e.prefix}, Len: len(e.bytes)}, nil
		}
	}
	return x86asm.Decode(b, 64)
}

// shape renders instructions as "OP dst" words for comparison, with the
// operands that matter to the mechanism (registers, CR3) and without
// addresses and displacements.
func shape(insts []x86asm.Inst) []string {
	var out []string
	for _, in := range insts {
		s := in.Op.String()
		switch {
		case in.Op == 0 && in.Prefix[0] == x86asm.PrefixREP:
			s = "ERETU"
		case in.Op == 0 && in.Prefix[0] == x86asm.PrefixREPN:
			s = "ERETS"
		}
		if in.Op == x86asm.SYSRET {
			if in.Prefix[0] == 0 && in.Len == 2 {
				s = "SYSRET (no REX.W)"
			} else {
				s = "SYSRETQ"
			}
		}
		for _, a := range in.Args {
			if r, ok := a.(x86asm.Reg); ok {
				s += " " + r.String()
			}
		}
		out = append(out, s)
	}
	return out
}

// The minimal trampolines: exactly the mechanism, nothing else.
var minimalShape = map[string][]string{
	"Off": {
		"SWAPGS", "MOV RSP", "MOV RSP", "CMP RAX", "JAE", "CALL",
		"MOV RSP", "PUSH RDI", "POP RDI", "MOV RSP", "SWAPGS", "SYSRETQ",
		"MOV RAX", "JMP",
	},
	"On": {
		"SWAPGS", "MOV RSP", "MOV RSP CR3", "AND RSP", "MOV CR3 RSP", "MOV RSP", "CMP RAX", "JAE", "CALL",
		"MOV RSP", "PUSH RDI", "MOV RDI CR3", "OR RDI", "MOV CR3 RDI", "POP RDI", "MOV RSP", "SWAPGS", "SYSRETQ",
		"MOV RAX", "JMP",
	},
	"PCID": {
		"SWAPGS", "MOV RSP", "MOV RSP CR3", "AND RSP", "BTS RSP", "MOV CR3 RSP", "MOV RSP", "CMP RAX", "JAE", "CALL",
		"MOV RSP", "PUSH RDI", "MOV RDI CR3", "OR RDI", "BTS RDI", "MOV CR3 RDI", "POP RDI", "MOV RSP", "SWAPGS", "SYSRETQ",
		"MOV RAX", "JMP",
	},
	// asi: off's way in; back to the nonsensitive table only after an
	// ASI fault (the flag tested, cleared, then on's or PCID's switch,
	// then the call of the asi actions unless the run has none).
	"ASI": {
		"SWAPGS", "MOV RSP", "MOV RSP", "CMP RAX", "JAE", "CALL",
		"MOV RSP", "PUSH RDI", "CMP", "JE", "MOV", "MOV RDI CR3", "OR RDI", "MOV CR3 RDI", "CMP", "JE", "CALL",
		"POP RDI", "MOV RSP", "SWAPGS", "SYSRETQ",
		"MOV RAX", "JMP",
	},
	"ASIPCID": {
		"SWAPGS", "MOV RSP", "MOV RSP", "CMP RAX", "JAE", "CALL",
		"MOV RSP", "PUSH RDI", "CMP", "JE", "MOV", "MOV RDI CR3", "OR RDI", "BTS RDI", "MOV CR3 RDI", "CMP", "JE", "CALL",
		"POP RDI", "MOV RSP", "SWAPGS", "SYSRETQ",
		"MOV RAX", "JMP",
	},
}

func TestMinimalTrampolines(t *testing.T) {
	for mode, want := range minimalShape {
		t.Run(mode, func(t *testing.T) {
			assert.Equal(t, want, shape(routine(t, "sysMinimal"+mode)))
		})
	}
}

// TO_USER_ASI's relative jumps (n(PC) in the source): without the flag,
// and without actions, each JE lands on the POP RDI after the actions'
// CALL, in both asi modes' minimal and linux trampolines.
func TestASIWayBack(t *testing.T) {
	for _, sym := range []string{"sysMinimalASI", "sysMinimalASIPCID", "sysLinuxASI", "sysLinuxASIPCID"} {
		insts := routine(t, sym)
		target := targets(t, insts)
		sh := shape(insts)
		backs := 0
		for i := range sh {
			if i+9 > len(sh) || sh[i] != "CMP" || sh[i+1] != "JE" || sh[i+2] != "MOV" || sh[i+3] != "MOV RDI CR3" {
				continue
			}
			backs++
			call := slices.Index(sh[i:], "CALL") + i
			assert.Equal(t, []string{"CMP", "JE", "CALL", "POP RDI"}, sh[call-2:call+2], "%s: the actions' call after the CR3 write", sym)
			assert.Equal(t, call+1, target(i+1), "%s: no ASI fault: over the switch back", sym)
			assert.Equal(t, call+1, target(call-1), "%s: no actions: over their call", sym)
		}
		assert.Equal(t, map[bool]int{false: 1, true: 2}[strings.HasPrefix(sym, "sysLinux")], backs, "%s: a switch back per way out", sym)
	}
}

// asiActions: each action behind the TEST of its site bit and a JEQ to
// the next; rsb's 16 rounds of two CALLs over an INT3 each, the stack put
// back and the loop closed; l1d's WRMSR with its registers saved; VERW
// last; every register but the flags kept (the pushes and pops pair up).
func TestASIActions(t *testing.T) {
	insts := routine(t, "asiActions")
	target := targets(t, insts)
	sh := shape(insts)
	assert.Equal(t, []string{
		"TEST", "JE", "PUSH RAX", "MOV EAX", "CALL", "INT", "CALL", "INT", "ADD RSP", "DEC EAX", "JNE", "LFENCE", "POP RAX",
		"TEST", "JE", "PUSH RAX", "PUSH RCX", "PUSH RDX", "MOV ECX", "MOV EAX", "XOR EDX EDX", "WRMSR", "POP RDX", "POP RCX", "POP RAX",
		"TEST", "JE", "VERW", "RET",
	}, sh)
	assert.Equal(t, 13, target(1), "no rsb: on to l1d's test")
	assert.Equal(t, 6, target(4), "the CALL skips its INT3")
	assert.Equal(t, 8, target(6), "the CALL skips its INT3")
	assert.Equal(t, 4, target(10), "16 rounds")
	assert.Equal(t, 25, target(14), "no l1d: on to verw's test")
	assert.Equal(t, 28, target(26), "no verw: the RET")
	assert.Equal(t, x86asm.Imm(amd64.MSR_IA32_FLUSH_CMD), insts[18].Args[1], "IA32_FLUSH_CMD")
	assert.Equal(t, x86asm.Imm(amd64.FLUSH_CMD_L1D), insts[19].Args[1], "L1D_FLUSH")
	assert.Equal(t, x86asm.Imm(16), insts[3].Args[1], "RSB_CLEAR_LOOPS/2 rounds")
}

// TestLinuxTrampolines checks the Linux-shaped trampolines' key steps in
// order: SWAPGS, the CR3 switch (with isolation; the asi modes' only on
// the way out, after an ASI fault), the pt_regs frame of 21 words, the
// canonical-RCX check before SYSRETQ, the CR3 switch back, and an IRETQ
// path.
func TestLinuxTrampolines(t *testing.T) {
	for _, mode := range []string{"Off", "On", "PCID", "ASI", "ASIPCID"} {
		t.Run(mode, func(t *testing.T) {
			sh := shape(routine(t, "sysLinux"+mode))
			all := strings.Join(sh, "; ")
			assert.Equal(t, "SWAPGS", sh[0])
			pushes := 0
			for _, s := range sh {
				if strings.HasPrefix(s, "PUSH") {
					pushes++
				}
			}
			// 21 words of pt_regs, then two on the way out by SYSRET and six
			// by IRET on the entry stack.
			assert.Equal(t, 21+2+6, pushes, all)
			assert.Contains(t, all, "SHL RAX; SAR RAX; CMP RAX RCX", "the canonical check of RCX")
			assert.Equal(t, 1, strings.Count(all, "SYSRETQ"), all)
			assert.NotContains(t, all, "SYSRET (no REX.W)")
			assert.Equal(t, 1, strings.Count(all, "IRETQ"), all)
			writes := strings.Count(all, "MOV CR3 ")
			switch mode {
			case "Off":
				assert.Zero(t, writes, "no CR3 write without isolation")
			case "ASI", "ASIPCID":
				assert.Equal(t, 2, writes, "out by SYSRET, out by IRET, each after an ASI fault only")
				assert.Equal(t, 2, strings.Count(all, "CMP; JE; MOV; MOV R"), "the flag tested and cleared before each: %s", all)
			default:
				assert.Equal(t, 3, writes, "in, out by SYSRET, out by IRET")
			}
		})
	}
}

// The FRED trampolines: the event check (type, then vector), then the
// minimal ones exactly the mechanism: SYS_MINIMAL's CR3 switches and
// call, no SWAPGS, no saved RSP, ERETU; the way to fredEvent last.
var fredMinimalShape = map[string][]string{
	"Off": {
		"CMP", "JNE", "CMP", "JNE", "MOV RSP", "CMP RAX", "JAE", "CALL",
		"MOV RSP", "PUSH RDI", "POP RDI", "ERETU",
		"MOV RAX", "JMP", "JMP",
	},
	"On": {
		"CMP", "JNE", "CMP", "JNE", "MOV RSP CR3", "AND RSP", "MOV CR3 RSP", "MOV RSP", "CMP RAX", "JAE", "CALL",
		"MOV RSP", "PUSH RDI", "MOV RDI CR3", "OR RDI", "MOV CR3 RDI", "POP RDI", "ERETU",
		"MOV RAX", "JMP", "JMP",
	},
	"PCID": {
		"CMP", "JNE", "CMP", "JNE", "MOV RSP CR3", "AND RSP", "BTS RSP", "MOV CR3 RSP", "MOV RSP", "CMP RAX", "JAE", "CALL",
		"MOV RSP", "PUSH RDI", "MOV RDI CR3", "OR RDI", "BTS RDI", "MOV CR3 RDI", "POP RDI", "ERETU",
		"MOV RAX", "JMP", "JMP",
	},
}

// TestFREDTrampolines checks the FRED entry's routines: the minimal
// trampolines' exact shape; the linux ones' (with their exits in the
// entry text) pt_regs of 21 words, a CR3 switch each way with isolation,
// one ERETU and nothing of SYSCALL's way back (SWAPGS, SYSRET, IRET); fredEvent's NMI count returning by ERETU
// or ERETS, its recovery of the oracle's faults and its way to runExit; toUserFRED's frame of 8 words and its
// ERETU. Each ring-3 entry must fit the 256 bytes before the ring-0 entry
// of its page (pti.placeFRED refuses one that does not).
func TestFREDTrampolines(t *testing.T) {
	size := func(insts []x86asm.Inst) int {
		n := 0
		for _, in := range insts {
			n += in.Len
		}
		return n
	}
	for mode, want := range fredMinimalShape {
		t.Run("minimal"+mode, func(t *testing.T) {
			insts := routine(t, "fredMinimal"+mode)
			assert.Equal(t, want, shape(insts))
			assert.LessOrEqual(t, size(insts), amd64.FREDRing0Entry)
		})
	}
	for _, mode := range []string{"Off", "On", "PCID"} {
		t.Run("linux"+mode, func(t *testing.T) {
			insts := routine(t, "fredLinux"+mode)
			assert.LessOrEqual(t, size(insts), amd64.FREDRing0Entry)
			sh := append(shape(insts), shape(routine(t, "fredLinuxExit"+mode))...)
			all := strings.Join(sh, "; ")
			assert.Equal(t, []string{"CMP", "JNE", "CMP", "JNE"}, sh[:4], "the event check first")
			assert.Equal(t, 21+7, strings.Count(all, "PUSH"), "pt_regs, then the FRED return frame and RDI on the entry stack: %s", all)
			assert.Equal(t, 1, strings.Count(all, "ERETU"), all)
			for _, no := range []string{"SWAPGS", "SYSRET", "IRETQ"} {
				assert.NotContains(t, all, no)
			}
			writes := strings.Count(all, "MOV CR3 ")
			if mode == "Off" {
				assert.Zero(t, writes, "no CR3 write without isolation")
			} else {
				assert.Equal(t, 2, writes, "in and out")
			}
		})
	}
	ev := strings.Join(shape(routine(t, "fredEvent")), "; ")
	assert.Contains(t, ev, "ERETU; ERETS", "an NMI returns to the ring it interrupted")
	assert.Equal(t, 3, strings.Count(ev, "INC"), "an NMI count on each path (CR3 switched or not), and the recovered faults' count: %s", ev)
	assert.Contains(t, ev, "PUSH RAX; MOV RAX; CMP RAX; JAE; INC RAX; MOV RAX; MOV RAX; MOV RAX; MOV RAX; MOV RAX; MOV RAX; MOV RAX; POP RAX; ERETU",
		"the leak oracle's #PF recovery (RECOVER_PF), back by ERETU")
	assert.True(t, strings.HasSuffix(ev, "MOV RAX; JMP RAX"), "the fatal way ends in runExit: %s", ev)
	sh := shape(routine(t, "toUserFRED"))
	all := strings.Join(sh, "; ")
	assert.Equal(t, 8, strings.Count(all, "PUSH")-1, "the FRED return frame, and the push that clears RBP: %s", all)
	assert.Equal(t, "ERETU", sh[len(sh)-1])
}

// TestExceptionCommonPath checks the start of the common path of the
// run's exception entries (the 32 stubs that jump to it are
// amd64.ExceptionStub's, which pti.Setup writes and amd64's tests decode):
// it loads the kernel side's CR3 from the entry data, since in mode off
// the one table need not be 8 KiB aligned, so clearing bit 12 of CR3 would
// switch to another page. Before it, the leak oracle's recovery of a
// ring-3 #PF (pti.StartRecovering): the vector compared, the count checked
// against the limit, the IRET frame's RIP rewritten and an IRETQ, with no
// SWAPGS and no CR3 write on that path (it never leaves the user side).
// After it, a kernel fault's check for an ASI fault (pti/asi.go), resumed
// on the sensitive table.
func TestExceptionCommonPath(t *testing.T) {
	sh := shape(routine(t, "excCommon"))
	assert.Equal(t, []string{"TEST", "JE", "CMP", "JNE", "PUSH RAX"}, sh[:5])
	swapgs := slices.Index(sh, "SWAPGS")
	require.Positive(t, swapgs)
	assert.Equal(t, []string{"SWAPGS", "JMP"}, sh[swapgs:swapgs+2], "a ring-3 fault goes to the fatal path")
	kernel := strings.Join(sh[swapgs+2:], "; ")
	assert.True(t, strings.HasPrefix(kernel, "CMP; JNE; TEST; JNE; PUSH RAX; MOV RAX CR3; BT RAX; JAE; MOV RAX CR2; CMP RAX; JB; CMP RAX; JAE; "+
		"MOV RAX CR3; AND RAX; OR RAX; MOV CR3 RAX; MOV; INC; POP RAX; ADD RSP; IRETQ; POP RAX; MOV RAX; MOV CR3 RAX"),
		"a kernel #PF of a page not present, on the nonsensitive table (CR3 bit 12), in the sensitive span: the sensitive CR3, the flag, the count and IRETQ (an ASI fault); else the fatal path's kernel CR3 from the entry data: %s", kernel)
	recovery := strings.Join(sh[:swapgs], "; ")
	assert.Equal(t, 1, strings.Count(recovery, "IRETQ"), recovery)
	assert.Contains(t, recovery, "POP RAX; ADD RSP; IRETQ", recovery)
	assert.NotContains(t, recovery, "MOV CR3", recovery)
	assert.Equal(t, 1, strings.Count(strings.Join(sh, "; "), "SWAPGS"))
}

// TestKernelExceptionStubs checks goos's 32 exception stubs: PUSH 0 where
// the CPU pushes no error code (amd64.HasErrorCode), two NOPs where it
// pushes one, then PUSH n and a JMP to the common path, so that every
// stub leaves the same frame.
func TestKernelExceptionStubs(t *testing.T) {
	im := loadImage(t)
	for v := 0; v < 32; v++ {
		name := fmt.Sprintf("github.com/ptilab/ptilab/goos.exc%d", v)
		s, body := im.function(t, name)
		var ops []string
		var last x86asm.Inst
		for off := 0; off < len(body); {
			in, err := x86asm.Decode(body[off:], 64)
			require.NoError(t, err, "%s+%#x", name, off)
			ops = append(ops, in.String())
			last = in
			off += in.Len
			if in.Op == x86asm.JMP {
				rel := int64(in.Args[0].(x86asm.Rel))
				assert.Equal(t, "github.com/ptilab/ptilab/goos.excCommon.abi0", im.st.at(uint64(int64(s.Value)+int64(off)+rel)), "vector %d", v)
				break
			}
		}
		require.Equal(t, x86asm.JMP, last.Op, "vector %d: %v", v, ops)
		want := []string{"PUSH 0x0", fmt.Sprintf("PUSH 0x%x", v)}
		if amd64.HasErrorCode(v) {
			want = []string{"NOP", "NOP", fmt.Sprintf("PUSH 0x%x", v)}
		}
		assert.Equal(t, want, ops[:len(ops)-1], "vector %d", v)
	}
}

// dwarfFields returns the fields of the struct type name in the image's
// DWARF: name to byte offset.
func dwarfFields(t *testing.T, f *elf.File, name string) map[string]int64 {
	t.Helper()
	d, err := f.DWARF()
	require.NoError(t, err)
	r := d.Reader()
	for {
		e, err := r.Next()
		require.NoError(t, err)
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagStructType || e.Val(dwarf.AttrName) != name {
			continue
		}
		typ, err := d.Type(e.Offset)
		require.NoError(t, err)
		fields := map[string]int64{}
		for _, fl := range typ.(*dwarf.StructType).Field {
			fields[fl.Name] = fl.ByteOffset
		}
		return fields
	}
	t.Fatalf("no struct type %s in the image's DWARF", name)
	return nil
}

// pageFields flattens pti.pageRoutines, whose fields at outer's offsets
// are the page routines' tables: each table's fields at their offsets in
// it, named "Table.Field", and the plain fields (FredEvent) as they are.
func pageFields(t *testing.T, f *elf.File, pkg string, outer map[string]int64) map[string]int64 {
	t.Helper()
	tables := map[string]string{"Defer": "deferRoutines", "NoSwitch": "noSwitchRoutines", "FRED": "fredRoutines", "LASS": "lassRoutines"}
	out := map[string]int64{}
	for name, base := range outer {
		typ, ok := tables[name]
		if !ok {
			out[name] = base
			continue
		}
		for field, off := range dwarfFields(t, f, pkg+typ) {
			out[name+"."+field] = base + off
		}
	}
	return out
}

// tableStores decodes the table filler fn (LEAQ sym(SB), AX; MOVQ AX,
// off(reg) pairs) and returns, for each base register, the name of the
// symbol stored at each offset (several names where an offset is written
// twice).
func tableStores(t *testing.T, im *image, fn string) map[x86asm.Reg]map[int64][]string {
	t.Helper()
	s, body := im.function(t, fn)
	stores := map[x86asm.Reg]map[int64][]string{}
	loaded := map[x86asm.Reg]string{}
	for off := 0; off < len(body); {
		in, err := x86asm.Decode(body[off:], 64)
		require.NoError(t, err, "%s+%#x", fn, off)
		pc := s.Value + uint64(off)
		off += in.Len
		if in.Op == x86asm.RET {
			break
		}
		dst, _ := in.Args[0].(x86asm.Reg)
		src, isMem := in.Args[1].(x86asm.Mem)
		switch {
		case in.Op == x86asm.LEA && isMem && src.Base == x86asm.RIP:
			target := uint64(int64(pc) + int64(in.Len) + src.Disp)
			name := im.st.at(target)
			i := sort.Search(len(im.st.funcs), func(i int) bool { return im.st.funcs[i].Value >= target })
			require.True(t, i < len(im.st.funcs) && im.st.funcs[i].Value == target, "%s+%#x: LEA of %#x, inside %s", fn, pc-s.Value, target, name)
			loaded[dst] = name
		case in.Op == x86asm.MOV:
			m, ok := in.Args[0].(x86asm.Mem)
			r, isReg := in.Args[1].(x86asm.Reg)
			if !ok || !isReg || loaded[r] == "" {
				continue // the arguments' loads
			}
			if stores[m.Base] == nil {
				stores[m.Base] = map[int64][]string{}
			}
			stores[m.Base][m.Disp] = append(stores[m.Base][m.Disp], loaded[r])
		}
	}
	return stores
}

// TestRoutineTablesByName checks the assembly that fills pti's routine
// and program tables, on the built image: each table's every field (from
// the image's DWARF) is written exactly once, with the address of the
// symbol its name says (a routine's field is its symbol's name with the
// first letter in upper case; a program's, the symbol less its "user"),
// and nothing else is written. A routine the tables copy (all but the
// kernel routines) holds its end marker exactly once, inside its own
// symbol: the copier (pti.code) copies up to the first marker it finds,
// and a routine without one would be copied with its neighbour's code.
func TestRoutineTablesByName(t *testing.T) {
	f := openImage(t)
	im := loadImage(t)
	const pkg = "github.com/ptilab/ptilab/pti."
	lower := func(s string) string { return strings.ToLower(s[:1]) + s[1:] }
	for _, tc := range []struct {
		filler, table string
		reg           x86asm.Reg
		symbol        func(field string) string
		copied        bool
	}{
		{"routines.abi0", "entryRoutines", x86asm.RDI, lower, true},
		{"routines.abi0", "kernelRoutines", x86asm.RSI, lower, false},
		{"routines.abi0", "programTable", x86asm.RDX, func(f string) string { return "user" + f }, true},
		{"pageRoutinesTable.abi0", "pageRoutines", x86asm.RDI, func(f string) string { return lower(f[strings.LastIndex(f, ".")+1:]) }, true},
	} {
		t.Run(tc.table, func(t *testing.T) {
			fields := dwarfFields(t, f, pkg+tc.table)
			if tc.table == "pageRoutines" {
				fields = pageFields(t, f, pkg, fields)
			}
			require.NotEmpty(t, fields)
			stores := tableStores(t, im, pkg+tc.filler)[tc.reg]
			assert.Len(t, stores, len(fields), "stores %v for fields %v", stores, fields)
			for name, off := range fields {
				assert.Equal(t, []string{pkg + tc.symbol(name)}, stores[off], "field %s at %d", name, off)
				if tc.copied {
					_, code := im.function(t, pkg+tc.symbol(name))
					marker := binary.LittleEndian.AppendUint64(nil, amd64.EndMarker)
					assert.Equal(t, 1, bytes.Count(code, marker), "%s: end markers inside its symbol", tc.symbol(name))
				}
			}
		})
	}
}

// function returns the symbol of function name in the image and its bytes.
func (im *image) function(t *testing.T, name string) (elf.Symbol, []byte) {
	t.Helper()
	for _, s := range im.st.funcs {
		if s.Name == name {
			return s, im.code[s.Value-im.text.Addr:][:s.Size]
		}
	}
	require.Fail(t, "no function "+name+" in the image")
	return elf.Symbol{}, nil
}

// TestGateCleansFirmwareAVX: after the firmware call returns, and before
// anything of the kernel's is loaded, efi.call executes VZEROUPPER when
// fwAVXUpper says the firmware runs with AVX (the kernel runs with
// CR4.OSXSAVE clear, under which VZEROUPPER would be #UD and nothing
// could clean the YMM upper halves the firmware dirtied).
func TestGateCleansFirmwareAVX(t *testing.T) {
	im := loadImage(t)
	_, code := im.function(t, "github.com/ptilab/ptilab/efi.call.abi0")
	var insts []x86asm.Inst
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], 64)
		require.NoError(t, err, "efi.call+%#x", off)
		insts = append(insts, inst)
		off += inst.Len
	}
	// The firmware call: CALL R12.
	fw := slices.IndexFunc(insts, func(in x86asm.Inst) bool { return in.Op == x86asm.CALL && in.Args[0] == x86asm.R12 })
	require.Positive(t, fw, "CALL R12, the firmware call")
	vz := slices.IndexFunc(insts, func(in x86asm.Inst) bool { return in.Op == x86asm.VZEROUPPER })
	require.Greater(t, vz, fw, "VZEROUPPER after the firmware call")
	// Between the two: nothing of the kernel's loaded (no LGDT, LIDT, far
	// return, segment or control-register load).
	for _, in := range insts[fw+1 : vz] {
		assert.NotContains(t, []x86asm.Op{x86asm.LGDT, x86asm.LIDT, x86asm.LRET, x86asm.CALL}, in.Op, "%v before the VZEROUPPER", in)
		if in.Op == x86asm.MOV {
			for _, a := range in.Args {
				if r, ok := a.(x86asm.Reg); ok {
					assert.False(t, r >= x86asm.CR0 && r <= x86asm.CR15 || r >= x86asm.ES && r <= x86asm.GS, "%v before the VZEROUPPER", in)
				}
			}
		}
	}
	// And the kernel's GDT after it.
	assert.Positive(t, slices.IndexFunc(insts[vz:], func(in x86asm.Inst) bool { return in.Op == x86asm.LGDT }), "the kernel's LGDT after the VZEROUPPER")
}

// TestDeferredTrampolines checks the deferred modes' routines on the
// built image: their trampolines write no CR3 (the dispatcher does, once
// each way, with NOFLUSH set by BTS in the PCID one); the no-switch ones
// call the no-switch table's handler before the dispatcher; the linux ones
// build the 21-word pt_regs frame and pass its address in R11; the
// no-switch handlers, which run on the user table, write no CR3 either.
func TestDeferredTrampolines(t *testing.T) {
	for _, sym := range []string{"sysMinimalDefer", "sysLinuxDefer", "sysMinimalNoSwitch", "sysLinuxNoSwitch", "nsGetppid", "nsWork"} {
		assert.Zero(t, x86insts.CR3Writes(routine(t, sym)), "%s writes no CR3", sym)
	}
	for sym, bts := range map[string]int{"dispatchOn": 0, "dispatchPCID": 2} {
		insts := routine(t, sym)
		assert.Equal(t, 2, x86insts.CR3Writes(insts), "%s: to the kernel table and back", sym)
		n := 0
		for _, s := range shape(insts) {
			if strings.HasPrefix(s, "BTS") {
				n++
			}
		}
		assert.Equal(t, bts, n, "%s: NOFLUSH each way with PCIDs", sym)
	}
	for _, sym := range []string{"sysMinimalNoSwitch", "sysLinuxNoSwitch", "sysMinimalDefer", "sysLinuxDefer"} {
		calls := 0
		for _, s := range shape(routine(t, sym)) {
			if s == "CALL" {
				calls++
			}
		}
		want := 1
		if strings.Contains(sym, "NoSwitch") {
			want = 2 // the no-switch handler or the dispatcher
		}
		assert.Equal(t, want, calls, sym)
	}
	for _, sym := range []string{"sysLinuxDefer", "sysLinuxNoSwitch"} {
		sh := shape(routine(t, sym))
		pushes := 0
		for _, s := range sh {
			if strings.HasPrefix(s, "PUSH") {
				pushes++
			}
		}
		assert.Equal(t, 21, pushes, "%s: the pt_regs frame", sym)
		assert.Contains(t, strings.Join(sh, "; "), "MOV R11 RSP; CALL", "%s: the frame's address in R11 for the dispatcher's handler", sym)
	}
}

// TestMitigatedTrampolines checks the mitigated trampolines (pti's
// SYS_MITIGATED): the linux flavour's frame, checks and CR3 writes, plus
// each knob's site behind its TEST and JE: two VERWs (before SYSRETQ and
// IRETQ), two WRMSRs (IBRS in and out), LFENCE after SWAPGS; and the CALLs
// written as bytes land where they must: clear_bhb_loop's CALL into its
// inner CALL, that one past its RET onto MOV EAX, 5; the retpoline's CALL
// onto the thunk's CALL, which skips the speculation trap (PAUSE; LFENCE;
// JMP back to the PAUSE) onto MOV [RSP], R11; RET.
// targets returns a function that gives the index of the instruction of
// insts that the relative CALL, JMP or Jcc at index i goes to.
func targets(t *testing.T, insts []x86asm.Inst) func(i int) int {
	at := map[int]int{} // offset -> index
	offsets := make([]int, len(insts)+1)
	for i, in := range insts {
		at[offsets[i]] = i
		offsets[i+1] = offsets[i] + in.Len
	}
	return func(i int) int {
		t.Helper()
		rel, ok := insts[i].Args[0].(x86asm.Rel)
		require.True(t, ok, "%v is relative", insts[i])
		j, ok := at[offsets[i+1]+int(rel)]
		require.True(t, ok, "%v lands on an instruction", insts[i])
		return j
	}
}

func TestMitigatedTrampolines(t *testing.T) {
	for _, mode := range []string{"Off", "On", "PCID"} {
		t.Run(mode, func(t *testing.T) {
			insts := routine(t, "sysMitigated"+mode)
			target := targets(t, insts)
			sh := shape(insts)
			all := strings.Join(sh, "; ")
			assert.Equal(t, []string{"SWAPGS", "TEST", "JE", "LFENCE"}, sh[:4], "LFENCE after SWAPGS, behind its site test")
			count := func(s string) int { return strings.Count("; "+all+"; ", "; "+s+"; ") }
			assert.Equal(t, 2, count("VERW"), all)
			assert.Equal(t, 2, count("WRMSR"), all)
			assert.Equal(t, 1, count("SYSRETQ"), all)
			assert.Equal(t, 1, count("IRETQ"), all)
			assert.Contains(t, all, "SWAPGS; TEST; JE; VERW; SYSRETQ")
			assert.Contains(t, all, "SWAPGS; TEST; JE; VERW; IRETQ")
			writes := strings.Count(all, "MOV CR3 ")
			if mode == "Off" {
				assert.Zero(t, writes)
			} else {
				assert.Equal(t, 3, writes, "in, out by SYSRET, out by IRET")
			}
			var calls []int
			for i, in := range insts {
				if in.Op == x86asm.CALL {
					if _, ok := in.Args[0].(x86asm.Rel); ok {
						calls = append(calls, i)
					}
				}
			}
			require.Len(t, calls, 4, "clear_bhb_loop's two, the retpoline's two")
			inner := target(calls[0])
			assert.Equal(t, calls[1], inner, "clear_bhb_loop: the first CALL reaches the inner CALL")
			two := target(inner)
			assert.Equal(t, "MOV EAX", sh[two], "the inner CALL skips its RET")
			assert.Equal(t, x86asm.RET, insts[inner+1].Op)
			thunk := target(calls[2])
			assert.Equal(t, calls[3], thunk, "the retpoline's CALL reaches the thunk")
			assert.Equal(t, x86asm.JMP, insts[calls[2]+1].Op, "the callee returns onto a JMP past the thunk")
			rop := target(thunk)
			assert.Equal(t, []string{"PAUSE", "LFENCE", "JMP"}, sh[thunk+1:thunk+4], "the speculation trap")
			assert.Equal(t, thunk+1, target(thunk+3), "the trap loops")
			assert.Equal(t, thunk+4, rop)
			assert.Equal(t, "MOV R11", sh[rop], "MOV [RSP], R11")
			assert.Equal(t, x86asm.RET, insts[rop+1].Op)
		})
	}
}
