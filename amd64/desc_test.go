package amd64

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/arch/x86/x86asm"
)

// bitsOf returns bits [hi:lo] of v.
func bitsOf(v uint64, hi, lo uint) uint64 {
	return v >> lo & (1<<(hi-lo+1) - 1)
}

// The selectors are Linux's (arch/x86/include/asm/segment.h) and the flat
// descriptors behind them Linux's GDT_ENTRY_INIT values
// (arch/x86/kernel/cpu/common.c, gdt_page).
func TestSelectorsAndDescriptorsMatchLinux(t *testing.T) {
	tests := []struct {
		name           string
		sel, wantSel   int
		desc, wantDesc uint64
	}{
		{"KERNEL32_CS", KERNEL32_CS, 0x08, DescKernel32Code, 0x00cf9b000000ffff},
		{"KERNEL_CS", KERNEL_CS, 0x10, DescKernelCode, 0x00af9b000000ffff},
		{"KERNEL_DS", KERNEL_DS, 0x18, DescKernelData, 0x00cf93000000ffff},
		{"USER32_CS", USER32_CS, 0x23, DescUser32Code, 0x00cffb000000ffff},
		{"USER_DS", USER_DS, 0x2b, DescUserData, 0x00cff3000000ffff},
		{"USER_CS", USER_CS, 0x33, DescUserCode, 0x00affb000000ffff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantSel, tt.sel, "selector")
			assert.Equal(t, fmt.Sprintf("%#016x", tt.wantDesc), fmt.Sprintf("%#016x", tt.desc), "descriptor")
		})
	}
	// The TSS's descriptor is built at run time (TSSDescriptor); it takes
	// two entries and must fit in the GDT.
	assert.Equal(t, 0x40, TSS_SEL)
	assert.Less(t, GDT_ENTRY_TSS+1, GDT_ENTRIES)
}

// GDT puts each flat descriptor at its selector's index, the TSS
// descriptor at TSS_SEL, and nothing else.
func TestGDT(t *testing.T) {
	const tss = 0xffff_8000_1234_5000
	g := GDT(tss)
	for sel, d := range map[int]uint64{
		KERNEL32_CS: DescKernel32Code, KERNEL_CS: DescKernelCode, KERNEL_DS: DescKernelData,
		USER32_CS: DescUser32Code, USER_DS: DescUserData, USER_CS: DescUserCode,
	} {
		assert.Equal(t, d, g[sel>>3], "selector %#x", sel)
		g[sel>>3] = 0
	}
	lo, hi := TSSDescriptor(tss, TSSSize-1)
	assert.Equal(t, [2]uint64{lo, hi}, [2]uint64(g[TSS_SEL>>3:TSS_SEL>>3+2]))
	g[TSS_SEL>>3], g[TSS_SEL>>3+1] = 0, 0
	assert.Equal(t, [GDT_ENTRIES]uint64{}, g, "every other entry null")
}

// Decode the flat descriptors field by field (SDM Vol. 3A, Figure 3-8).
func TestFlatDescriptorFields(t *testing.T) {
	tests := []struct {
		name           string
		d              uint64
		code, l, db    bool
		dpl            uint64
		readOrWritable bool
	}{
		{"KERNEL32_CS", DescKernel32Code, true, false, true, 0, true},
		{"KERNEL_CS", DescKernelCode, true, true, false, 0, true},
		{"KERNEL_DS", DescKernelData, false, false, true, 0, true},
		{"USER32_CS", DescUser32Code, true, false, true, 3, true},
		{"USER_DS", DescUserData, false, false, true, 3, true},
		{"USER_CS", DescUserCode, true, true, false, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.d
			assert.Equal(t, uint64(0xfffff), bitsOf(d, 15, 0)|bitsOf(d, 51, 48)<<16, "limit")
			assert.Equal(t, uint64(0), bitsOf(d, 39, 16)|bitsOf(d, 63, 56)<<24, "base")
			assert.Equal(t, uint64(1), bitsOf(d, 40, 40), "accessed")
			assert.Equal(t, tt.readOrWritable, bitsOf(d, 41, 41) == 1, "R/W")
			assert.Equal(t, tt.code, bitsOf(d, 43, 43) == 1, "code")
			assert.Equal(t, uint64(1), bitsOf(d, 44, 44), "S (code/data)")
			assert.Equal(t, tt.dpl, bitsOf(d, 46, 45), "DPL")
			assert.Equal(t, uint64(1), bitsOf(d, 47, 47), "P")
			assert.Equal(t, tt.l, bitsOf(d, 53, 53) == 1, "L")
			assert.Equal(t, tt.db, bitsOf(d, 54, 54) == 1, "D/B")
			assert.Equal(t, uint64(1), bitsOf(d, 55, 55), "G")
			// L and D/B together are reserved for code segments.
			assert.False(t, tt.code && bitsOf(d, 53, 53) == 1 && bitsOf(d, 54, 54) == 1)
		})
	}
}

