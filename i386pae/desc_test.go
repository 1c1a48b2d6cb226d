package i386pae

import (
	"encoding/binary"
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/i386pae/layout"
)

// descHex formats a descriptor so that failures read as in a GDT dump.
func descHex(v uint64) string { return fmt.Sprintf("%#016x", v) }

// descBits returns bits [hi:lo] of v.
func descBits(v uint64, hi, lo uint) uint64 {
	return v >> lo & (1<<(hi-lo+1) - 1)
}

// The selectors are Linux's x86_32 ones (arch/x86/include/asm/segment.h),
// and the two 64-bit ones are the 64-bit GDT's.
func TestSelectors(t *testing.T) {
	assert.Equal(t, 0x60, layout.KERNEL_CS)
	assert.Equal(t, 0x68, layout.KERNEL_DS)
	assert.Equal(t, 0x73, layout.USER_CS)
	assert.Equal(t, 0x7b, layout.USER_DS)
	assert.Equal(t, 0x80, layout.TSS_SEL)
	assert.Equal(t, 0xf8, layout.DOUBLEFAULT_TSS)
	assert.Equal(t, amd64.KERNEL_CS, layout.KERNEL64_CS)
	assert.Equal(t, amd64.KERNEL_DS, layout.KERNEL64_DS)

	// SYSENTER: SS = SYSENTER_CS+8; SYSEXIT: CS = SYSENTER_CS+16,
	// SS = SYSENTER_CS+24, both RPL 3 (SDM Vol. 2B).
	assert.Equal(t, layout.KERNEL_CS+8, layout.KERNEL_DS)
	assert.Equal(t, (layout.KERNEL_CS+16)|3, layout.USER_CS)
	assert.Equal(t, (layout.KERNEL_CS+24)|3, layout.USER_DS)
}

// The 32-bit kernel's hardware numbers are amd64's (layout repeats them:
// the 32-bit kernel cannot import amd64).
func TestHardwareNumbersAreAMD64s(t *testing.T) {
	for name, pair := range map[string][2]uint64{
		"MSR_EFER":             {amd64.MSR_EFER, layout.MSR_EFER},
		"EFER_LME":             {amd64.EFER_LME, layout.EFER_LME},
		"CR0_PG":               {amd64.CR0_PG, layout.CR0_PG},
		"EFLAGS_FIXED":         {amd64.RFLAGS_FIXED, layout.EFLAGS_FIXED},
		"EFLAGS_TF":            {amd64.RFLAGS_TF, layout.EFLAGS_TF},
		"EFLAGS_NT":            {amd64.RFLAGS_NT, layout.EFLAGS_NT},
		"EFLAGS_AC":            {amd64.RFLAGS_AC, layout.EFLAGS_AC},
		"VectorsWithErrorCode": {amd64.VectorsWithErrorCode, layout.VectorsWithErrorCode},
		"SelectorRPL":          {amd64.SelectorRPL, layout.SelectorRPL},
		"DescTypeByte":         {amd64.DescTypeByte, layout.DescTypeByte},
		"TSSBusy":              {amd64.TSSBusy, layout.TSSBusy},
		"VectorDF":             {amd64.VectorDF, layout.VectorDF},
		"MSR_IA32_PRED_CMD":    {amd64.MSR_IA32_PRED_CMD, layout.MSR_IA32_PRED_CMD},
		"PRED_CMD_IBPB":        {amd64.PRED_CMD_IBPB, layout.PRED_CMD_IBPB},
		"SampleAPERF":          {uint64(cpustate.SampleAPERF), layout.SampleAPERF},
		"SampleSMI":            {uint64(cpustate.SampleSMI), layout.SampleSMI},
		"SampleNMI":            {uint64(cpustate.SampleNMI), layout.SampleNMI},
		"SamplePMU":            {uint64(cpustate.SamplePMU), layout.SamplePMU},
		"SamplePMCs":           {cpustate.SamplePMCs, layout.SamplePMCs},
		"MSR_APERF":            {amd64.MSR_IA32_APERF, layout.MSR_APERF},
		"MSR_MPERF":            {amd64.MSR_IA32_MPERF, layout.MSR_MPERF},
		"MSR_SMI_COUNT":        {amd64.MSR_SMI_COUNT, layout.MSR_SMI_COUNT},
	} {
		assert.Equal(t, pair[0], pair[1], "layout.%s", name)
	}
}

