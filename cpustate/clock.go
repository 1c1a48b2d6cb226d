package cpustate

import (
	"fmt"
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
// after how long, and the last interval's clock; and MPERF's rate
// against the TSC's over the whole wait (MPERFRate).
type Settle struct {
	Settled   bool
	Ms        float64 // from the first read to the settled interval's end
	MHz       float64 // the last interval's core clock, TSC Hz * dAPERF/dMPERF (not scaled by MPERFPerTSC)
	Intervals int
	// MPERFPerTSC is dMPERF/dTSC from the first read to the last (the
	// core busy in C0 throughout), 0 when MPERF did not move.
	MPERFPerTSC float64
}

// MPERF's rate. The SDM says IA32_MPERF counts "in proportion to a fixed
// frequency" (Vol. 3B, 15.2), not that it is the TSC's: on Skylake
// client parts (06_4E/5E/8E/9E) the TSC is the 24 MHz crystal times
// CPUID.15H's ratio, MPERF the base clock, a few tenths of a percent
// apart (24 MHz * 242/2 = 2904 MHz against 2900 MHz on an i7-7500U).
// The core clock is then TSC Hz * dAPERF/dMPERF * dMPERF/dTSC; dMPERF/dTSC
// is measured over a busy interval (the core in C0, where MPERF counts).

// MPERFRateTolerance is how far dMPERF/dTSC may be from 1 and still be
// taken as 1: the reads' own skew (a few hundred cycles over millions)
// and the emulators, whose MPERF and TSC both count instructions, stay
// well within it; Skylake client's offset does not.
const MPERFRateTolerance = 5e-4

// MPERFRate spins for ms milliseconds of the TSC (tscHz) and returns
// dMPERF/dTSC over them, 0 when MPERF did not move. The CPU must have
// MPERF.
func MPERFRate(c CPU, tscHz uint64, ms float64) float64 {
	m0, t0 := mperfTSC(c)
	for end := t0 + uint64(float64(tscHz)*ms/1e3); c.TSC() < end; {
	}
	m1, t1 := mperfTSC(c)
	return rate(m1-m0, t1-t0)
}

// mperfTSC reads MPERF and the TSC right after it.
func mperfTSC(c CPU) (mperf, tsc uint64) {
	m, _ := c.ReadMSR(amd64.MSR_IA32_MPERF)
	return m, c.TSC()
}

func rate(dm, dt uint64) float64 {
	if dm == 0 || dt == 0 {
		return 0
	}
	return float64(dm) / float64(dt)
}

// MPERFScale decides what the core clock is scaled by for a measured
// dMPERF/dTSC: the rate itself where it is plausible (between 1/2 and 2)
// and further than MPERFRateTolerance from 1, else 1 (MPERF taken to
// tick at the TSC's rate); why says which, for the log.
func MPERFScale(r float64) (scale float64, why string) {
	switch {
	case r == 0:
		return 1, "MPERF did not advance over a busy interval: the core clock assumes it ticks at the TSC's rate"
	case r < 0.5 || r > 2:
		return 1, fmt.Sprintf("dMPERF/dTSC %.6f is implausible: the core clock assumes MPERF ticks at the TSC's rate", r)
	case math.Abs(r-1) <= MPERFRateTolerance:
		return 1, fmt.Sprintf("MPERF ticks at the TSC's rate (dMPERF/dTSC %.6f)", r)
	}
	return r, fmt.Sprintf("MPERF ticks at %.6f of the TSC's rate: every core clock and core cycle count is scaled by it", r)
}

// SettleTolerance is the relative change of APERF/MPERF between two
// consecutive intervals below which the clock counts as settled.
const SettleTolerance = 0.005

// WaitSettled spins, in intervals of intervalMs, until the core clock is
// stable (two consecutive intervals within SettleTolerance) or maxMs have
// passed, all measured by the TSC (tscHz): it never waits longer. The CPU
// must have APERF and MPERF.
func WaitSettled(c CPU, tscHz uint64, intervalMs, maxMs float64) (s Settle) {
	step := uint64(float64(tscHz) * intervalMs / 1e3)
	limit := uint64(float64(tscHz) * maxMs / 1e3)
	var at uint64 // the TSC right after the last sample's MPERF
	sample := func() Sample {
		a, _ := c.ReadMSR(amd64.MSR_IA32_APERF)
		m, t := mperfTSC(c)
		at = t
		return Sample{APERF: a, MPERF: m}
	}
	start := c.TSC()
	first := sample()
	t0 := at
	prev := first
	last := math.NaN()
	defer func() { s.MPERFPerTSC = rate(prev.MPERF-first.MPERF, at-t0) }()
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