// SYSCALL and SYSRET derive the selectors from STAR (SDM Vol. 3A, 5.8.8;
// Vol. 2B, SYSCALL and SYSRET).
func TestSyscallSysretLayout(t *testing.T) {
	starSyscall := uint64(KERNEL_CS) // STAR[47:32]
	starSysret := uint64(USER32_CS)  // STAR[63:48]
	star := starSysret<<48 | starSyscall<<32

	// SYSCALL: CS = STAR[47:32] & 0xfffc, SS = STAR[47:32] + 8.
	kcs := bitsOf(star, 47, 32) &^ 3
	kss := bitsOf(star, 47, 32) + 8
	assert.Equal(t, uint64(KERNEL_CS), kcs)
	assert.Equal(t, uint64(KERNEL_DS), kss)

	// SYSRET to 64-bit mode: CS = STAR[63:48] + 16, SS = STAR[63:48] + 8,
	// both with RPL 3.
	ucs := (bitsOf(star, 63, 48) + 16) | 3
	uss := (bitsOf(star, 63, 48) + 8) | 3
	assert.Equal(t, uint64(USER_CS), ucs)
	assert.Equal(t, uint64(USER_DS), uss)
	// SYSRET to compatibility mode: CS = STAR[63:48].
	assert.Equal(t, uint64(USER32_CS), bitsOf(star, 63, 48)|3)

	// The descriptors at those entries of the GDT must be what the CPU
	// expects.
	gdt := GDT(0)
	isCode64 := func(d uint64) bool { return bitsOf(d, 43, 43) == 1 && bitsOf(d, 53, 53) == 1 }
	isData := func(d uint64) bool { return bitsOf(d, 43, 43) == 0 && bitsOf(d, 41, 41) == 1 }
	dpl := func(d uint64) uint64 { return bitsOf(d, 46, 45) }

	assert.True(t, isCode64(gdt[int(kcs>>3)]), "kernel CS is 64-bit code")
	assert.Equal(t, uint64(0), dpl(gdt[int(kcs>>3)]))
	assert.True(t, isData(gdt[int(kss>>3)]), "kernel SS is writable data")
	assert.Equal(t, uint64(0), dpl(gdt[int(kss>>3)]))
	assert.True(t, isCode64(gdt[int(ucs>>3)]), "user CS is 64-bit code")
	assert.Equal(t, uint64(3), dpl(gdt[int(ucs>>3)]))
	assert.True(t, isData(gdt[int(uss>>3)]), "user SS is writable data")
	assert.Equal(t, uint64(3), dpl(gdt[int(uss>>3)]))

	// Selector RPLs agree with the DPLs.
	for sel, want := range map[int]int{KERNEL32_CS: 0, KERNEL_CS: 0, KERNEL_DS: 0, USER32_CS: 3, USER_DS: 3, USER_CS: 3, TSS_SEL: 0} {
		assert.Equal(t, want, sel&3, "RPL of %#x", sel)
	}
}

// TSSDescriptor decoded per SDM Vol. 3A, Figure 8-4.
func TestTSSDescriptor(t *testing.T) {
	tests := []struct {
		name  string
		base  uint64
		limit uint32
	}{
		{"above 4 GiB", 0x0000_0012_3456_789a, TSSSize - 1},
		{"upper half", 0xffff_8000_dead_b000, TSSSize - 1},
		{"below 4 GiB", 0x0000_0000_00c0_ffee, 0x2067},
		{"20-bit limit", 0x0000_0001_0000_0000, 0xabcde},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := TSSDescriptor(tt.base, tt.limit)
			limit := bitsOf(lo, 15, 0) | bitsOf(lo, 51, 48)<<16
			assert.Equal(t, uint64(tt.limit&0xfffff), limit, "limit")
			base := bitsOf(lo, 39, 16) | bitsOf(lo, 63, 56)<<24 | bitsOf(hi, 31, 0)<<32
			assert.Equal(t, fmt.Sprintf("%#x", tt.base), fmt.Sprintf("%#x", base), "base")
			assert.Equal(t, uint64(TypeTSSAvailable), bitsOf(lo, 43, 40), "type")
			assert.Equal(t, uint64(0), bitsOf(lo, 44, 44), "S must be 0 (system)")
			assert.Equal(t, uint64(0), bitsOf(lo, 46, 45), "DPL")
			assert.Equal(t, uint64(1), bitsOf(lo, 47, 47), "P")
			assert.Equal(t, uint64(0), bitsOf(lo, 55, 52), "AVL, L, D/B, G")
			assert.Equal(t, uint64(0), bitsOf(hi, 63, 32), "reserved upper dword")
		})
	}

	// One case checked against a hand-encoded value.
	lo, hi := TSSDescriptor(0x0000_0012_3456_789a, 0x67)
	assert.Equal(t, uint64(0x34008956_789a0067), lo)
	assert.Equal(t, uint64(0x12), hi)
}

