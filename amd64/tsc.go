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
// product is taken in 128 bits; the result fits in 64 bits for any count
// up to 2^64 at 1 GHz or more (584 years), and for 2^64 * Hz/1e9 cycles
// below that.
func (c TSCClock) Nanoseconds(cycles uint64) uint64 {
	hi, lo := bits.Mul64(cycles, c.nsMult)
	return hi<<32 | lo>>32
}

// Cycles converts nanoseconds to a cycle count, rounding down; see
// CyclesSat for counts that may not fit in 64 bits.
func (c TSCClock) Cycles(ns uint64) uint64 {
	hi, lo := bits.Mul64(ns, c.cycMult)
	return hi<<32 | lo>>32
}

// CyclesSat is Cycles that reports false, with the largest count, when the
// result does not fit in 64 bits.
func (c TSCClock) CyclesSat(ns uint64) (uint64, bool) {
	hi, lo := bits.Mul64(ns, c.cycMult)
	if hi>>32 != 0 {
		return ^uint64(0), false
	}
	return hi<<32 | lo>>32, true
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

// RefSample reads a reference counter together with the TSC: it reads ref
// between two TSC reads five times and keeps the tightest pair, returning
// the TSC at the middle of it and the counter. Under a hypervisor the
// virtual CPU can stop between any two instructions; the tightest of five
// brackets is one where it did not.
func RefSample(ref func() uint64) (tsc, r uint64) {
	best := ^uint64(0)
	for i := 0; i < 5; i++ {
		a := TSCBegin()
		v := ref()
		b := TSCEndL()
		if b-a < best {
			best, tsc, r = b-a, a+(b-a)/2, v
		}
	}
	return tsc, r
}

// CalibrateTSC measures the TSC frequency against a reference counter that
// runs at refHz and is read by ref; the counter wraps at 2^refBits. It
// times window reference ticks three times and returns the median, in Hz.
func CalibrateTSC(ref func() uint64, refHz uint64, refBits uint, window uint64) uint64 {
	var r [3]uint64
	mask := uint64(1)<<refBits - 1
	for i := range r {
		c0, t0 := RefSample(ref)
		for (ref()-t0)&mask < window {
		}
		c1, t1 := RefSample(ref)
		r[i] = (c1 - c0) * refHz / ((t1 - t0) & mask)
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
