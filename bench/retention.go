package bench

import (
	"encoding/binary"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/goos"
	"github.com/ptilab/ptilab/pti"
)

// The TLB retention proof: does the CPU keep a translation across CR3
// writes that permit it to? on+pcid's figures assume that a PCID's
// entries survive a switch to another PCID and back with NOFLUSH (SDM
// Vol. 3A, 4.10.4.1), and global pages that their entries survive a CR3
// write without PCIDs (4.10.2.4). Both are permissions, not promises: a
// CPU may walk the tables again, and Bochs and QEMU TCG flush on every
// CR3 write.
//
// The page probed is the first data page of a process of its own
// (pti.UserData, a page of the user half), read in ring 0 through the
// kernel side's PML4 of its isolated tables: ring-0 code cannot run on the
// user PML4, which maps only the process and the entry area, and the TLB
// tags entries by PCID, not by PML4, so the user PCID on the kernel side's
// PML4 is the user side's TLB as far as this page goes (the user half's
// tables are shared by both PML4s).

// Retention probes.
const (
	retentionPCID   = "pcid-noflush"
	retentionGlobal = "global"
)

// Results of a retention probe.
const (
	retentionKept   = "kept"
	retentionWalked = "walked again"
)

// The first quadwords of the probed page's two frames: "AAAAAAAA" in
// frame A (the one mapped when the page is first read), "BBBBBBBB" in
// frame B (the one its PTE names on the second read).
const (
	retentionA = 0x4141414141414141
	retentionB = 0x4242424242424242
)

// retentionProc is the process whose first data page the probes remap
// (frame A its first data frame, frame B its second), made on first use.
var retentionProc *pti.Process

// retentionCase is one probe's configuration: its mode and global pages.
type retentionCase struct {
	probe string
	c     experiment.Config
}

// retention runs the two probes in ring 0 between runs, the PCID one
// under on+pcid (unsupported where the CPU lacks PCID) and the global one
// under on with global pages (unsupported without PGE), prints a table
// and records each answer; it returns the answers by probe (a result, or
// "unsupported: <reason>").
func retention(x *Ctx) any {
	out := map[string]string{}
	if x.World.Width() != 64 {
		x.Fail(contract.Error{Name: x.Name, Error: "the retention probe runs in the 64-bit world only"})
		return out
	}
	x.Printf("")
	x.Printf("TLB retention: a user page read in ring 0, its PTE pointed at another frame without invalidation")
	x.Printf("between two CR3 writes, then read again (SDM Vol. 3A 4.10.2.4, 4.10.4.1): kept = frame A, walked again = frame B")
	x.Printf("%-13s %-17s %-14s %-20s %-20s %-20s %s", "probe", "mode", "address", "first CR3", "away CR3", "back CR3", "second read")
	cases := []retentionCase{
		{retentionPCID, config(experiment.OnPCID, experiment.Syscall, experiment.Minimal)},
		{retentionGlobal, config(experiment.On, experiment.Syscall, experiment.Minimal)},
	}
	cases[1].c.Global = true
	for _, rc := range cases {
		s := x.subject("retention", rc.c)
		s.Entry, s.Flavour, s.Target = "", "", rc.probe
		addr := fmt.Sprintf("%#x", uint64(pti.UserData))
		head := fmt.Sprintf("%-13s %-17s %-14s", rc.probe, rc.c.Mode.String()+"/"+map[bool]string{false: "nonglobal", true: "global"}[rc.c.Global], addr)
		if _, err := x.World.Plan(rc.c); err != nil {
			out[rc.probe] = "unsupported: " + reasonOf(err)
			x.Printf("%s %s", head, out[rc.probe])
			x.Record(contract.Unsupported{Subject: s, Address: addr, Reason: reasonOf(err)})
			continue
		}
		rec, err := retentionProbe(rc.probe)
		if err != nil {
			out[rc.probe] = "FAILED"
			x.Printf("%s FAILED: %v", head, err)
			x.Fail(contract.Error{Name: x.Name + " " + rc.probe, Error: err.Error(), Subject: &s})
			continue
		}
		rec.Subject, rec.Address = s, addr
		out[rc.probe] = rec.Result
		frame := "A"
		if rec.Result == retentionWalked {
			frame = "B"
		}
		x.Printf("%s %-20s %-20s %-20s %s (frame %s)", head, rec.First, rec.Away, rec.Back, rec.Result, frame)
		x.Record(rec)
	}
	return out
}