func tssBytes(tss *TSS) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(tss)), unsafe.Sizeof(*tss))
}

func TestTSSLayout(t *testing.T) {
	require.Equal(t, uintptr(TSSSize), unsafe.Sizeof(TSS{}))
	require.Equal(t, 104, TSSSize)

	var tss TSS
	tss.SetRSP0(0x1122334455667788)
	for n := 1; n <= 7; n++ {
		tss.SetIST(n, 0xa0a0a0a0_00000000|uint64(n)<<8|uint64(n))
	}
	tss.SetIOMapBase(TSSSize)
	b := tssBytes(&tss)

	assert.Equal(t, uint32(0), binary.LittleEndian.Uint32(b[0:]), "reserved at 0")
	assert.Equal(t, uint64(0x1122334455667788), binary.LittleEndian.Uint64(b[4:]), "RSP0 at 4")
	assert.Equal(t, uint64(0x1122334455667788), tss.RSP0())
	assert.Equal(t, make([]byte, 24), b[12:36], "RSP1, RSP2 and reserved untouched")
	istOff := []int{36, 44, 52, 60, 68, 76, 84}
	for i, off := range istOff {
		n := i + 1
		want := 0xa0a0a0a0_00000000 | uint64(n)<<8 | uint64(n)
		assert.Equal(t, want, binary.LittleEndian.Uint64(b[off:]), "IST%d at byte %d", n, off)
		assert.Equal(t, want, tss.IST(n), "IST(%d)", n)
	}
	assert.Equal(t, make([]byte, 8), b[92:100], "reserved before the I/O map base")
	assert.Equal(t, uint16(0), binary.LittleEndian.Uint16(b[100:]), "reserved low half of word 100")
	assert.Equal(t, uint16(TSSSize), binary.LittleEndian.Uint16(b[102:]), "I/O map base at 102")
	assert.Equal(t, uint32(TSSSize)<<16, binary.LittleEndian.Uint32(b[100:]))
}

func TestTSSFieldsIndependent(t *testing.T) {
	// Setting one field leaves every other byte alone.
	tests := []struct {
		name   string
		set    func(*TSS)
		lo, hi int
	}{
		{"RSP0", func(s *TSS) { s.SetRSP0(^uint64(0)) }, 4, 12},
		{"IST1", func(s *TSS) { s.SetIST(1, ^uint64(0)) }, 36, 44},
		{"IST4", func(s *TSS) { s.SetIST(4, ^uint64(0)) }, 60, 68},
		{"IST7", func(s *TSS) { s.SetIST(7, ^uint64(0)) }, 84, 92},
		{"IOMap", func(s *TSS) { s.SetIOMapBase(0xffff) }, 102, 104},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tss TSS
			tt.set(&tss)
			for i, c := range tssBytes(&tss) {
				if i >= tt.lo && i < tt.hi {
					assert.Equal(t, byte(0xff), c, "byte %d", i)
				} else {
					assert.Equal(t, byte(0), c, "byte %d", i)
				}
			}
		})
	}
}

