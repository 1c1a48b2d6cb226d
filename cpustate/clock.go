package cpustate

import (
	"math"

	"github.com/ptilab/ptilab/amd64"
)

// Delta is the counters' change from a to b: APERF and MPERF are 64-bit,
// MSR_SMI_COUNT counts in its low 32 bits and wraps there, the NMI count
// is monotonic; the performance counters' deltas are modulo 2^64, for
// their reader to mask to the counters' widths (pmu.Session.Sub).
func Delta(a, b Sample) Sample {
	d := Sample{APERF: b.APERF - a.APERF, MPERF: b.MPERF - a.MPERF, SMI: (b.SMI - a.SMI) & 0xffffffff, NMI: b.NMI - a.NMI}
	for i := range d.PMC {
		d.PMC[i] = b.PMC[i] - a.PMC[i]
	}
	return d
}

// Ratio is dAPERF/dMPERF over d: the core's average clock over the
// interval relative to the TSC's (MPERF counts at the TSC's rate, both
// only in C0; SDM Vol. 3B, 15.2), and false when MPERF did not move.
func Ratio(d Sample) (float64, bool) {
	if d.MPERF == 0 {
		return 0, false
	}
	return float64(d.APERF) / float64(d.MPERF), true
}

// MHz is the effective core clock over d for a TSC of tscHz: tscHz *
// dAPERF/dMPERF, in MHz; 0 when MPERF did not move.
func MHz(tscHz uint64, d Sample) float64 {
	r, ok := Ratio(d)
	if !ok {
		return 0
	}
	return float64(tscHz) * r / 1e6
}

// Settle is how the clock settled after a P-state request: whether two
// consecutive intervals' APERF/MPERF ratios agreed within SettleTolerance,
// after how long, and the last interval's clock.
type Settle struct {
	Settled   bool
	Ms        float64 // from the first read to the settled interval's end
	MHz       float64 // the last interval's core clock
	Intervals int
}

// SettleTolerance is the relative change of APERF/MPERF between two
// consecutive intervals below which the clock counts as settled.
const SettleTolerance = 0.005

// WaitSettled spins, in intervals of intervalMs, until the core clock is
// stable (two consecutive intervals within SettleTolerance) or maxMs have
// passed, all measured by the TSC (tscHz): it never waits longer. The CPU
// must have APERF and MPERF.
func WaitSettled(c CPU, tscHz uint64, intervalMs, maxMs float64) Settle {
	step := uint64(float64(tscHz) * intervalMs / 1e3)
	limit := uint64(float64(tscHz) * maxMs / 1e3)
	sample := func() Sample {
		a, _ := c.ReadMSR(amd64.MSR_IA32_APERF)
		m, _ := c.ReadMSR(amd64.MSR_IA32_MPERF)
		return Sample{APERF: a, MPERF: m}
	}
	start := c.TSC()
	prev := sample()
	last := math.NaN()
	var s Settle
	for t := start; t-start < limit; {
		for t = c.TSC(); t-start < limit && t-start < uint64(s.Intervals+1)*step; t = c.TSC() {
		}
		cur := sample()
		d := Delta(prev, cur)
		prev = cur
		s.Intervals++
		r, ok := Ratio(d)
		if !ok {
			continue
		}
		s.MHz = float64(tscHz) * r / 1e6
		s.Ms = float64(t-start) * 1e3 / float64(tscHz)
		if math.Abs(r-last) <= SettleTolerance*last {
			s.Settled = true
			return s
		}
		last = r
	}
	return s
}
