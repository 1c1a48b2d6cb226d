// Package tlbbench holds the TLB benchmark family: the retention proof,
// the flush costs and the working-set sweep, whose mechanism is package
// tlb's, with the sweep's plan keys and the retention answers' machine
// line (a post-step).
package tlbbench

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/pti"
	"github.com/ptilab/ptilab/tlb"
)

// Retention is the TLB retention proof's registry row.
var Retention = bench.Benchmark{Name: "retention", Summary: "the TLB retention proof, in ring 0: a user page's PTE pointed at another frame without invalidation between two CR3 writes; does the second read see the old frame (the translation kept: PCID with NOFLUSH, a global page without PCID) or the new one (walked again)",
	Worlds: []int{64}, Run: retention, Optional: true}

// RetentionSummary is the post-step that prints the retention answers.
var RetentionSummary = bench.PostStep{Name: "retention summary", Summary: "the TLB retention answers, in a machine line", Needs: []string{"retention"}, Run: retentionSummary}

// The TLB retention proof (tlb.RetentionProbe): does the CPU keep a
// translation across CR3 writes that permit it to? on+pcid's figures
// assume that a PCID's entries survive a switch to another PCID and back
// with NOFLUSH (SDM Vol. 3A, 4.10.4.1), and global pages that their
// entries survive a CR3 write without PCIDs (4.10.2.4).
//
// The page probed is the first data page of a process of its own
// (pti.UserData, a page of the user half), read in ring 0 through the
// kernel side's PML4 of its isolated tables: ring-0 code cannot run on the
// user PML4, which maps only the process and the entry area, and the TLB
// tags entries by PCID, not by PML4, so the user PCID on the kernel side's
// PML4 is the user side's TLB as far as this page goes (the user half's
// tables are shared by both PML4s).

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
// under on with global pages (unsupported without PGE), and records each
// answer (package tables renders the table); it returns
// the answers by probe (a result, or "unsupported: <reason>").
func retention(x *bench.Ctx) any {
	out := map[string]string{}
	if x.World.Width() != 64 {
		x.Fail(contract.Error{Name: x.Name, Error: "the retention probe runs in the 64-bit world only"})
		return out
	}
	cases := []retentionCase{
		{tlb.ProbePCID, bench.ConfigOf(experiment.OnPCID, experiment.Syscall, experiment.Minimal)},
		{tlb.ProbeGlobal, bench.ConfigOf(experiment.On, experiment.Syscall, experiment.Minimal)},
	}
	cases[1].c.Global = true
	for _, rc := range cases {
		s := x.Subject("retention", rc.c)
		s.Entry, s.Flavour, s.Target = "", "", rc.probe
		addr := fmt.Sprintf("%#x", uint64(pti.UserData))
		if _, err := x.World.Plan(rc.c); err != nil {
			out[rc.probe] = "unsupported: " + bench.ReasonOf(err)
			x.Record(contract.Unsupported{Subject: s, Address: addr, Reason: bench.ReasonOf(err)})
			continue
		}
		rec, err := retentionProbe(rc.probe)
		if err != nil {
			out[rc.probe] = "FAILED"
			x.Fail(contract.Error{Name: x.Name + " " + rc.probe, Error: err.Error(), Subject: &s})
			continue
		}
		rec.Subject, rec.Address = s, addr
		out[rc.probe] = rec.Result
		x.Record(rec)
	}
	return out
}

// retentionProbe runs probe and returns its record's CR3 values and
// result. The PCID probe (tlb.PCIDProbe) runs on the kernel side's PML4
// of the process's on+pcid tables, with the process's user and kernel
// PCIDs; the global probe (tlb.GlobalProbe) on the kernel side's PML4 of
// its on tables, away on the Go kernel's own table.
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
	if probe == tlb.ProbeGlobal {
		mode = experiment.On
	}
	sp, pte, err := p.LeafPTE(mode, pti.UserData)
	if err != nil {
		return contract.Retention{}, err
	}
	var rp tlb.RetentionProbe
	switch probe {
	case tlb.ProbePCID:
		kern := pti.KernelCR3(sp, false)
		rp = tlb.PCIDProbe(kern, kern|1<<pti.PTIUserPCIDBit)
	case tlb.ProbeGlobal:
		rp = tlb.GlobalProbe(sp.KernelRoot, amd64.CR3())
	default:
		return contract.Retention{}, fmt.Errorf("no retention probe %q", probe)
	}
	rp.PTE, rp.VA, rp.FrameA = pte, uintptr(pti.UserData), p.Data
	result, err := rp.Run()
	if err != nil {
		return contract.Retention{}, err
	}
	return contract.Retention{Probe: probe, First: fmt.Sprintf("%#x", rp.First), Away: fmt.Sprintf("%#x", rp.Away), Back: fmt.Sprintf("%#x", rp.Back), Result: result}, nil
}

// retentionSummary prints the retention answers (retention's result) in
// a machine line, after every benchmark.
func retentionSummary(x *bench.Ctx, results map[string]any) {
	if answers, ok := results["retention"].(map[string]string); ok && len(answers) > 0 {
		x.Printf("ptilab machine: TLB retention: %s", contract.RetentionSummary(answers))
	}
}