// retentionProbe runs probe and returns its record's CR3 values and
// result. The PCID probe: first is the kernel side's PML4 with the
// process's user PCID (flushing that PCID), away the kernel PCID with
// NOFLUSH, back the user PCID with NOFLUSH; CR4.PCIDE and PGE set, the
// page not global. The global probe: the page's PTE gets the G bit; first
// and back are the kernel side's PML4, away the Go kernel's own table,
// all without PCIDs (CR4.PCIDE clear, PGE set). CR4.SMAP is clear during
// the probe: the page is a user page.
func retentionProbe(probe string) (contract.Retention, error) {
	if retentionProc == nil {
		p, err := pti.NewProcessData(2)
		if err != nil {
			return contract.Retention{}, err
		}
		retentionProc = p
	}
	p := retentionProc
	mode := experiment.OnPCID
	if probe == retentionGlobal {
		mode = experiment.On
	}
	sp, pte, err := p.LeafPTE(mode, pti.UserData)
	if err != nil {
		return contract.Retention{}, err
	}
	if cr3 := amd64.CR3(); cr3&0xfff != 0 {
		return contract.Retention{}, fmt.Errorf("the kernel's CR3 %#x has bits 11:0 set: CR4.PCIDE cannot be set under it", cr3)
	}
	frames := goos.Frames(p.Data, 2)
	binary.LittleEndian.PutUint64(frames, retentionA)
	binary.LittleEndian.PutUint64(frames[amd64.PageSize:], retentionB)

	old := *pte
	if old&amd64.PTE_ADDR != p.Data {
		return contract.Retention{}, fmt.Errorf("the PTE of %#x is %#x, not frame A %#x", uint64(pti.UserData), old, p.Data)
	}
	cr4 := amd64.CR4()&^(amd64.CR4_SMAP|amd64.CR4_PCIDE) | amd64.CR4_PGE
	var first, away, back uint64
	mapped := old &^ amd64.PTE_G
	switch probe {
	case retentionPCID:
		cr4 |= amd64.CR4_PCIDE
		kern := pti.KernelCR3(sp, false)
		first = kern | 1<<pti.PTIUserPCIDBit
		away = kern | pti.CR3_NOFLUSH
		back = first | pti.CR3_NOFLUSH
	case retentionGlobal:
		mapped |= amd64.PTE_G
		first, away, back = sp.KernelRoot, amd64.CR3(), sp.KernelRoot
	default:
		return contract.Retention{}, fmt.Errorf("no retention probe %q", probe)
	}
	*pte = mapped
	amd64.INVLPG(uintptr(pti.UserData))
	remapped := mapped&^amd64.PTE_ADDR | (p.Data + amd64.PageSize) | amd64.PTE_A
	v0, v1 := amd64.CR3Retention(cr4, first, away, back, pte, remapped, old, uintptr(pti.UserData))
	if *pte != old {
		return contract.Retention{}, fmt.Errorf("the PTE was not repaired: %#x, not %#x", *pte, old)
	}
	rec := contract.Retention{Probe: probe, First: fmt.Sprintf("%#x", first), Away: fmt.Sprintf("%#x", away), Back: fmt.Sprintf("%#x", back)}
	if v0 != retentionA {
		return rec, fmt.Errorf("the first read saw %#x, not frame A's %#x", v0, uint64(retentionA))
	}
	switch v1 {
	case retentionA:
		rec.Result = retentionKept
	case retentionB:
		rec.Result = retentionWalked
	default:
		return rec, fmt.Errorf("the second read saw %#x: neither frame A's %#x nor frame B's %#x", v1, uint64(retentionA), uint64(retentionB))
	}
	return rec, nil
}