// InterruptGate decoded per SDM Vol. 3A, Figure 6-8.
func TestInterruptGate(t *testing.T) {
	tests := []struct {
		name    string
		handler uint64
		sel     uint16
		ist     uint8
		dpl     uint8
		typ     uint8
	}{
		{"kernel text", 0xffffffff_81234567, KERNEL_CS, 0, 0, TypeInterruptGate},
		{"low handler IST1", 0x0000_0000_0010_2030, KERNEL_CS, 1, 0, TypeInterruptGate},
		{"trap gate DPL3", 0x0000_7fff_abcd_ef01, KERNEL_CS, 0, 3, TypeTrapGate},
		{"IST7", 0x0000_0001_0000_ffff, KERNEL_CS, 7, 0, TypeInterruptGate},
		{"all-ones offset", ^uint64(0), 0xfff8, 3, 3, TypeTrapGate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := InterruptGate(tt.handler, tt.sel, tt.ist, tt.dpl, tt.typ)
			off := bitsOf(g.Lo, 15, 0) | bitsOf(g.Lo, 63, 48)<<16 | bitsOf(g.Hi, 31, 0)<<32
			assert.Equal(t, fmt.Sprintf("%#x", tt.handler), fmt.Sprintf("%#x", off), "offset")
			assert.Equal(t, uint64(tt.sel), bitsOf(g.Lo, 31, 16), "selector")
			assert.Equal(t, uint64(tt.ist), bitsOf(g.Lo, 34, 32), "IST")
			assert.Equal(t, uint64(0), bitsOf(g.Lo, 39, 35), "bits 39:35 zero")
			assert.Equal(t, uint64(tt.typ), bitsOf(g.Lo, 43, 40), "type")
			assert.Equal(t, uint64(0), bitsOf(g.Lo, 44, 44), "bit 44 zero")
			assert.Equal(t, uint64(tt.dpl), bitsOf(g.Lo, 46, 45), "DPL")
			assert.Equal(t, uint64(1), bitsOf(g.Lo, 47, 47), "P")
			assert.Equal(t, uint64(0), bitsOf(g.Hi, 63, 32), "reserved")
			assert.Equal(t, tt.handler, g.Handler(), "Handler round trip")
		})
	}

	// Hand-encoded reference value.
	g := InterruptGate(0xffffffff_81234567, KERNEL_CS, 2, 0, TypeInterruptGate)
	assert.Equal(t, Gate{Lo: 0x81238e02_00104567, Hi: 0xffffffff}, g)

	// Out-of-range IST and DPL do not spill into neighbouring fields.
	g = InterruptGate(0, 0, 0xff, 0xff, 0xff)
	assert.Equal(t, uint64(7), bitsOf(g.Lo, 34, 32))
	assert.Equal(t, uint64(0), bitsOf(g.Lo, 39, 35))
	assert.Equal(t, uint64(0xf), bitsOf(g.Lo, 43, 40))
	assert.Equal(t, uint64(0), bitsOf(g.Lo, 44, 44))
	assert.Equal(t, uint64(3), bitsOf(g.Lo, 46, 45))
	assert.Equal(t, uint64(0), bitsOf(g.Lo, 31, 16))
}

func TestGateHandlerRoundTrip(t *testing.T) {
	for _, h := range []uint64{0, 1, 0xffff, 0x10000, 0xffffffff, 0x1_0000_0000, 0x0000_7fff_ffff_ffff, 0xffff_8000_0000_0000, ^uint64(0)} {
		g := InterruptGate(h, KERNEL_CS, 0, 0, TypeInterruptGate)
		assert.Equal(t, h, g.Handler(), "%#x", h)
	}
}

func TestHasErrorCode(t *testing.T) {
	// SDM Vol. 3A, Table 6-1 (vectors 0-21) and AMD APM Vol. 2, 8.2
	// (#VC 29 and #SX 30 push an error code; #HV 28 does not).
	withCode := map[int]bool{8: true, 10: true, 11: true, 12: true, 13: true, 14: true, 17: true, 21: true, 29: true, 30: true}
	for v := 0; v < 32; v++ {
		assert.Equal(t, withCode[v], HasErrorCode(v), "vector %d (%s)", v, VectorName(uint64(v)))
	}
	for _, v := range []int{-1, 32, 33, 255, 1 << 20} {
		assert.False(t, HasErrorCode(v), "vector %d", v)
	}
}

