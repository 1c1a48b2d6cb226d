package amd64

import "encoding/binary"

// GDT layout. ptilab uses Linux's 64-bit layout (arch/x86/include/asm/segment.h)
// so that selectors read the same as in Linux dumps, and so that SYSCALL and
// SYSRET find what they need (SDM Vol. 3A, 5.8.8): STAR[47:32] = kernel CS
// with kernel SS = CS+8; STAR[63:48] = user CS32 with user SS = +8 and user
// CS64 = +16.
const (
	GDT_ENTRY_KERNEL32_CS = 1
	GDT_ENTRY_KERNEL_CS   = 2
	GDT_ENTRY_KERNEL_DS   = 3
	GDT_ENTRY_USER32_CS   = 4
	GDT_ENTRY_USER_DS     = 5
	GDT_ENTRY_USER_CS     = 6
	GDT_ENTRY_TSS         = 8 // 16 bytes: entries 8 and 9
	GDT_ENTRIES           = 16

	KERNEL32_CS = GDT_ENTRY_KERNEL32_CS * 8 // 0x08
	KERNEL_CS   = GDT_ENTRY_KERNEL_CS * 8   // 0x10
	KERNEL_DS   = GDT_ENTRY_KERNEL_DS * 8   // 0x18
	USER32_CS   = GDT_ENTRY_USER32_CS*8 | 3 // 0x23
	USER_DS     = GDT_ENTRY_USER_DS*8 | 3   // 0x2b
	USER_CS     = GDT_ENTRY_USER_CS*8 | 3   // 0x33
	TSS_SEL     = GDT_ENTRY_TSS * 8         // 0x40
)

// Selector fields (SDM Vol. 3A, 3.4.2): the requested privilege level (a
// CS with RPL 3 is ring 3's) and the table indicator (LDT); the rest is the
// index, in units of 8 bytes.
const (
	SelectorRPL = 3
	SelectorTI  = 1 << 2
)

// Segment-descriptor fields (SDM Vol. 3A, 3.4.5, Figure 3-8).
const (
	descAccessed = 1 << 40
	descRW       = 1 << 41 // readable code / writable data
	descCode     = 1 << 43
	descS        = 1 << 44 // code or data (not system)
	descDPL3     = 3 << 45
	descP        = 1 << 47
	descL        = 1 << 53 // 64-bit code
	descDB       = 1 << 54 // 32-bit default operand size
	descG        = 1 << 55 // 4 KiB limit granularity
	descLimitMax = 0xffff | 0xf<<48
)

// Flat segment descriptors, equal to Linux's GDT_ENTRY_INIT values.
const (
	DescKernel32Code = descLimitMax | descAccessed | descRW | descCode | descS | descP | descDB | descG // 0x00cf9b000000ffff
	DescKernelCode   = descLimitMax | descAccessed | descRW | descCode | descS | descP | descL | descG  // 0x00af9b000000ffff
	DescKernelData   = descLimitMax | descAccessed | descRW | descS | descP | descDB | descG            // 0x00cf93000000ffff
	DescUser32Code   = DescKernel32Code | descDPL3                                                      // 0x00cffb000000ffff
	DescUserData     = DescKernelData | descDPL3                                                        // 0x00cff3000000ffff
	DescUserCode     = DescKernelCode | descDPL3                                                        // 0x00affb000000ffff
)

// GDT returns ptilab's 64-bit GDT: Linux's layout, the flat descriptors in
// their entries and the descriptor of the 64-bit TSS at tss (TSSSize bytes)
// in GDT_ENTRY_TSS and the entry after it; the other entries are null.
func GDT(tss uint64) [GDT_ENTRIES]uint64 {
	g := [GDT_ENTRIES]uint64{
		GDT_ENTRY_KERNEL32_CS: DescKernel32Code,
		GDT_ENTRY_KERNEL_CS:   DescKernelCode,
		GDT_ENTRY_KERNEL_DS:   DescKernelData,
		GDT_ENTRY_USER32_CS:   DescUser32Code,
		GDT_ENTRY_USER_DS:     DescUserData,
		GDT_ENTRY_USER_CS:     DescUserCode,
	}
	g[GDT_ENTRY_TSS], g[GDT_ENTRY_TSS+1] = TSSDescriptor(tss, TSSSize-1)
	return g
}

