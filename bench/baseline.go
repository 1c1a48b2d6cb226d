package bench

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
)

// The disturbance baseline (contract.Baseline): before the benchmarks, a
// tight loop reads the TSC, as Linux's hwlat tracer does, and the
// counters around it say what the figures will share the CPU with. With
// boot services alive the firmware owns the USB controllers, and on many
// PCs their legacy emulation of a USB keyboard or mouse runs in SMM: SMIs
// a few hundred times a second, each tens of microseconds.
const (
	// BaselineAutoMs is the scan's length on a PC, BaselineEmulatedMs
	// under an emulator, where the gaps are the host's and an emulated
	// second is long (10^9 instructions under QEMU -icount).
	BaselineAutoMs     = 1000
	BaselineEmulatedMs = 5
	// gapThresholdUs is hwlat's default threshold (tracing_thresh, 10 µs).
	gapThresholdUs = 10
	// disturbancesPerS is the rate of SMIs or gaps above which the
	// baseline warns.
	disturbancesPerS = 10
)

// coreClockAbsent is what the figures' core clock says when it is not
// read: cpustate.Unsupported, or cpustate.NotCounting once the baseline
// found APERF/MPERF not advancing.
var coreClockAbsent = cpustate.Unsupported

// RunBaseline scans for lost time for the plan's baseline_ms (BaselineAutoMs
// on a PC, BaselineEmulatedMs under an emulator, when auto), prints a
// line and the warnings, and writes the baseline record. Where APERF and
// MPERF did not advance over the scan, it stops reading them: the
// figures' core clock says "not counting".
func RunBaseline(r *Reporter, plan Plan, clk Clock) {
	ms := plan.BaselineMs
	switch {
	case ms >= 0:
	case clk.Emulated():
		ms = BaselineEmulatedMs
	default:
		ms = BaselineAutoMs
	}
	before := ReadSample()
	g := cpustate.ScanGaps(amd64.RDTSC, clk.Hz*uint64(ms)/1000, clk.Hz*gapThresholdUs/1e6)
	rec := baselineRecord(g, before, ReadSample(), counters, clk)
	if rec.CoreClock == cpustate.NotCounting {
		coreClockAbsent = cpustate.NotCounting
		SetCounters(counters &^ cpustate.SampleAPERF)
	}
	for _, l := range baselineLines(rec) {
		r.Printf("%s", l)
	}
	r.Record(rec)
}

// smiZero is the warning for an MSR_SMI_COUNT that reads 0 after the scan:
// on a PC the firmware has entered SMM many times before a loader runs,
// so a count of 0 is a counter that does not count (or reads as 0).
const smiZero = "MSR_SMI_COUNT reads 0: no SMI since reset, which a PC's firmware does not do, or a counter that does not count; the SMI figures and the disturbed repeats cannot be trusted"

// baselineRecord is the baseline record of scan g, around which the
// counters src read were before and after, on clock clk.
func baselineRecord(g cpustate.Gaps, before, after cpustate.Sample, src cpustate.SampleSources, clk Clock) contract.Baseline {
	d := cpustate.Delta(before, after)
	secs := float64(g.Span) / float64(clk.Hz)
	us := func(ticks uint64) float64 { return Round(float64(ticks) * 1e6 / float64(clk.Hz)) }
	perS := func(n uint64) float64 { return Round(float64(n) / secs) }
	rec := contract.Baseline{
		Ms: Round(secs * 1e3), Reads: g.Reads, NMIs: d.NMI,
		BaselineSMIs: contract.BaselineSMIs{SMICount: cpustate.Unsupported},
		BaselineGaps: contract.BaselineGaps{GapThresholdUs: gapThresholdUs, Gaps: g.Over, GapsPerS: perS(g.Over), GapTotalUs: us(g.OverTicks), MaxGapUs: us(g.Max)},
		CoreClock:    cpustate.Unsupported, Emulated: clk.Emulated(),
	}
	if src&cpustate.SampleSMI != 0 {
		rec.SMICount, rec.SMIs, rec.SMIsPerS = cpustate.SMIFromMSR, d.SMI, perS(d.SMI)
	}
	if src&cpustate.SampleAPERF != 0 {
		rec.CoreClock = cpustate.NotCounting
		if d.APERF != 0 && d.MPERF != 0 {
			// Scaled as every figure's (mperfScale, SetPState's).
			rec.CoreClock, rec.CoreMHz = cpustate.ClockAPERF, Round(cpustate.MHz(clk.Hz, d)*mperfScale)
		}
	}
	if rec.Emulated {
		return rec
	}
	const unplug = ": unplug USB keyboards and mice, whose legacy emulation the firmware runs in SMM (docs/real-hardware.md)"
	switch {
	case rec.SMIsPerS > disturbancesPerS:
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("%.0f SMIs a second%s", rec.SMIsPerS, unplug))
	case rec.GapsPerS > disturbancesPerS:
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("%.0f gaps over %d µs a second (SMIs the SMI count does not show)%s", rec.GapsPerS, gapThresholdUs, unplug))
	}
	if rec.CoreClock == cpustate.NotCounting {
		rec.Warnings = append(rec.Warnings, "APERF and MPERF read but did not advance over the scan: the figures carry no core clock")
	}
	if src&cpustate.SampleSMI != 0 && after.SMI == 0 {
		rec.Warnings = append(rec.Warnings, smiZero)
	}
	return rec
}

// baselineLines are the console's lines of a baseline record.
func baselineLines(b contract.Baseline) []string {
	smis := "SMI count unsupported"
	if b.SMICount == cpustate.SMIFromMSR {
		smis = fmt.Sprintf("%d SMIs (%.1f/s)", b.SMIs, b.SMIsPerS)
	}
	core := "core clock " + b.CoreClock
	if b.CoreMHz != 0 {
		core = fmt.Sprintf("core clock %.0f MHz", b.CoreMHz)
	}
	l := fmt.Sprintf("ptilab baseline: %.0f ms of TSC reads, interrupts masked: %s | %d gaps over %.0f µs (%.1f/s, %.1f µs in all), longest %.1f µs | %d NMIs | %s",
		b.Ms, smis, b.Gaps, b.GapThresholdUs, b.GapsPerS, b.GapTotalUs, b.MaxGapUs, b.NMIs, core)
	if b.Emulated {
		l += " (EMULATED: the gaps are the host's)"
	}
	lines := []string{l}
	for _, w := range b.Warnings {
		lines = append(lines, "ptilab baseline: WARNING: "+w)
	}
	return lines
}