// Every GDT entry, against hand-computed encodings: the flat ones are
// Linux's GDT_ENTRY_INIT values (GDT_ENTRY_INIT(0xc09b, 0, 0xfffff) =
// 0x00cf9b000000ffff), the TSS ones base 31:24 | P,type 9 | base 23:0 |
// limit 0x67.
func TestGDT(t *testing.T) {
	const tss, dfTSS = layout.Desc + layout.DescTSS, layout.Desc + layout.DescDFTSS
	assert.Equal(t, uint32(0xff801100), uint32(tss))
	assert.Equal(t, uint32(0xff801180), uint32(dfTSS))
	want := map[int]uint64{
		layout.GDT_ENTRY_KERNEL64_CS:     0x00af9b000000ffff,
		layout.GDT_ENTRY_KERNEL64_DS:     0x00cf93000000ffff,
		layout.GDT_ENTRY_KERNEL_CS:       0x00cf9b000000ffff,
		layout.GDT_ENTRY_KERNEL_DS:       0x00cf93000000ffff,
		layout.GDT_ENTRY_DEFAULT_USER_CS: 0x00cffb000000ffff,
		layout.GDT_ENTRY_DEFAULT_USER_DS: 0x00cff3000000ffff,
		layout.GDT_ENTRY_TSS:             0xff00898011000067,
		layout.GDT_ENTRY_DOUBLEFAULT_TSS: 0xff00898011800067,
	}
	g := GDT(tss, dfTSS)
	for i, d := range g {
		assert.Equal(t, descHex(want[i]), descHex(d), "GDT entry %d (selector %#x)", i, i*8)
	}
	assert.Equal(t, 32*8, int(unsafe.Sizeof(g)))
	assert.LessOrEqual(t, int(unsafe.Sizeof(g)), layout.DescTSS, "the GDT fits before the TSS")
}

func TestTSSDescriptor(t *testing.T) {
	assert.Equal(t, descHex(0xff00898011000067), descHex(TSSDescriptor(0xff801100, 0x67)))
	assert.Equal(t, descHex(0x12008934567800ff), descHex(TSSDescriptor(0x12345678, 0xff)))
	assert.Equal(t, descHex(0x000f890000000000|0xffff), descHex(TSSDescriptor(0, 0xfffff)))

	d := TSSDescriptor(0xdeadb000, TSSSize-1)
	assert.Equal(t, uint64(0xdeadb000), descBits(d, 39, 16)|descBits(d, 63, 56)<<24, "base")
	assert.Equal(t, uint64(103), descBits(d, 15, 0)|descBits(d, 51, 48)<<16, "limit")
	assert.Equal(t, uint64(9), descBits(d, 43, 40), "type: available 32-bit TSS")
	assert.Zero(t, descBits(d, 44, 44), "S: system")
	assert.Zero(t, descBits(d, 46, 45), "DPL")
	assert.Equal(t, uint64(1), descBits(d, 47, 47), "P")
	assert.Zero(t, descBits(d, 55, 52), "G (byte granular), D/B, L, AVL")
}

func TestInterruptGate(t *testing.T) {
	assert.Equal(t, descHex(0xff80ee0000604123), descHex(InterruptGate(0xff804123, layout.KERNEL_CS, 3)))
	assert.Equal(t, descHex(0xff808e0000604123), descHex(InterruptGate(0xff804123, layout.KERNEL_CS, 0)))
	assert.Equal(t, descHex(0x12348e0000605678), descHex(InterruptGate(0x12345678, 0x60, 4)), "DPL is 2 bits")

	g := InterruptGate(0xcafef00d, 0x60, 3)
	assert.Equal(t, uint64(0xcafef00d), descBits(g, 15, 0)|descBits(g, 63, 48)<<16, "offset")
	assert.Equal(t, uint64(0x60), descBits(g, 31, 16), "selector")
	assert.Zero(t, descBits(g, 39, 32), "reserved")
	assert.Equal(t, uint64(0xe), descBits(g, 43, 40), "type: 32-bit interrupt gate")
	assert.Zero(t, descBits(g, 44, 44))
	assert.Equal(t, uint64(3), descBits(g, 46, 45), "DPL")
	assert.Equal(t, uint64(1), descBits(g, 47, 47), "P")
}

func TestTaskGate(t *testing.T) {
	assert.Equal(t, descHex(0x0000850000f80000), descHex(TaskGate(layout.DOUBLEFAULT_TSS)))
	g := TaskGate(0x1234)
	assert.Equal(t, uint64(0x1234), descBits(g, 31, 16), "TSS selector")
	assert.Equal(t, uint64(5), descBits(g, 43, 40), "type: task gate")
	assert.Equal(t, uint64(1), descBits(g, 47, 47), "P")
	assert.Zero(t, g&^(0xffff<<16|0xff<<40), "the rest is reserved")
}