// isKernelCode64 reports whether d is a present 64-bit code descriptor of
// privilege level 0 (L set, D clear: SDM Vol. 3A, 5.2.1).
func isKernelCode64(d uint64) bool {
	const mask = descS | descCode | descP | descL | descDB | descDPL3
	return d&mask == descS|descCode|descP|descL
}

// Transit is the code selector the firmware gate's world switches pass
// through (package efi): one that names a 64-bit ring-0 code segment in
// ptilab's GDT and in the GDT the firmware's calls run on, so that an NMI
// between the loads of one world's GDT and the other's IDT, or an IRETQ
// to code still on the transit CS, finds a valid segment in either GDT
// (SDM Vol. 3A, 6.14.1: the gate's selector and the interrupted CS are
// looked up in the GDT loaded at the time).
type Transit struct {
	// Sel is the transit selector: the firmware's own code selector where
	// ptilab's GDT can hold its descriptor, else a free one.
	Sel uint16
	// Copy is set when Sel is not the firmware's code selector: its
	// index is free in ptilab's GDT and null in, or beyond, the
	// firmware's, and the firmware's calls run on a copy of its GDT with
	// the firmware's code descriptor added there (the firmware's own GDT
	// is never written).
	Copy bool
}

// PlaceTransit chooses the transit selector for a firmware whose code
// selector (CS at its image entry point) is sel in the GDT whose entries
// are fw, and puts the firmware's code descriptor, fw[sel>>3], at the
// transit's index in ptilab's GDT g:
//   - sel itself when g's entry at its index is free (EDK2's 0x38 is
//     entry 7, which ptilab leaves null) or already holds an equivalent
//     descriptor (a firmware whose CS is 0x10, ptilab's KERNEL_CS);
//   - else, when sel's index is one ptilab uses for something else (a
//     firmware on 0x18, ptilab's KERNEL_DS), the lowest index below
//     limit that is null in g and null in fw or beyond it, and not the
//     upper half of a 16-byte system descriptor in either (Copy), for
//     a firmware GDT of at most limit entries (the copy's room).
//
// ok is false, and g is left alone, for a selector in the LDT, the null
// selector, one beyond fw, a descriptor that is not 64-bit ring-0 code,
// and when no index is free in both tables.
func PlaceTransit(g *[GDT_ENTRIES]uint64, fw []uint64, sel uint16, limit int) (t Transit, ok bool) {
	i := int(sel >> 3)
	if sel&SelectorTI != 0 || i == 0 || i >= len(fw) || !isKernelCode64(fw[i]) {
		return Transit{}, false
	}
	desc := fw[i]
	if i < len(g) && !systemUpper(g[:], i) {
		switch {
		case g[i] == 0:
			g[i] = desc
			return Transit{Sel: sel}, true
		case isKernelCode64(g[i]):
			return Transit{Sel: sel}, true
		}
	}
	if len(fw) > limit {
		return Transit{}, false
	}
	for j := 1; j < min(len(g), limit); j++ {
		if g[j] != 0 || systemUpper(g[:], j) {
			continue
		}
		if j < len(fw) && (fw[j] != 0 || systemUpper(fw, j)) {
			continue
		}
		g[j] = desc
		return Transit{Sel: uint16(j << 3), Copy: true}, true
	}
	return Transit{}, false
}

// systemUpper reports whether entry i of the descriptor table tab is the
// upper half of a 16-byte system descriptor (a TSS, an LDT: SDM Vol. 3A,
// 8.2.3), which may read as null.
func systemUpper(tab []uint64, i int) bool {
	return i > 0 && tab[i-1] != 0 && tab[i-1]&descS == 0
}

// System-descriptor types (SDM Vol. 3A, 3.5, Table 3-2).
const (
	TypeTSSAvailable  = 0x9
	TypeTSSBusy       = 0xb
	TypeInterruptGate = 0xe
	TypeTrapGate      = 0xf
)

// DescTypeByte is the byte of a descriptor that holds its type (bits
// 43:40), with S, DPL and P; TSSBusy is the bit of that byte that tells a
// busy TSS from an available one. LTR sets it, and LTR of a busy TSS
// raises #GP (SDM Vol. 3A, 8.2.4): code that loads TR again first clears
// it.
const (
	DescTypeByte = 5
	TSSBusy      = TypeTSSBusy &^ TypeTSSAvailable
)

