package report

import (
	"bytes"
	"fmt"
	"math"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/reference"
)

// The synthetic fixture: a run shaped as a hardware run's (TSC cycles,
// not emulated, no emulator, an invariant TSC, PCID), which says in its
// own machine record that it is synthetic. Its figures are made up on
// the reference threads' shape (Ivy Bridge Xeon, 3.7 GHz TSC: null call
// about 80 ns off and 200 ns on, sched-messaging 0.24 s -> 0.30 s in
// 64-bit and 0.28 s -> 0.44 s in 32-bit PAE); they are test data, not a
// measurement. testdata/synthetic-hardware.log is this function's output
// (go test -update rewrites it; TestSyntheticFixture holds them equal).

const (
	synthHz      = 3_700_000_000
	synthR       = 10
	synthN       = 100000
	synthStddevP = 1.5 // % of the mean
)

// synthShape is the repeats' shape: 10 deviations from the mean whose
// mean is 0 and whose sample standard deviation, once scaled by
// synthShapeSD, is 1.
var synthShape = [synthR]float64{0.3, -1, 1.5, -0.1, -0.6, 1, 0.1, -1.5, 0.6, -0.3}

const synthShapeSD = 0.9080 // sqrt(sum(synthShape^2) / 9), rounded

// synthStats are a made-up figure's statistics: 10 repeats around mean m
// cycles with a 1.5% standard deviation (synthShape), summarised by
// bench.Summarize as the image does, and the ratio to off.
func synthStats(m, ratio float64) contract.Stats {
	var xs []float64
	for _, z := range synthShape {
		xs = append(xs, m*(1+z/synthShapeSD*synthStddevP/100))
	}
	s := bench.Summarize(xs)
	r := bench.Round
	return contract.Stats{Unit: "tsc_cycles", Mean: r(s.Mean), Stddev: r(s.Stddev), StddevPct: r(s.StddevPct()),
		PerfPct: r(s.PerfPct()), Median: r(s.Median), Min: r(s.Min), Max: r(s.Max),
		TSCHz: synthHz, RatioToOff: r(ratio), Repeats: bench.Rounded(s.Values),
		// The core held at the TSC's nominal rate (pstate = nominal), no
		// SMI: core cycles equal TSC cycles.
		Core: contract.Core{CoreClock: "aperf/mperf", CoreMHz: synthHz / 1e6, CoreMean: r(s.Mean), CoreMedian: r(s.Median),
			SMICount: "msr", Sampled: "repeat", Headline: "all"}}
}

// synthPath are the 64-bit null call's path lengths in instructions, by
// mode and flavour (minimal, linux): pathlength's bounds, as the
// emulators count them. synthWalks are made-up dTLB walks per call: none
// off, a few after each CR3 write without PCID, fewer with it.
var (
	synthPath  = map[string][2]int64{"off": {15, 86}, "on": {21, 92}, "on+pcid": {23, 94}}
	synthWalks = map[string]float64{"off": 0, "on": 3, "on+pcid": 0.5}
)

func synthNs(cycles float64) float64 { return math.Round(cycles/synthHz*1e9*1000) / 1000 }

// logBuilder writes a fixture's log: human lines (it is a
// bytes.Buffer), PTILAB records as the image writes them (rec), and
// PTILAB-END with the records' count (end).
type logBuilder struct {
	bytes.Buffer
	n int
}

func (b *logBuilder) rec(r contract.Record) {
	js, err := contract.Encode(r)
	if err != nil {
		panic(err)
	}
	b.n++
	fmt.Fprintf(b, "%s %s\n", contract.RecordTag, js)
}

// end writes e, with the records' count, and returns the log.
func (b *logBuilder) end(e contract.End) []byte {
	e.Records = b.n
	js, err := contract.Encode(e)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(b, "%s %s\n", contract.EndTag, js)
	return b.Bytes()
}