func TestVectorName(t *testing.T) {
	tests := []struct {
		v    uint64
		want string
	}{
		{VectorDE, "#DE divide error"},
		{VectorDB, "#DB debug"},
		{VectorNMI, "NMI"},
		{VectorBP, "#BP breakpoint"},
		{VectorUD, "#UD invalid opcode"},
		{VectorDF, "#DF double fault"},
		{9, "coprocessor segment overrun"},
		{VectorTS, "#TS invalid TSS"},
		{VectorNP, "#NP segment not present"},
		{VectorSS, "#SS stack fault"},
		{VectorGP, "#GP general protection"},
		{VectorPF, "#PF page fault"},
		{15, "reserved 15"},
		{VectorMF, "#MF x87 error"},
		{VectorAC, "#AC alignment check"},
		{VectorMC, "#MC machine check"},
		{VectorXM, "#XM SIMD exception"},
		{VectorVE, "#VE virtualization exception"},
		{VectorCP, "#CP control protection"},
		{28, "#HV hypervisor injection"},
		{29, "#VC VMM communication"},
		{30, "#SX security exception"},
		{31, "reserved 31"},
		{32, "external interrupt"},
		{255, "external interrupt"},
		{^uint64(0), "external interrupt"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, VectorName(tt.v), "vector %d", tt.v)
	}
	seen := map[string]uint64{}
	for v := uint64(0); v < 32; v++ {
		n := VectorName(v)
		require.NotEmpty(t, n, "vector %d", v)
		if prev, dup := seen[n]; dup {
			t.Errorf("vectors %d and %d share the name %q", prev, v, n)
		}
		seen[n] = v
	}
}

func TestDescPtrLayout(t *testing.T) {
	// LGDT/LIDT take the address of Limit: a 16-bit limit followed directly
	// by the 64-bit base.
	var p DescPtr
	assert.Equal(t, unsafe.Offsetof(p.Limit)+2, unsafe.Offsetof(p.Base))
	assert.Equal(t, uintptr(0), unsafe.Offsetof(p.Base)%8)
}

func TestVectorsWithErrorCodeNamesVectors(t *testing.T) {
	// Every vector of the mask is an exception vector (0-31).
	assert.Zero(t, uint64(VectorsWithErrorCode)>>32)
	assert.Equal(t, 10, bits.OnesCount32(VectorsWithErrorCode))
}

func TestEndMarker(t *testing.T) {
	// UD2 (SDM Vol. 2B, UD: 0F 0B) and "PTIEND", in memory order.
	assert.Equal(t, []byte("\x0f\x0bPTIEND"), binary.LittleEndian.AppendUint64(nil, EndMarker))
}

// The stubs decode the same in 64-bit and 32-bit mode: PUSH 0 or two NOPs
// as the SDM's table says (HasErrorCode, checked above), PUSH v, a JMP to
// the common path, INT3s to 16 bytes.
func TestExceptionStub(t *testing.T) {
	for _, mode := range []int{64, 32} {
		for _, common := range []int{512, -4096, 1 << 20} {
			for v := 0; v < 32; v++ {
				stub := ExceptionStub(v, common)
				var ops []string
				off := 0
				for off < len(stub) {
					in, err := x86asm.Decode(stub[off:], mode)
					require.NoError(t, err, "vector %d+%d", v, off)
					ops = append(ops, in.Op.String())
					if in.Op == x86asm.JMP {
						rel := int(in.Args[0].(x86asm.Rel))
						assert.Equal(t, common, ExceptionStubSize*v+off+in.Len+rel, "vector %d jumps to the common path", v)
					}
					if in.Op == x86asm.PUSH {
						imm := in.Args[0].(x86asm.Imm)
						if len(ops) == 1 {
							assert.Zero(t, imm, "vector %d", v)
						} else {
							assert.EqualValues(t, v, imm, "vector %d", v)
						}
					}
					off += in.Len
				}
				want := []string{"PUSH", "PUSH", "JMP", "INT", "INT", "INT", "INT", "INT", "INT", "INT"}
				if HasErrorCode(v) {
					want = append([]string{"NOP", "NOP"}, want[1:]...)
				}
				assert.Equal(t, want, ops, "mode %d vector %d", mode, v)
			}
		}
	}
}

// EDK2's GDT (UefiCpuPkg/CpuDxe/CpuGdt.c, GdtTemplate): 0x10 is 32-bit
// code (LINEAR_CODE_SEL), 0x30 data (LINEAR_DATA64_SEL), 0x38 the 64-bit
// code the firmware runs on (LINEAR_CODE64_SEL), type 9AH, flags AFH.
const (
	edk2Code32 = 0x00cf9a000000ffff
	edk2Data   = 0x00cf92000000ffff
	edk2Code64 = 0x00af9a000000ffff
)

// edk2GDT is EDK2's GDT template: null, 32-bit data and code, system data
// and code, a spare (null) entry, 64-bit data and code, a spare.
var edk2GDT = []uint64{0, edk2Data, edk2Code32, edk2Data, edk2Code32, 0, edk2Data, edk2Code64, 0}

