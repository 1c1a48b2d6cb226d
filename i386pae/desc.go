package i386pae

import (
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/i386pae/layout"
)

// The 32-bit world's descriptors: segment descriptors (SDM Vol. 3A,
// 3.4.5, Figure 3-8), the 32-bit TSS and its descriptor (SDM Vol. 3A, 8.2,
// Figures 8-2 and 8-3) and 8-byte IDT gates (SDM Vol. 3A, 6.11, Figure 6-2).

// Bits of a descriptor's access byte (SDM Vol. 3A, 3.4.5, Figure 3-8).
const (
	desc32P    = 1 << 47 // present
	desc32DPLs = 45      // shift of the DPL field
)

// GDT returns the 32-bit world's GDT: Linux's x86_32 layout
// (arch/x86/include/asm/segment.h) as layout.go declares it, with the TSS at
// tss and the #DF task's TSS at dfTSS (both TSSSize bytes, byte-granular
// limits), plus the 64-bit code and data descriptors at the selectors of
// the 64-bit GDT (amd64.KERNEL_CS, amd64.KERNEL_DS) for the way back to
// long mode. SYSENTER and SYSEXIT take their selectors from KERNEL_CS
// (SDM Vol. 2B: SS = CS+8; user CS = CS+16, user SS = CS+24, RPL 3).
func GDT(tss, dfTSS uint32) [layout.GDT_ENTRIES]uint64 {
	var g [layout.GDT_ENTRIES]uint64
	g[layout.GDT_ENTRY_KERNEL64_CS] = amd64.DescKernelCode
	g[layout.GDT_ENTRY_KERNEL64_DS] = amd64.DescKernelData
	g[layout.GDT_ENTRY_KERNEL_CS] = amd64.DescKernel32Code
	g[layout.GDT_ENTRY_KERNEL_DS] = amd64.DescKernelData
	g[layout.GDT_ENTRY_DEFAULT_USER_CS] = amd64.DescUser32Code
	g[layout.GDT_ENTRY_DEFAULT_USER_DS] = amd64.DescUserData
	g[layout.GDT_ENTRY_TSS] = TSSDescriptor(tss, TSSSize-1)
	g[layout.GDT_ENTRY_DOUBLEFAULT_TSS] = TSSDescriptor(dfTSS, TSSSize-1)
	return g
}

// TSSDescriptor encodes the 8-byte descriptor of an available 32-bit TSS
// (type 9) at base with a byte-granular limit (size-1, at most 0xfffff),
// DPL 0 (SDM Vol. 3A, 8.2.2, Figure 8-3).
func TSSDescriptor(base, limit uint32) uint64 {
	return uint64(limit&0xffff) |
		uint64(base&0xffffff)<<16 |
		amd64.TypeTSSAvailable<<40 |
		desc32P |
		uint64(limit>>16&0xf)<<48 |
		uint64(base>>24)<<56
}

// InterruptGate encodes a present 32-bit interrupt gate (type 0xE: IF is
// cleared on entry) to offset in code segment sel, with descriptor
// privilege level dpl (3 lets INT n reach it from ring 3) (SDM Vol. 3A,
// 6.11, Figure 6-2).
func InterruptGate(offset uint32, sel uint16, dpl int) uint64 {
	return uint64(offset&0xffff) |
		uint64(sel)<<16 |
		amd64.TypeInterruptGate<<40 |
		uint64(dpl&3)<<desc32DPLs |
		desc32P |
		uint64(offset>>16)<<48
}

// TaskGate encodes a present task gate (type 5), DPL 0, to the TSS whose
// descriptor selector is tssSel: the way ptilab handles #DF, on a task
// switch to a TSS with a stack of its own (SDM Vol. 3A, 6.11 and 8.2.5,
// Figure 8-5; 6.15, Interrupt 8).
func TaskGate(tssSel uint16) uint64 {
	return uint64(tssSel)<<16 | typeTaskGate<<40 | desc32P
}

// typeTaskGate is the system-descriptor type of a task gate (SDM Vol. 3A,
// 3.5, Table 3-2).
const typeTaskGate = 0x5

// TSS is the 32-bit task-state segment (SDM Vol. 3A, 8.2.1, Figure 8-2):
// layout.TSS, where the 32-bit kernel takes its offsets from.
type TSS = layout.TSS

// TSSSize is the size of the 32-bit TSS in bytes; its descriptor's limit
// is TSSSize-1 (0x67).
const TSSSize = 104

// TSSNoIOMap is the TSS's IOMap value of a TSS without an I/O permission
// bitmap: the base points past the limit, so any I/O port access from
// CPL > IOPL faults (#GP).
const TSSNoIOMap = TSSSize << 16

// The TSS is exactly TSSSize bytes: the array lengths differ otherwise,
// and the constant underflows when it is shorter.
var _ [1]struct{} = [unsafe.Sizeof(TSS{}) - TSSSize + 1]struct{}{}
