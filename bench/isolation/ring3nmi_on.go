//go:build ptilab_selfnmi

package isolation

import (
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/pti"
)

// Ring3NMI is the test images' ring-3 NMI check (build tag
// ptilab_selfnmi, registered by package all there only): under each of
// the plan's modes, by SYSCALL and by the plan's entries that deliver
// events themselves (FRED), a ring-3 program sends its CPU ring3NMIs
// NMIs through the local APIC, which MapAPIC gives it. Each NMI
// interrupts ring 3 on the user side's CR3 (under isolation; with PCID
// its PCID and NOFLUSH): the path of pti's entryNMI that switches to the
// kernel side's CR3 to count and back, and FRED's ring-3 event path,
// which no emulator reaches otherwise. A check per mode and entry says
// whether every NMI was counted and the run ended as it should.
var Ring3NMI = bench.Benchmark{Name: "ring3nmi", Summary: "test images only: NMIs sent from ring 3 through the local APIC, counted",
	Worlds: []int{64}, Keys: []string{"modes", "entries"}, Run: ring3NMI, Optional: true}

// ring3NMIs is the NMIs each run sends.
const ring3NMIs = 20

// nmiProc is the check's process, made on first use.
var nmiProc *pti.Process

// ring3NMI runs the check and returns the NMIs counted by configuration
// name ("on+pcid fred").
func ring3NMI(x *bench.Ctx) any {
	out := map[string]uint64{}
	if nmiProc == nil {
		p, err := pti.NewProcess()
		if err != nil {
			x.Fail(contract.Error{Name: x.Name, Error: err.Error()})
			return out
		}
		nmiProc = p
	}
	for _, entry := range faultEntries(x, experiment.Syscall) {
		for _, mode := range x.Plan.Modes {
			c := bench.ConfigOf(mode, entry, experiment.Minimal)
			name := mode.String() + " " + entry.String()
			// A configuration the world or the CPU cannot run, or an APIC
			// ring 3 cannot reach, is unsupported; any other error fails
			// the check.
			sw, err := pti.Plan(c)
			unsupported := err != nil
			var icr uint64
			var dest uint32
			if err == nil {
				icr, dest, err = nmiProc.MapAPIC(c)
				unsupported = errors.Is(err, pti.ErrUnsupported)
			}
			if unsupported {
				x.Record(contract.Unsupported{Subject: x.Subject(x.Name, c), Reason: name + ": " + bench.ReasonOf(err)})
				continue
			}
			var res pti.Result
			before := bench.ReadSample().NMI // ptilab's handlers' count, which every CPU has
			if err == nil {
				res, err = pti.Start(sw, nmiProc, pti.SelfNMI, pti.UserStackTop, [6]uint64{icr, ring3NMIs, uint64(dest)})
			}
			got := bench.ReadSample().NMI - before
			out[name] = got
			ok := err == nil && res.Reason == pti.ReasonExit && res.Status == 0 && got == ring3NMIs
			detail := fmt.Sprintf("%d NMIs sent from ring 3, %d counted; the run ended with %v", ring3NMIs, got, res)
			if err != nil {
				detail = err.Error()
			}
			x.Check("ring-3 NMI "+name, ok, detail, map[string]any{"sent": ring3NMIs, "counted": got})
		}
	}
	return out
}