// TSSDescriptor encodes the 16-byte 64-bit TSS descriptor for a TSS at base
// with the given limit (size-1) (SDM Vol. 3A, 8.2.3, Figure 8-4).
func TSSDescriptor(base uint64, limit uint32) (lo, hi uint64) {
	lo = uint64(limit&0xffff) |
		(base&0xffffff)<<16 |
		TypeTSSAvailable<<40 |
		descP |
		uint64(limit>>16&0xf)<<48 |
		(base>>24&0xff)<<56
	hi = base >> 32
	return
}

// TSS is the 64-bit task-state segment (SDM Vol. 3A, 8.7, Figure 8-11): 104
// bytes, with its 64-bit fields at 4-byte alignment, so it is kept as words.
type TSS struct {
	w [26]uint32
}

// TSSSize is the size of the 64-bit TSS in bytes.
const TSSSize = 104

func (t *TSS) set64(off int, v uint64) {
	t.w[off/4] = uint32(v)
	t.w[off/4+1] = uint32(v >> 32)
}

func (t *TSS) get64(off int) uint64 {
	return uint64(t.w[off/4]) | uint64(t.w[off/4+1])<<32
}

// SetRSP0 sets the stack loaded on a privilege change to ring 0.
func (t *TSS) SetRSP0(sp uint64) { t.set64(4, sp) }

// RSP0 returns the ring-0 stack pointer.
func (t *TSS) RSP0() uint64 { return t.get64(4) }

// SetIST sets interrupt stack table entry n (1..7).
func (t *TSS) SetIST(n int, sp uint64) { t.set64(36+8*(n-1), sp) }

// IST returns interrupt stack table entry n (1..7).
func (t *TSS) IST(n int) uint64 { return t.get64(36 + 8*(n-1)) }

// SetIOMapBase sets the I/O permission bitmap offset; a value of TSSSize or
// more means "no bitmap": ring 3 has no port access.
func (t *TSS) SetIOMapBase(off uint16) {
	t.w[25] = uint32(off) << 16
}

// Gate is a 16-byte IDT gate descriptor (SDM Vol. 3A, 6.14.1, Figure 6-8).
type Gate struct {
	Lo, Hi uint64
}

// InterruptGate encodes a present gate to handler at code segment sel, with
// stack-table index ist (0: none), descriptor privilege level dpl and type
// typ (TypeInterruptGate clears IF on entry, TypeTrapGate does not).
func InterruptGate(handler uint64, sel uint16, ist, dpl, typ uint8) Gate {
	return Gate{
		Lo: handler&0xffff |
			uint64(sel)<<16 |
			uint64(ist&7)<<32 |
			uint64(typ&0xf)<<40 |
			uint64(dpl&3)<<45 |
			descP |
			(handler>>16&0xffff)<<48,
		Hi: handler >> 32,
	}
}

// Handler returns the handler address encoded in g.
func (g Gate) Handler() uint64 {
	return g.Lo&0xffff | (g.Lo>>48&0xffff)<<16 | g.Hi<<32
}

// DescPtr is the operand of LGDT/LIDT/SGDT/SIDT: a 16-bit limit followed by a
// 64-bit base (SDM Vol. 3A, 3.5.1). The padding puts Base on an 8-byte
// boundary; the instructions take the address of Limit.
type DescPtr struct {
	_     [3]uint16
	Limit uint16
	Base  uint64
}

// Exception vectors (SDM Vol. 3A, 6.3.1, Table 6-1).
const (
	VectorDE  = 0 // divide error
	VectorDB  = 1 // debug
	VectorNMI = 2
	VectorBP  = 3  // breakpoint
	VectorOF  = 4  // overflow
	VectorBR  = 5  // BOUND range exceeded
	VectorUD  = 6  // invalid opcode
	VectorNM  = 7  // device not available
	VectorDF  = 8  // double fault
	VectorTS  = 10 // invalid TSS
	VectorNP  = 11 // segment not present
	VectorSS  = 12 // stack-segment fault
	VectorGP  = 13 // general protection
	VectorPF  = 14 // page fault
	VectorMF  = 16 // x87 floating-point error
	VectorAC  = 17 // alignment check
	VectorMC  = 18 // machine check
	VectorXM  = 19 // SIMD floating-point exception
	VectorVE  = 20 // virtualization exception
	VectorCP  = 21 // control-protection exception
	VectorHV  = 28 // hypervisor injection (AMD APM Vol. 2, 8.2)
	VectorVC  = 29 // VMM communication (AMD)
	VectorSX  = 30 // security exception (AMD)
)

