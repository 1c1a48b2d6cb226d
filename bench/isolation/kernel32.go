package isolation

import (
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/i386pae"
	"github.com/ptilab/ptilab/i386pae/layout"
)

// kernelChecks32 are the 32-bit world's checks after its probe: the probe's
// outcome (probeOK), then a deliberate page fault in the 32-bit kernel,
// which must come back as a record while the run goes on; a double fault;
// and roundTrips32 round trips long mode -> 32-bit -> long mode, which
// must all come back.
func kernelChecks32(x *bench.Ctx, probeOK bool) {
	x.Check("kernel32 probe", probeOK, "the ring-3 reads faulted (P bit as the mode maps the page) or read as expected", nil)
	noRDTSCP := !amd64.Features.RDTSCP

	// A page fault in the 32-bit kernel (a read of address 0 in the
	// dispatcher): a record, and the run goes on.
	res, err := syscalls32(bench.ConfigOf(experiment.On, experiment.Int80, experiment.Minimal),
		i386pae.Params{N: 1, R: 1, Nr: layout.SysKernelFault, NoRDTSCP: noRDTSCP})
	good := err == nil && res.Reason == layout.ReasonFault && res.Vector == amd64.VectorPF && !res.FromUser() && res.CR2 == 0
	x.Check("kernel32 fault", good, "a #PF in the 32-bit kernel came back as: "+describe32(res, err, false),
		map[string]any{"vector": res.Vector, "error_code": res.ErrorCode, "eip": fmt.Sprintf("%#x", res.EIP), "cr2": fmt.Sprintf("%#x", res.CR2)})

	// A double fault in the 32-bit kernel (a #PF whose frame cannot be
	// pushed on an unmapped stack): the #DF task's record, and the run
	// goes on (with CR0.TS clear, or the Go side's next SSE instruction
	// would fault).
	res, err = syscalls32(bench.ConfigOf(experiment.On, experiment.Int80, experiment.Minimal),
		i386pae.Params{N: 1, R: 1, Nr: layout.SysKernelDoubleFault, NoRDTSCP: noRDTSCP})
	good = err == nil && res.Reason == layout.ReasonFault && res.Vector == amd64.VectorDF && !res.FromUser() && res.ESP == 0x1000
	x.Check("kernel32 double fault", good, "a #DF in the 32-bit kernel came back through its task gate as: "+describe32(res, err, true),
		map[string]any{"vector": res.Vector, "eip": fmt.Sprintf("%#x", res.EIP), "cs": res.CS, "esp": fmt.Sprintf("%#x", res.ESP)})

	// Round trips: a task that exits at once, roundTrips32 times,
	// alternating the modes (off and on, each planned once).
	var failed []string
	var trips [2]i386pae.Switch
	for i, m := range []experiment.Mode{experiment.Off, experiment.On} {
		if trips[i], err = i386pae.Plan(bench.ConfigOf(m, experiment.Sysenter, experiment.Minimal)); err != nil {
			failed = append(failed, err.Error())
		}
	}
	for i := 0; i < roundTrips32 && len(failed) == 0; i++ {
		res, err := i386pae.Run(trips[i%2], i386pae.Syscalls, i386pae.Params{N: 0, R: 1, NoRDTSCP: noRDTSCP})
		if err != nil || res.Reason != layout.ReasonExit || res.Status != 0 {
			failed = append(failed, fmt.Sprintf("trip %d: %v %v", i, res, err))
			break
		}
	}
	good = len(failed) == 0
	outcome := "came back"
	if !good {
		outcome = "failed: " + strings.Join(failed, "; ")
	}
	x.Check("kernel32 round trips", good, fmt.Sprintf("%d round trips long mode -> 32-bit PAE (off and on) -> long mode %s", roundTrips32, outcome),
		map[string]any{"round_trips": roundTrips32})
}

// syscalls32 runs the 32-bit timing program with params under c.
func syscalls32(c experiment.Config, params i386pae.Params) (i386pae.Result, error) {
	s, err := i386pae.Plan(c)
	if err != nil {
		return i386pae.Result{}, err
	}
	return i386pae.Run(s, i386pae.Syscalls, params)
}

// roundTrips32 is how many times the checks leave long mode and come
// back.
const roundTrips32 = 100

// describe32 describes how a 32-bit run ended, with its ESP when esp is
// set.
func describe32(res i386pae.Result, err error, esp bool) string {
	switch {
	case err != nil:
		return err.Error()
	case esp:
		return fmt.Sprintf("%v, ESP %#x", res, res.ESP)
	}
	return res.String()
}
