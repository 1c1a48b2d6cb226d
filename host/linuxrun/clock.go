package linuxrun

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
)

// clock is how a Linux run times: the TSC where it is invariant (the
// constant_tsc and nonstop_tsc flags), its frequency measured against
// CLOCK_MONOTONIC_RAW; else CLOCK_MONOTONIC_RAW itself, in ns (Hz 1e9).
type clock struct {
	bench.Clock
	tsc bool
}

// calibrationTime is how long the TSC is measured against
// CLOCK_MONOTONIC_RAW.
const calibrationTime = 200 * time.Millisecond

// newClock returns the run's clock for a CPU with flags c.
func newClock(c cpuInfo) clock {
	if !c.has("constant_tsc") || !c.has("nonstop_tsc") {
		return clock{Clock: bench.Clock{Hz: 1e9, Source: "clock_monotonic_raw (the TSC is not invariant)"}}
	}
	t0, c0 := monoRaw(), amd64.TSCBegin()
	time.Sleep(calibrationTime)
	t1, c1 := monoRaw(), amd64.TSCEndL()
	hz := uint64(float64(c1-c0) * 1e9 / float64(t1-t0))
	return clock{Clock: bench.Clock{Hz: hz, Source: "measured against clock_monotonic_raw"}, tsc: true}
}

// monoRaw reads CLOCK_MONOTONIC_RAW, in ns.
func monoRaw() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &ts)
	return ts.Nano()
}

// now reads the clock: TSC cycles (LFENCE; RDTSC) or ns.
func (c clock) now() uint64 {
	if c.tsc {
		return amd64.TSCBegin()
	}
	return uint64(monoRaw())
}

// since returns the clock's ticks since t (LFENCE; RDTSC; LFENCE).
func (c clock) since(t uint64) uint64 {
	if c.tsc {
		return amd64.TSCEndL() - t
	}
	return uint64(monoRaw()) - t
}

// unit names the clock's ticks in records: "tsc_cycles" or "ns".
func (c clock) unit() string {
	if c.tsc {
		return c.Unit()
	}
	return "ns"
}

// stats are a figure's statistics over its measured repeats xs (per
// operation, in the clock's unit), with what a Linux run knows of its
// core: no APERF/MPERF or SMI counts from user space, and pmu, the
// performance counters' per-operation counts or why there are none.
func (c clock) stats(xs []float64, pmu *contract.PMUCounts) contract.Stats {
	s := bench.Summarize(xs)
	return contract.Stats{Unit: c.unit(), Mean: s.Mean, Stddev: s.Stddev, StddevPct: s.StddevPct(), PerfPct: s.PerfPct(),
		Median: s.Median, Min: s.Min, Max: s.Max, TSCHz: c.Hz, Repeats: bench.Rounded(xs),
		Core: contract.Core{CoreClock: "unsupported", SMICount: "unsupported", Headline: "all", PMU: pmu}}
}
