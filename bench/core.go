package bench

import (
	"math"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/i386pae"
	"github.com/ptilab/ptilab/pti"
)

// The core clock and the disturbances of every figure: the counters of
// a cpustate.Sample (APERF, MPERF, MSR_SMI_COUNT, the NMI count) are read in ring 0 before
// and after every repeat, outside its timed region: by the timing
// programs' sample call (pti's sysSample in the 64-bit world, kernel32's
// sample in the 32-bit one), and in Go between the runs of
// sched-messaging. The 32-bit world's instrumented runs (phases) make no
// sample call, which their phase sums would count: they are sampled in Go
// around the whole loop. A repeat during which an SMI or an NMI arrived
// is disturbed; each figure reports how many were, and its statistics
// over the undisturbed ones beside all.

// counters are the counters this CPU has (SetCounters): the NMI count
// at least.
var counters = cpustate.SampleNMI

// mperfScale is what every dAPERF/dMPERF ratio is multiplied by to make
// it the core clock's against the TSC's: dMPERF/dTSC where MPERF does not
// tick at the TSC's rate, else 1 (cpustate.MPERFScale; SetPState
// measures it).
var mperfScale = 1.0

// SetCounters sets the counters read around the repeats: those src names
// (cpustate.Power.Sources; 0 under the emulators, which have neither
// MSR) and the NMI count, which every CPU has (ptilab's handlers count
// NMIs).
func SetCounters(src cpustate.SampleSources) {
	src |= cpustate.SampleNMI
	counters = src
	pti.SetSampling(src)
	i386pae.SetSampling(src)
}

// ReadSample reads the counters in Go, between runs: with the PMU's
// (startPMU) when they count.
func ReadSample() cpustate.Sample {
	var s cpustate.Sample
	src := counters
	if pmuNow.on {
		src |= cpustate.SamplePMU
	}
	cpustate.ReadSample(src, &pmuNow.msrs, &s)
	return s
}

// How a figure's counters were read (contract.Core.Sampled).
const (
	SampledRepeat = "repeat" // around every repeat
	sampledRun    = "run"    // around all the repeats of a loop at once
)

// repeatDeltas turns the samples of a loop of warmup+r repeats into the
// measured repeats' counter deltas: with a sample before every repeat and
// one after the last (warmup+r+1), one per measured repeat; with a sample
// before and after the whole loop (2), the loop's alone, sampled "run".
// Anything else gives none.
func repeatDeltas(s []cpustate.Sample, r, warmup int) ([]cpustate.Sample, string) {
	switch len(s) {
	case warmup + r + 1:
		d := make([]cpustate.Sample, r)
		for i := range d {
			d[i] = cpustate.Delta(s[warmup+i], s[warmup+i+1])
		}
		return d, SampledRepeat
	case 2:
		return []cpustate.Sample{cpustate.Delta(s[0], s[1])}, sampledRun
	}
	return nil, ""
}

// Disturb is a figure's core clock and disturbances over its measured
// repeats.
type Disturb struct {
	Src     cpustate.SampleSources // the counters read
	Sampled string                 // SampledRepeat or sampledRun; "" when nothing was
	// Ratio is sum dAPERF / sum dMPERF times mperfScale: the core clock
	// against the TSC's (0: unknown); Core the core cycles per operation,
	// each repeat's figure times its own ratio (its run's, sampled per
	// run).
	Ratio float64
	Core  Stats
	// SMIs and NMIs during the measured repeats (sampled per run: during
	// the whole loop, warm-up included), and the repeats that saw either.
	SMIs, NMIs uint64
	Disturbed  int
	// Undisturbed are the statistics over the repeats without an SMI or
	// an NMI (N = 0 when there are none, or none was disturbed).
	Undisturbed Stats
	// PMU is the performance counters per operation in the figure's
	// world, or why there are none (pmuState.record).
	PMU *contract.PMUCounts
	// Per repeat, where the counters were read around every repeat: which
	// repeats an SMI or an NMI disturbed (indices), and each repeat's
	// dAPERF/dMPERF (0: unknown).
	DisturbedAt []int
	RepeatRatio []float64
}

// DisturbOf computes a figure's Disturb from its r measured repeats'
// figures per operation and the samples of its loop of warmup+r repeats
// (repeatDeltas) of ops operations each.
func DisturbOf(perOp []float64, samples []cpustate.Sample, r, warmup, ops int) Disturb {
	deltas, sampled := repeatDeltas(samples, r, warmup)
	return DisturbDeltas(perOp, deltas, sampled, ops)
}

