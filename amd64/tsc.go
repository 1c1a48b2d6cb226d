package amd64

import "math/bits"

// TSCClock converts time-stamp-counter cycles to nanoseconds and back, with
// a 32.32 fixed-point factor as Linux's clocksource does (ns = cycles *
// mult >> 32), computed once from the TSC frequency.
type TSCClock struct {
	Hz      uint64 // TSC frequency in cycles per second
	nsMult  uint64 // 2^32 * 1e9 / Hz
	cycMult uint64 // 2^32 * Hz / 1e9
}

// NewTSCClock returns the converter for a TSC of hz cycles per second
// (hz > 0).
func NewTSCClock(hz uint64) TSCClock {
	nsHi, nsLo := bits.Mul64(1e9, 1<<32)
	cyHi, cyLo := bits.Mul64(hz, 1<<32)
	n, _ := bits.Div64(nsHi, nsLo, hz)
	c, _ := bits.Div64(cyHi, cyLo, 1e9)
	return TSCClock{Hz: hz, nsMult: n, cycMult: c}
}

// Nanoseconds converts a cycle count to nanoseconds, rounding down. The
// 128-bit product never overflows: 2^64 cycles at 1 GHz is 584 years.
func (c TSCClock) Nanoseconds(cycles uint64) uint64 {
	hi, lo := bits.Mul64(cycles, c.nsMult)
	return hi<<32 | lo>>32
}

// Cycles converts nanoseconds to a cycle count, rounding down.
func (c TSCClock) Cycles(ns uint64) uint64 {
	hi, lo := bits.Mul64(ns, c.cycMult)
	return hi<<32 | lo>>32
}

// TSC frequency sources, in the order they are tried.
const (
	TSCFromCPUID15H = "cpuid-15h" // crystal clock times the TSC/crystal ratio
	TSCFromCPUID16H = "cpuid-16h" // processor base frequency
	TSCFromPMTimer  = "acpi-pm-timer"
	TSCFromPIT      = "pit"
)

// TSCFromCPUID returns the TSC frequency in Hz that CPUID enumerates, and
// which leaf gave it, or 0 when neither does. Leaf 15H gives the TSC/core
// crystal ratio and, where non-zero, the crystal frequency (SDM Vol. 3B,
// 18.17.4); leaf 16H gives the base frequency in MHz, which is the TSC
// frequency on processors with an invariant TSC (Linux,
// arch/x86/kernel/tsc.c, native_calibrate_tsc, uses it the same way).
func TSCFromCPUID() (hz uint64, source string) {
	if Features.MaxLeaf >= 0x15 {
		den, num, crystal, _ := CPUID(0x15, 0)
		if den != 0 && num != 0 && crystal != 0 {
			return uint64(crystal) * uint64(num) / uint64(den), TSCFromCPUID15H
		}
	}
	if Features.MaxLeaf >= 0x16 {
		base, _, _, _ := CPUID(0x16, 0)
		if base&0xffff != 0 {
			return uint64(base&0xffff) * 1e6, TSCFromCPUID16H
		}
	}
	return 0, ""
}

// CalibrateTSC measures the TSC frequency against a reference counter that
// runs at refHz and is read by ref; the counter wraps at 2^refBits. It
// times window reference ticks three times and returns the median, in Hz.
func CalibrateTSC(ref func() uint64, refHz uint64, refBits uint, window uint64) uint64 {
	var r [3]uint64
	mask := uint64(1)<<refBits - 1
	for i := range r {
		// Start on a tick edge so that the window is whole ticks.
		t0 := ref()
		for ref() == t0 {
		}
		t0 = ref()
		c0 := TSCBegin()
		var dt uint64
		for dt < window {
			dt = (ref() - t0) & mask
		}
		c1 := TSCEndL()
		r[i] = (c1 - c0) * refHz / dt
	}
	// median of three
	if r[0] > r[1] {
		r[0], r[1] = r[1], r[0]
	}
	if r[1] > r[2] {
		r[1], r[2] = r[2], r[1]
	}
	if r[0] > r[1] {
		r[0], r[1] = r[1], r[0]
	}
	return r[1]
}