// syntheticLog returns the synthetic fixture's bytes: human lines and
// PTILAB records as the image writes them, and PTILAB-END.
func syntheticLog() []byte {
	var b logBuilder
	rec := b.rec
	ucode := uint32(0x42e)
	cpuidPPM, hpetPPM := int64(3), int64(1)
	fmt.Fprintln(&b, "ptilab: booting")
	fmt.Fprintln(&b, "SYNTHETIC TEST FIXTURE of host/report: made-up figures in a hardware run's shape, not a measurement")
	rec(contract.Machine{Vendor: "GenuineIntel", Brand: "SYNTHETIC TEST FIXTURE (not a measurement), shaped as an Intel Xeon E5-1620 v2",
		Family: 6, Model: 0x3e, Stepping: 4, Microcode: &ucode, TSCHz: synthHz, TSCSource: "cpuid-15h", TSCInvariant: true,
		PCID: true, PGE: true, SMEP: true, RDRAND: true, RDTSCP: true, NX: true, PerfMonVersion: 3,
		RAMBytes: 16 << 30, FreeAtBootBytes: 15 << 30, PoolBytes: 1 << 30, FirmwareVendor: "SYNTHETIC", FirmwareRevision: 1,
		Board: "pc", Serial: true, Screens: 1, Random: "rdrand", RTC: true,
		TSCCPUIDHz: synthHz, TSCCPUIDSource: "cpuid-15h", TSCMeasuredHz: 3_699_988_900, TSCMeasuredBy: "acpi-pm-timer", TSCPPM: &cpuidPPM,
		TSCHPETHz: 3_699_992_600, HPETBase: 0xfed00000, HPETPeriodFs: 69_841_279, HPETStarted: true, HPETRestored: true, TSCHPETvsPMPPM: &hpetPPM})
	rec(contract.Baseline{Ms: 1000, Reads: 41e6, BaselineSMIs: contract.BaselineSMIs{SMICount: "msr", SMIs: 250, SMIsPerS: 250},
		BaselineGaps: contract.BaselineGaps{GapThresholdUs: 10, Gaps: 250, GapsPerS: 250, GapTotalUs: 15250, MaxGapUs: 72.4},
		CoreClock:    "aperf/mperf", CoreMHz: 3700,
		Warnings: []string{"250 SMIs a second: unplug USB keyboards and mice, whose legacy emulation the firmware runs in SMM (docs/real-hardware.md)"}})
	rec(contract.Timing{LFENCE: "serializing", TSCHz: synthHz, TSCSource: "cpuid-15h", TSCInvariant: true, RDTSCP: true})
	sub := func(bench string, width int, mode, entry, flavour string) contract.Subject {
		s := contract.Subject{Bench: bench, Width: width, Mode: mode, Entry: entry, Flavour: flavour}
		if width == 32 && flavour == "linux" {
			s.Copy = "movsl"
		}
		return s
	}
	modes := []string{"off", "on", "on+pcid"}
	entry := map[int]string{64: "syscall", 32: "sysenter"}
	// Cycles per null call: off, and what on and on+pcid add, per
	// flavour (minimal, linux).
	nullOff := map[int][2]float64{64: {280, 300}, 32: {300, 340}}
	add := map[string]float64{"off": 0, "on": 450, "on+pcid": 250}
	notInPAE := func(s contract.Subject) {
		rec(contract.Unsupported{Subject: s, N: synthN, R: synthR, Reason: s.Mode + "/" + s.Flavour + ": PCID: not in PAE (PCIDs exist only in IA-32e mode)"})
	}
	// forTasks calls f with each mode and task kind of bench in width
	// (ti: 0 processes, 1 threads), recording those not in PAE.
	forTasks := func(bench string, width int, f func(s contract.Subject, mode string, ti int)) {
		for _, mode := range modes {
			for ti, tasks := range []string{"processes", "threads"} {
				s := sub(bench, width, mode, entry[width], "linux")
				s.Tasks = tasks
				if width == 32 && mode == "on+pcid" {
					notInPAE(s)
					continue
				}
				f(s, mode, ti)
			}
		}
	}
	for _, width := range []int{64, 32} {
		bench := map[int]string{64: "", 32: "32"}[width]
		fmt.Fprintf(&b, "\n%d-bit null system call (getppid) (synthetic)\n", width)
		for _, mode := range modes {
			for fi, fl := range []string{"minimal", "linux"} {
				s := sub("null"+bench, width, mode, entry[width], fl)
				if width == 32 && mode == "on+pcid" {
					notInPAE(s)
					continue
				}
				c := nullOff[width][fi] + add[mode]
				st := synthStats(c, c/nullOff[width][fi])
				sc := contract.Syscall{Subject: s, N: synthN, R: synthR, Stats: st, NsPerCall: synthNs(c), EmptyLoopCycles: 30}
				if width == 64 {
					// The PMU's counts (Ivy Bridge EP's events, package
					// pmu) and the cross-check against the emulators' path
					// lengths: what a run with pmu = on shows.
					path := synthPath[mode][fi]
					sc.PMU = &contract.PMUCounts{PerOp: map[string]float64{
						"instructions": float64(path + 6), "core_cycles": c, "ref_cycles": c,
						"DTLB_LOAD_MISSES.WALK_COMPLETED": synthWalks[mode], "ITLB_MISSES.WALK_COMPLETED": synthWalks[mode] / 2,
						"DTLB_LOAD_MISSES.STLB_HIT": 0.05, "DTLB_LOAD_MISSES.WALK_DURATION": 30 * synthWalks[mode],
					}}
					sc.PMUCheck = &contract.PMUCheck{Status: "ok", Expected: path, Measured: float64(path), Repeats: synthR, EmptyRepeats: synthR}
				}
				rec(sc)
			}
		}
		fmt.Fprintf(&b, "\n%d-bit work curve (synthetic)\n", width)
		for _, ns := range []int64{0, 100, 500, 2000, 5000} {
			base := 60 + float64(ns)*synthHz/1e9
			for _, mode := range modes {
				s := sub("work"+bench, width, mode, entry[width], "minimal")
				s.WorkNs = &ns
				if width == 32 && mode == "on+pcid" {
					notInPAE(s)
					continue
				}
				c := base + add[mode]
				rec(contract.Syscall{Subject: s, N: synthN / 10, R: synthR, Stats: synthStats(c, c/base), NsPerCall: synthNs(c), EmptyLoopCycles: 30})
			}
		}
		fmt.Fprintf(&b, "\n%d-bit lseek (synthetic)\n", width)
		for _, mode := range modes {
			for _, global := range []bool{false, true} {
				s := sub("lseek"+bench, width, mode, entry[width], "linux")
				s.Global = global
				if width == 32 && mode == "on+pcid" {
					notInPAE(s)
					continue
				}
				off := 650.0
				c := off + add[mode]
				if global && mode != "off" {
					c *= 0.983 // the reference's +1.72% ops/s
					off *= 0.983
				}
				rec(contract.Syscall{Subject: s, N: synthN, R: synthR, Stats: synthStats(c, c/off), NsPerCall: synthNs(c), EmptyLoopCycles: 30})
			}
		}
		fmt.Fprintf(&b, "\n%d-bit ping-pong (synthetic)\n", width)
		forTasks("pingpong", width, func(s contract.Subject, mode string, ti int) {
			off := []float64{6000, 4000}[ti]
			c := off + 2*add[mode]
			var cr3 uint64
			if s.Tasks == "processes" {
				cr3 = 4801
			}
			rec(contract.PingPong{Subject: s, N: 200, R: synthR, Stats: synthStats(c, c/off), NsPerRoundTrip: synthNs(c),
				RoundTrips: 2400, Switches: 4801, CR3Loads: cr3})
		})
		fmt.Fprintf(&b, "\n%d-bit sched-messaging (synthetic)\n", width)
		secs := messagingSecs(width)
		offS := secs["off"]
		wl := contract.Workload{Groups: 20, Loops: 100, Size: 100, IPC: "pipe"}
		forTasks("messaging", width, func(s contract.Subject, mode string, _ int) {
			c := secs[mode] * synthHz
			rec(contract.Messaging{Subject: s, Workload: wl, R: synthR, Warmup: 2, Stats: synthStats(c, secs[mode]/offS),
				Seconds: secs[mode], Messages: 800000, PerMessage: math.Round(c/800000*1000) / 1000,
				Switches: 1600000, CR3Loads: 1600000, ChecksumsOK: true})
		})
	}
	fmt.Fprintln(&b, "\nseed tables (synthetic)")
	// seed records a seed cell of subject s: unsupported when not in PAE,
	// else its figure with the ratio to off.
	seed := func(s contract.Subject, cycles, off, seconds float64) {
		if s.Width == 32 && s.Mode == "on+pcid" {
			rec(contract.SeedUnsupported{Unsupported: contract.Unsupported{Subject: s, Reason: "PCID: not in PAE (PCIDs exist only in IA-32e mode)"}})
			return
		}
		rec(contract.Seed{Subject: s, Stats: synthStats(cycles, cycles/off), Seconds: seconds})
	}
	for _, width := range []int{32, 64} {
		for _, mode := range modes {
			for fi, fl := range []string{"minimal", "linux"} {
				seed(contract.Subject{Bench: "null", Width: width, Mode: mode, Flavour: fl}, nullOff[width][fi]+add[mode], nullOff[width][fi], 0)
			}
		}
	}
	for _, width := range []int{32, 64} {
		secs := messagingSecs(width)
		for _, mode := range modes {
			for _, tasks := range []string{"processes", "threads"} {
				seed(contract.Subject{Bench: "messaging", Width: width, Mode: mode, Tasks: tasks}, secs[mode]*synthHz, secs["off"]*synthHz, secs[mode])
			}
		}
	}
	return b.end(contract.End{Status: "ok", Exit: 0, Failed: []string{}, ElapsedMs: 600000})
}

// messagingSecs are the synthetic sched-messaging seconds of width per
// mode: the reference's off and on, on+pcid half way.
func messagingSecs(width int) map[string]float64 {
	r := reference.MessagingAt(width)
	offS, onS := r.OffS, r.OnS
	return map[string]float64{"off": offS, "on": onS, "on+pcid": offS + (onS-offS)/2}
}