// DisturbDeltas computes a figure's Disturb from its measured repeats'
// figures per operation and their counter deltas: one per repeat, or one
// for all (sampled "run"); a repeat is ops operations (for the
// performance counters).
func DisturbDeltas(perOp []float64, deltas []cpustate.Sample, sampled string, ops int) Disturb {
	d := Disturb{Src: counters, Sampled: sampled}
	d.PMU = pmuNow.record(pmuNow.perOp(deltas, ops, sampled))
	if len(deltas) == 0 || len(perOp) == 0 {
		return d
	}
	of := func(i int) cpustate.Sample {
		if sampled == sampledRun {
			return deltas[0]
		}
		return deltas[i]
	}
	var sumA, sumM uint64
	for _, x := range deltas {
		sumA += x.APERF
		sumM += x.MPERF
		d.SMIs += x.SMI
		d.NMIs += x.NMI
	}
	if counters&cpustate.SampleAPERF != 0 && sumM != 0 {
		d.Ratio = float64(sumA) / float64(sumM) * mperfScale
		core := make([]float64, len(perOp))
		if sampled != sampledRun {
			d.RepeatRatio = make([]float64, len(perOp))
		}
		for i, v := range perOp {
			r, ok := cpustate.Ratio(of(i))
			r *= mperfScale
			if ok && d.RepeatRatio != nil {
				d.RepeatRatio[i] = r
			}
			if !ok {
				r = d.Ratio
			}
			core[i] = v * r
		}
		d.Core = Summarize(core)
	}
	if counters&(cpustate.SampleSMI|cpustate.SampleNMI) == 0 {
		return d
	}
	var calm []float64
	for i, v := range perOp {
		if !of(i).Disturbed() {
			calm = append(calm, v)
		} else {
			d.Disturbed++
			if sampled != sampledRun {
				d.DisturbedAt = append(d.DisturbedAt, i)
			}
		}
	}
	if d.Disturbed > 0 {
		d.Undisturbed = Summarize(calm)
	}
	return d
}

// headline names the statistics to quote: the undisturbed repeats' when
// some were disturbed and at least half were not, else all of them.
func (d Disturb) headline() string {
	if d.Disturbed > 0 && 2*d.Undisturbed.N >= d.Disturbed+d.Undisturbed.N {
		return "undisturbed"
	}
	return "all"
}

// RepeatClockTolerance is how far, as a fraction, each repeat's core
// clock may stray from the figure's for the record to leave the repeats'
// clocks out: the figure's then holds for every repeat (on a PC whose
// clock settled, most figures), and the log stays short.
const RepeatClockTolerance = 0.005

// repeatMHz is each repeat's core clock in MHz for a TSC of hz, from
// its dAPERF/dMPERF ratio (0: unknown), or nil when none strays more than
// RepeatClockTolerance from the figure's ratio (or none is known).
func repeatMHz(ratios []float64, ratio float64, hz uint64) []float64 {
	strays := false
	for _, r := range ratios {
		strays = strays || r == 0 || math.Abs(r/ratio-1) > RepeatClockTolerance
	}
	if !strays || ratio == 0 {
		return nil
	}
	out := make([]float64, len(ratios))
	for i, r := range ratios {
		out[i] = math.Round(float64(hz) * r / 1e6)
	}
	return out
}

// core is d's record form for a TSC of hz.
func (d Disturb) CoreRecord(hz uint64) contract.Core {
	c := contract.Core{CoreClock: coreClockAbsent, SMICount: cpustate.Unsupported, Sampled: d.Sampled, Headline: d.headline()}
	if d.Src&cpustate.SampleAPERF != 0 {
		c.CoreClock = cpustate.ClockAPERF
		if d.Ratio != 0 {
			c.CoreMHz = Round(float64(hz) * d.Ratio / 1e6)
			c.CoreMean, c.CoreMedian = Round(d.Core.Mean), Round(d.Core.Median)
		}
		c.RepeatMHz = repeatMHz(d.RepeatRatio, d.Ratio, hz)
	}
	if d.Src&cpustate.SampleSMI != 0 {
		c.SMICount = cpustate.SMIFromMSR
		c.SMIs = d.SMIs
	}
	if d.Src&cpustate.SampleNMI != 0 {
		c.NMIs = d.NMIs
	}
	if d.Src&(cpustate.SampleSMI|cpustate.SampleNMI) != 0 {
		c.Disturbed = d.Disturbed
		c.DisturbedRepeats = d.DisturbedAt
		if u := d.Undisturbed; u.N > 0 {
			c.Undisturbed = &contract.Spread{N: u.N, Mean: Round(u.Mean), Stddev: Round(u.Stddev), Median: Round(u.Median), Min: Round(u.Min), Max: Round(u.Max)}
		}
	}
	if d.Src == 0 {
		c.Sampled = ""
	}
	c.PMU = d.PMU
	return c
}