// The TSS's fields sit where SDM Vol. 3A, Figure 8-2 puts them.
func TestTSSLayout(t *testing.T) {
	var s TSS
	assert.Equal(t, uintptr(TSSSize), unsafe.Sizeof(s))
	for _, f := range []struct {
		name string
		off  uintptr
		want uintptr
	}{
		{"Link", unsafe.Offsetof(s.Link), 0x00},
		{"ESP0", unsafe.Offsetof(s.ESP0), 0x04},
		{"SS0", unsafe.Offsetof(s.SS0), 0x08},
		{"ESP1", unsafe.Offsetof(s.ESP1), 0x0c},
		{"SS1", unsafe.Offsetof(s.SS1), 0x10},
		{"ESP2", unsafe.Offsetof(s.ESP2), 0x14},
		{"SS2", unsafe.Offsetof(s.SS2), 0x18},
		{"CR3", unsafe.Offsetof(s.CR3), 0x1c},
		{"EIP", unsafe.Offsetof(s.EIP), 0x20},
		{"EFLAGS", unsafe.Offsetof(s.EFLAGS), 0x24},
		{"EAX", unsafe.Offsetof(s.EAX), 0x28},
		{"ECX", unsafe.Offsetof(s.ECX), 0x2c},
		{"EDX", unsafe.Offsetof(s.EDX), 0x30},
		{"EBX", unsafe.Offsetof(s.EBX), 0x34},
		{"ESP", unsafe.Offsetof(s.ESP), 0x38},
		{"EBP", unsafe.Offsetof(s.EBP), 0x3c},
		{"ESI", unsafe.Offsetof(s.ESI), 0x40},
		{"EDI", unsafe.Offsetof(s.EDI), 0x44},
		{"ES", unsafe.Offsetof(s.ES), 0x48},
		{"CS", unsafe.Offsetof(s.CS), 0x4c},
		{"SS", unsafe.Offsetof(s.SS), 0x50},
		{"DS", unsafe.Offsetof(s.DS), 0x54},
		{"FS", unsafe.Offsetof(s.FS), 0x58},
		{"GS", unsafe.Offsetof(s.GS), 0x5c},
		{"LDT", unsafe.Offsetof(s.LDT), 0x60},
		{"IOMap", unsafe.Offsetof(s.IOMap), 0x64},
	} {
		assert.Equal(t, f.want, f.off, f.name)
	}
	// The I/O map base is the upper half of the last word, past the limit.
	assert.Equal(t, uint32(0x00680000), uint32(TSSNoIOMap))
	assert.Greater(t, TSSNoIOMap>>16, TSSSize-1)
	// Both TSSs fit in the Desc page between the GDT and the IDT.
	assert.LessOrEqual(t, layout.DescTSS+TSSSize, layout.DescDFTSS)
	assert.LessOrEqual(t, layout.DescDFTSS+TSSSize, layout.DescIDT)
	assert.LessOrEqual(t, layout.DescIDT+256*8, 4096, "256 8-byte gates")
}

// TestSwitchIDT reads the mode switches' IDT as the CPU does in each mode:
// vector 2's 8-byte legacy gate (SDM Vol. 3A, 6.11, Figure 6-2) and its
// 16-byte IA-32e gate (6.14.1, Figure 6-8), each to its handler on a code
// segment of that mode in the 32-bit GDT, both within the limit.
func TestSwitchIDT(t *testing.T) {
	const legacy, ia32e = 0x00123450, 0x00123470
	w := switchIDT(legacy, ia32e)
	b := make([]byte, 0, layout.SwitchIDTSize)
	for _, v := range w {
		b = binary.LittleEndian.AppendUint32(b, v)
	}

	g32 := binary.LittleEndian.Uint64(b[8*amd64.VectorNMI:])
	assert.Equal(t, uint64(legacy), g32&0xffff|g32>>48<<16, "legacy handler")
	assert.Equal(t, uint64(layout.KERNEL_CS), g32>>16&0xffff, "legacy selector")
	assert.Equal(t, uint64(0x8e), g32>>40&0xff, "present 32-bit interrupt gate, DPL 0")

	g64 := amd64.Gate{Lo: binary.LittleEndian.Uint64(b[16*amd64.VectorNMI:]), Hi: binary.LittleEndian.Uint64(b[16*amd64.VectorNMI+8:])}
	assert.Equal(t, uint64(ia32e), g64.Handler(), "IA-32e handler")
	assert.Equal(t, uint64(layout.KERNEL64_CS), g64.Lo>>16&0xffff, "IA-32e selector")
	assert.Equal(t, uint64(0), g64.Lo>>32&7, "no IST: the switch stack is the current one")
	assert.Equal(t, uint64(0x8e), g64.Lo>>40&0xff, "present interrupt gate, DPL 0")

	assert.LessOrEqual(t, 16*amd64.VectorNMI+16, layout.SwitchIDTSize, "the limit covers the IA-32e gate")
	assert.Equal(t, uint64(0), binary.LittleEndian.Uint64(b[0:])|binary.LittleEndian.Uint64(b[8:])|binary.LittleEndian.Uint64(b[24:]), "nothing else")
}
