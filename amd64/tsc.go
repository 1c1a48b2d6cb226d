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

// TSCLeaves are the raw CPUID leaves that describe the TSC frequency, with
// the processor they were read on.
//
// Leaf 15H (SDM Vol. 2A, CPUID; Vol. 3B, "Determining the Processor Base
// Frequency", 18.7.3 in the editions of 2016 to 2022): EAX the denominator and EBX the numerator
// of the TSC/crystal ratio, ECX the crystal's frequency in Hz or 0 where
// it is not enumerated (6th and 7th generation Core: Skylake, Kaby Lake).
// Leaf 16H: EAX the processor base frequency in MHz, EBX the maximum
// frequency, ECX the bus (reference) frequency; the SDM says these are
// not meant for computing the TSC frequency.
type TSCLeaves struct {
	Intel         bool
	Family, Model uint32 // display family and model
	Has15, Has16  bool   // the maximum basic leaf reaches 15H, 16H
	Leaf15        [3]uint32
	Leaf16        [3]uint32
}

// ReadTSCLeaves reads leaves 15H and 16H where the CPU has them.
// DetectFeatures must have run.
func ReadTSCLeaves() TSCLeaves {
	f := &Features
	l := TSCLeaves{Intel: f.Vendor() == "GenuineIntel", Family: f.Family, Model: f.Model,
		Has15: f.MaxLeaf >= 0x15, Has16: f.MaxLeaf >= 0x16}
	if l.Has15 {
		l.Leaf15[0], l.Leaf15[1], l.Leaf15[2], _ = CPUID(0x15, 0)
	}
	if l.Has16 {
		l.Leaf16[0], l.Leaf16[1], l.Leaf16[2], _ = CPUID(0x16, 0)
	}
	return l
}