// VectorsWithErrorCode has bit v set for each exception vector v for which
// the CPU pushes an error code (SDM Vol. 3A, 6.13 and Table 6-1; AMD APM
// Vol. 2, 8.2: #VC and #SX push one, #HV does not). The exception stubs of
// goos, pti and the 32-bit kernel (through i386pae/layout) push a zero in
// its place from this mask, so that every stub leaves the same frame.
const VectorsWithErrorCode = 1<<VectorDF | 1<<VectorTS | 1<<VectorNP | 1<<VectorSS | 1<<VectorGP |
	1<<VectorPF | 1<<VectorAC | 1<<VectorCP | 1<<VectorVC | 1<<VectorSX

// HasErrorCode reports whether the CPU pushes an error code for vector v
// (VectorsWithErrorCode).
func HasErrorCode(v int) bool { return v >= 0 && v < 32 && VectorsWithErrorCode>>v&1 != 0 }

// ExceptionStubSize is the size of an exception entry stub (ExceptionStub).
const ExceptionStubSize = 16

// ExceptionStub returns the 16-byte entry stub of exception vector v
// (0-31), whose bytes are the same instructions in 64-bit and in 32-bit
// mode: PUSH 0 (6A 00) where the CPU pushes no error code, two NOPs (90
// 90) where it pushes one (VectorsWithErrorCode), so that every stub
// leaves the same frame; PUSH v (6A v); JMP rel32 (E9) to the common path,
// common bytes from the first of 32 stubs laid end to end (stub v is at
// ExceptionStubSize*v); INT3 (CC) up to 16 bytes. pti writes its run's
// stubs with it; the 32-bit kernel's, in its blob, are checked against it.
func ExceptionStub(v, common int) [ExceptionStubSize]byte {
	s := [ExceptionStubSize]byte{0x6a, 0x00, 0x6a, byte(v), 0xe9, 9: 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc}
	if HasErrorCode(v) {
		s[0], s[1] = 0x90, 0x90
	}
	binary.LittleEndian.PutUint32(s[5:], uint32(int32(common-(ExceptionStubSize*v+9))))
	return s
}

// EndMarker ends every routine that ptilab copies out of the image (pti's
// trampolines and ring-3 programs): UD2 (0F 0B), which faults if ever
// reached, and the bytes "PTIEND", as a little-endian quadword (the
// assembly writes it with QUAD; the copier searches for its 8 bytes and
// keeps the UD2).
const EndMarker = 0x444e454954500b0f

var vectorNames = [32]string{
	"#DE divide error", "#DB debug", "NMI", "#BP breakpoint", "#OF overflow",
	"#BR bound range", "#UD invalid opcode", "#NM device not available",
	"#DF double fault", "coprocessor segment overrun", "#TS invalid TSS",
	"#NP segment not present", "#SS stack fault", "#GP general protection",
	"#PF page fault", "reserved 15", "#MF x87 error", "#AC alignment check",
	"#MC machine check", "#XM SIMD exception", "#VE virtualization exception",
	"#CP control protection", "reserved 22", "reserved 23", "reserved 24",
	"reserved 25", "reserved 26", "reserved 27", "#HV hypervisor injection",
	"#VC VMM communication", "#SX security exception", "reserved 31",
}

// VectorName names exception vector v as the SDM does ("#PF page fault").
func VectorName(v uint64) string {
	if v < 32 {
		return vectorNames[v]
	}
	return "external interrupt"
}

// Page-fault error-code bits (SDM Vol. 3A, 4.7, Figure 4-12).
const (
	PF_P    = 1 << 0 // 0: not present, 1: protection violation
	PF_W    = 1 << 1 // write access
	PF_U    = 1 << 2 // user-mode access
	PF_RSVD = 1 << 3 // reserved bit set in a paging entry
	PF_I    = 1 << 4 // instruction fetch
	PF_PK   = 1 << 5 // protection key
)