// with returns a copy of tab with entry i set to d (tab grown as needed).
func with(tab []uint64, i int, d uint64) []uint64 {
	out := append([]uint64(nil), tab...)
	for len(out) <= i {
		out = append(out, 0)
	}
	out[i] = d
	return out
}

func TestPlaceTransit(t *testing.T) {
	tssLo, tssHi := TSSDescriptor(0x2000, TSSSize-1) // below 4 GiB: the upper half reads as null
	require.Zero(t, tssHi)
	// A firmware GDT with 64-bit code at 0x18 (ptilab's KERNEL_DS), data
	// at 0x50, TSSs at 0x38 and 0x58 whose upper halves read null.
	tsses := []uint64{0, edk2Code32, edk2Data, edk2Code64, 0, 0, 0, tssLo, tssHi, 0, edk2Data, tssLo, tssHi}
	full := make([]uint64, GDT_ENTRIES)
	for i := range full {
		full[i] = edk2Data
	}
	full[3] = edk2Code64
	tests := []struct {
		name  string
		fw    []uint64
		sel   uint16
		limit int
		ok    bool
		want  Transit
	}{
		{"EDK2 0x38 into the free entry 7", edk2GDT, 0x38, 64, true, Transit{Sel: 0x38}},
		{"0x10 equivalent to KERNEL_CS: kept", with(edk2GDT, 2, edk2Code64), 0x10, 64, true, Transit{Sel: 0x10}},
		{"free entry 12", with(edk2GDT, 12, edk2Code64), 0x60, 64, true, Transit{Sel: 0x60}},
		{"0x18 is KERNEL_DS here: 7, beyond the firmware's GDT", []uint64{0, edk2Code32, edk2Data, edk2Code64}, 0x18, 64, true, Transit{Sel: 0x38, Copy: true}},
		{"0x28 is USER_DS here: 7 is the firmware's, 8 and 9 ptilab's TSS", with(edk2GDT, 5, edk2Code64), 0x28, 64, true, Transit{Sel: 0x50, Copy: true}},
		{"0x20 is USER32_CS here", with(edk2GDT, 4, edk2Code64), 0x20, 64, true, Transit{Sel: 0x50, Copy: true}},
		{"TSS lower half", with(edk2GDT, 8, edk2Code64), 0x40, 64, true, Transit{Sel: 0x50, Copy: true}},
		{"past the TSSs' null upper halves", tsses, 0x18, 64, true, Transit{Sel: 0x68, Copy: true}},
		{"no index free in both", full, 0x18, GDT_ENTRIES, false, Transit{}},
		{"firmware GDT larger than the copy", with(edk2GDT, 5, edk2Code64), 0x28, 8, false, Transit{}},
		{"beyond the firmware's GDT", edk2GDT, 0x80, 64, false, Transit{}},
		{"null selector", edk2GDT, 0, 64, false, Transit{}},
		{"LDT selector", edk2GDT, 0x38 | SelectorTI, 64, false, Transit{}},
		{"32-bit code", with(edk2GDT, 7, edk2Code32), 0x38, 64, false, Transit{}},
		{"data", with(edk2GDT, 7, edk2Data), 0x38, 64, false, Transit{}},
		{"ring-3 code", with(edk2GDT, 7, DescUserCode), 0x38, 64, false, Transit{}},
		{"not present", with(edk2GDT, 7, edk2Code64&^descP), 0x38, 64, false, Transit{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := GDT(0x2000)
			before := g
			got, ok := PlaceTransit(&g, tt.fw, tt.sel, tt.limit)
			require.Equal(t, tt.ok, ok)
			if !tt.ok {
				assert.Equal(t, before, g, "a refused placement leaves the GDT alone")
				return
			}
			assert.Equal(t, tt.want, got)
			entry := int(got.Sel >> 3)
			assert.True(t, isKernelCode64(g[entry]), "the transit names 64-bit ring-0 code in ptilab's GDT: %#x", g[entry])
			if tt.want.Copy {
				assert.Equal(t, tt.fw[tt.sel>>3], g[entry], "the firmware's code descriptor")
				assert.True(t, entry >= len(tt.fw) || tt.fw[entry] == 0, "free in the firmware's GDT")
			}
			for i := range g {
				if i != entry {
					assert.Equal(t, before[i], g[i], "entry %d", i)
				}
			}
		})
	}
}
