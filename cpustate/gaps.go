package cpustate

// Gaps is what a scan for lost time saw, as Linux's hwlat tracer looks
// for it (kernel/trace/trace_hwlat.c): a tight loop that reads the TSC,
// with interrupts masked, and notes each step between two consecutive
// reads longer than a threshold. Such a step is time the CPU spent
// elsewhere: in SMM (an SMI: Intel SDM Vol. 3C, 32.5, "SMI handler
// execution"), or in an NMI handler. All figures in TSC ticks.
type Gaps struct {
	Span      uint64 // ticks scanned, first read to last
	Reads     uint64 // TSC reads
	Max       uint64 // the longest step between two reads
	Over      uint64 // steps longer than the threshold
	OverTicks uint64 // those steps' ticks in all
}

// ScanGaps reads tsc in a tight loop until span ticks have passed and
// returns the gaps longer than threshold ticks (both > 0).
func ScanGaps(tsc func() uint64, span, threshold uint64) Gaps {
	var g Gaps
	start := tsc()
	prev := start
	for prev-start < span {
		t := tsc()
		g.Reads++
		step := t - prev
		prev = t
		g.Max = max(g.Max, step)
		if step > threshold {
			g.Over++
			g.OverTicks += step
		}
	}
	g.Span = prev - start
	return g
}
