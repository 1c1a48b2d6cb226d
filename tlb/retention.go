package tlb

import (
	"encoding/binary"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/goos"
)

// The TLB retention proof: does the CPU keep a translation across CR3
// writes that permit it to? PCIDs assume that a PCID's entries survive a
// switch to another PCID and back with NOFLUSH (SDM Vol. 3A, 4.10.4.1),
// and global pages that their entries survive a CR3 write without PCIDs
// (4.10.2.4). Both are permissions, not promises: a CPU may walk the
// tables again, and Bochs and QEMU TCG flush on every CR3 write. A probe
// reads a page in ring 0, points its PTE at another frame without
// invalidating it between two CR3 writes, and reads it again: the first
// frame's contents mean the entry was kept, the second's that the CPU
// walked the tables again.

// Retention probes, by record name.
const (
	ProbePCID   = "pcid-noflush"
	ProbeGlobal = "global"
)

// Results of a retention probe.
const (
	Kept        = "kept"
	WalkedAgain = "walked again"
)

// The first quadwords of the probed page's two frames: "AAAAAAAA" in
// frame A (the one mapped when the page is first read), "BBBBBBBB" in
// frame B (the one its PTE names on the second read).
const (
	retentionA = 0x4141414141414141
	retentionB = 0x4242424242424242
)

// RetentionProbe is one retention probe of the page at VA: the CR3 values
// loaded in turn (First, Away, Back), the page's leaf PTE, which must name
// frame A at FrameA, frame B being the next 4 KiB frame, and whether the
// page is made global (CR4.PCIDE clear) or not (CR4.PCIDE set). VA must be
// mapped by PTE under First and Back, and PTE and the code alike under all
// three.
type RetentionProbe struct {
	Probe             string // ProbePCID or ProbeGlobal
	First, Away, Back uint64
	PTE               *uint64
	VA                uintptr
	FrameA            uint64
}

// PCIDProbe is the PCID probe on a kernel-side PML4 whose CR3 is kernel
// (the kernel PCID, no NOFLUSH) and user (the same PML4, the user PCID):
// first the user PCID, flushing it; away the kernel PCID with NOFLUSH;
// back the user PCID with NOFLUSH. The page is not global.
func PCIDProbe(kernel, user uint64) RetentionProbe {
	return RetentionProbe{Probe: ProbePCID, First: user, Away: kernel | amd64.CR3_NOFLUSH, Back: user | amd64.CR3_NOFLUSH}
}

// GlobalProbe is the global-page probe: the page's PTE gets the G bit;
// first and back are root, away is another table's CR3, all without
// PCIDs.
func GlobalProbe(root, away uint64) RetentionProbe {
	return RetentionProbe{Probe: ProbeGlobal, First: root, Away: away, Back: root}
}

// Run writes the two frames' marks, runs the probe with CR4.PGE set and
// CR4.SMAP clear (the page may be a user page), and returns Kept or
// WalkedAgain. The PTE is as it was afterwards, and the page's TLB
// entries invalidated. It is an error when the kernel's CR3 has bits 11:0
// set (CR4.PCIDE cannot be set under it), when the PTE does not name frame
// A, when it was not repaired, or when a read saw neither frame.
func (p RetentionProbe) Run() (string, error) {
	if cr3 := amd64.CR3(); cr3&0xfff != 0 {
		return "", fmt.Errorf("the kernel's CR3 %#x has bits 11:0 set: CR4.PCIDE cannot be set under it", cr3)
	}
	frames := goos.Frames(p.FrameA, 2)
	binary.LittleEndian.PutUint64(frames, retentionA)
	binary.LittleEndian.PutUint64(frames[amd64.PageSize:], retentionB)

	old := *p.PTE
	if old&amd64.PTE_ADDR != p.FrameA {
		return "", fmt.Errorf("the PTE of %#x is %#x, not frame A %#x", uint64(p.VA), old, p.FrameA)
	}
	cr4 := amd64.CR4()&^(amd64.CR4_SMAP|amd64.CR4_PCIDE) | amd64.CR4_PGE
	mapped := old &^ amd64.PTE_G
	switch p.Probe {
	case ProbePCID:
		cr4 |= amd64.CR4_PCIDE
	case ProbeGlobal:
		mapped |= amd64.PTE_G
	default:
		return "", fmt.Errorf("no retention probe %q", p.Probe)
	}
	*p.PTE = mapped
	amd64.INVLPG(p.VA)
	remapped := mapped&^amd64.PTE_ADDR | (p.FrameA + amd64.PageSize) | amd64.PTE_A
	v0, v1 := CR3Retention(cr4, p.First, p.Away, p.Back, p.PTE, remapped, old, p.VA)
	if *p.PTE != old {
		return "", fmt.Errorf("the PTE was not repaired: %#x, not %#x", *p.PTE, old)
	}
	if v0 != retentionA {
		return "", fmt.Errorf("the first read saw %#x, not frame A's %#x", v0, uint64(retentionA))
	}
	switch v1 {
	case retentionA:
		return Kept, nil
	case retentionB:
		return WalkedAgain, nil
	}
	return "", fmt.Errorf("the second read saw %#x: neither frame A's %#x nor frame B's %#x", v1, uint64(retentionA), uint64(retentionB))
}

// CR3Retention is the TLB retention probe of one linear address (SDM Vol.
// 3A, 4.10.2.4 global pages, 4.10.4.1 MOV to CR3 with PCIDs and NOFLUSH).
// With interrupts masked (RFLAGS is restored at the end) it loads CR4 with
// cr4 and CR3 with first, and reads the 8 bytes at va (v0: the read fills
// the TLB entry); loads CR3 with away, writes newPTE to *pte without
// invalidating anything, loads CR3 with back and reads va again (v1: the
// kept translation's frame, or the frame newPTE names when the CPU walked
// the tables again). Then it writes oldPTE back to *pte, executes INVLPG
// va (which drops the current PCID's entries and global ones for va), and
// loads CR3 and CR4 with the values they had on entry, CR3 first: CR3 on
// entry must have bits 11:0 clear when cr4 sets CR4.PCIDE, and a CR4 write
// that clears PCIDE invalidates every TLB entry (SDM Vol. 3A, 4.10.4.1).
// *pte and the code must be mapped alike under every CR3 named, and va
// readable in ring 0 (CR4.SMAP clear in cr4 when va is a user page).
//
// Registers: AX..DX, SI, DI, R8..R13 are clobbered.
//
// defined in retention_amd64.s
func CR3Retention(cr4, first, away, back uint64, pte *uint64, newPTE, oldPTE uint64, va uintptr) (v0, v1 uint64)
