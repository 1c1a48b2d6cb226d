package board

import (
	"math/bits"

	"github.com/ptilab/ptilab/amd64"
)

// TSCSource says where a TSC frequency came from (a number, not a
// string: kernel code keeps no pointers in globals).
type TSCSource uint8

const (
	TSCNone         TSCSource = iota
	TSCCPUID15H               // crystal clock (CPUID.15H:ECX) times the TSC/crystal ratio
	TSCCrystalTable           // the SDM's crystal clock of the model times CPUID.15H's ratio
	TSCPMTimer                // measured against the ACPI PM timer
	TSCPIT                    // measured against PIT channel 2
	TSCHPET                   // measured against the HPET's main counter
)

// String names the source as the records do.
func (s TSCSource) String() string {
	switch s {
	case TSCCPUID15H:
		return "cpuid-15h"
	case TSCCrystalTable:
		return "cpuid-15h-model"
	case TSCPMTimer:
		return "acpi-pm-timer"
	case TSCPIT:
		return "pit"
	case TSCHPET:
		return "hpet"
	}
	return ""
}

// crystalBoundPermille: CPUID.16H's base frequency bounds the CPUID
// figure to ±2% (a 24 MHz crystal taken for 25 MHz is 4% off).
const crystalBoundPermille = 20

// ModelCrystalHz returns the nominal core crystal clock frequency in Hz of
// Intel family-6 models whose CPUID.15H:ECX is 0, from the SDM's table
// (Vol. 3B, "Determining the Processor Base Frequency", table "Nominal
// Core Crystal Clock Frequency")
// and Linux (arch/x86/kernel/tsc.c, native_calibrate_tsc, before it
// turned to CPUID.16H): 24 MHz for 6th and 7th generation Core (Skylake
// 06_4EH/06_5EH, Kaby Lake and Coffee Lake 06_8EH/06_9EH), 25 MHz for
// Xeon Scalable 06_55H and Atom Denverton 06_5FH, 19.2 MHz for Atom
// Goldmont 06_5CH; 0 for any other model. Xeon W parts share model 55H
// with a 24 MHz crystal: CPUID.16H's bound and the PM timer catch them.
func ModelCrystalHz(family, model uint32) uint64 {
	if family != 6 {
		return 0
	}
	switch model {
	case 0x4e, 0x5e, 0x8e, 0x9e:
		return 24_000_000
	case 0x55, 0x5f:
		return 25_000_000
	case 0x5c:
		return 19_200_000
	}
	return 0
}

// CPUIDFrequency is the TSC frequency CPUID gives (CPUIDTSC).
type CPUIDFrequency struct {
	Hz        uint64    // 0: none
	Source    TSCSource // TSCCPUID15H or TSCCrystalTable
	CrystalHz uint64    // the crystal clock used
	BaseHz    uint64    // CPUID.16H's base frequency, 0 without it
	// Rejected says why a figure CPUID gave was not taken: it lies
	// outside crystalBoundPermille of CPUID.16H's base frequency.
	Rejected bool
}

// CPUIDTSC returns the TSC frequency of the leaves l (amd64.ReadTSCLeaves)
// from leaf 15H: the crystal (ECX, or ModelCrystalHz where ECX is 0 on an
// Intel part) times EBX/EAX. Leaf 16H is used only as a bound: a figure
// more than 2% from its base frequency is returned with Rejected set and
// Hz 0. Without leaf 15H, a ratio or a known crystal, Hz is 0 (Ivy Bridge
// has no leaf 15H).
func CPUIDTSC(l amd64.TSCLeaves) CPUIDFrequency {
	var f CPUIDFrequency
	if l.Has16 {
		f.BaseHz = uint64(l.Leaf16[0]&0xffff) * 1e6
	}
	den, num, crystal := l.Leaf15[0], l.Leaf15[1], uint64(l.Leaf15[2])
	if !l.Has15 || den == 0 || num == 0 {
		return f
	}
	f.Source = TSCCPUID15H
	if crystal == 0 && l.Intel {
		crystal, f.Source = ModelCrystalHz(l.Family, l.Model), TSCCrystalTable
	}
	if crystal == 0 {
		f.Source = TSCNone
		return f
	}
	f.CrystalHz = crystal
	hz := crystal * uint64(num) / uint64(den)
	if f.BaseHz != 0 && absDiff(hz, f.BaseHz)*1000 > f.BaseHz*crystalBoundPermille {
		f.Rejected = true
		return f
	}
	f.Hz = hz
	return f
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// PPM returns (a - b) / b in parts per million, rounded toward zero; 0
// when b is 0.
func PPM(a, b uint64) int64 {
	if b == 0 {
		return 0
	}
	d := int64(absDiff(a, b) * 1_000_000 / b)
	if a < b {
		return -d
	}
	return d
}

// RefSample reads a reference counter together with the TSC: it reads ref
// between two TSC reads five times and keeps the tightest pair, returning
// the TSC at the middle of it and the counter. Under a hypervisor the
// virtual CPU can stop between any two instructions; the tightest of five
// brackets is one where it did not.
func RefSample(ref func() uint64) (tsc, r uint64) {
	tsc, r, _ = bracket(amd64.TSCBegin, amd64.TSCEndL, ref)
	return tsc, r
}

// SMIThreshold is the longest a bracketed reference read may take, in TSC
// cycles: Linux's TSC_DEFAULT_THRESHOLD (arch/x86/kernel/tsc.c,
// tsc_read_refs, while the TSC's rate is unknown; older kernels had
// SMI_TRESHOLD, 50000), 33 µs at 4 GHz, 131 µs at 1 GHz. A read of the PM
// timer or the HPET takes about a microsecond; an SMI tens to hundreds.
const SMIThreshold = 0x20000

// bracketReads is how many times a reference read is bracketed (Linux's
// MAX_RETRIES in tsc_read_refs).
const bracketReads = 5

// bracket reads ref between begin and end, the TSC reads, bracketReads
// times and returns the middle of the tightest bracket and ref's value in
// it; ok is false when even the tightest took SMIThreshold cycles or more
// (an SMI, or a stalled virtual CPU, landed in every one).
func bracket(begin, end, ref func() uint64) (tsc, r uint64, ok bool) {
	best := ^uint64(0)
	for i := 0; i < bracketReads; i++ {
		a := begin()
		v := ref()
		b := end()
		if b-a < best {
			best, tsc, r = b-a, a+(b-a)/2, v
		}
	}
	return tsc, r, best < SMIThreshold
}

// RefCounter is a free-running reference counter for TSC calibration:
// Read returns its value, which counts up at Hz and wraps at 2^Bits (the
// ACPI PM timer: 3.579545 MHz, 24 or 32 bits; the HPET's main counter:
// 10 to 10^4 MHz, read 32 bits wide).
type RefCounter struct {
	Read func() uint64
	Hz   uint64
	Bits uint
}

// PIT8254 is PIT channel 2 as a one-shot timer for calibration: Start
// loads count into channel 2 in mode 0 with its gate high (OUT2 goes low,
// and high again when the count reaches 0); Out2 reads OUT2 (port 61H bit
// 5).
type PIT8254 struct {
	Start func(count uint16)
	Out2  func() bool
	Hz    uint64
}

// CalError says why a calibration failed.
type CalError uint8

const (
	CalOK          CalError = iota
	CalNoCounter            // no counter to calibrate against
	CalStuck                // the counter did not advance
	CalBackwards            // the counter went backwards (other than a wrap)
	CalTimeout              // a wait did not end within the TSC bound
	CalDisturbed            // the wait was disturbed (an SMI, a stalled virtual CPU)
	CalImplausible          // the result is outside the range of real TSCs
	CalNotTried             // not measured: an earlier reference gave a figure
)

func (e CalError) String() string {
	switch e {
	case CalOK:
		return "ok"
	case CalNoCounter:
		return "not present"
	case CalStuck:
		return "did not advance"
	case CalBackwards:
		return "went backwards"
	case CalTimeout:
		return "did not finish within the TSC bound"
	case CalDisturbed:
		return "disturbed"
	case CalImplausible:
		return "gave an implausible frequency"
	case CalNotTried:
		return "not tried"
	}
	return "unknown error"
}

// Calibrator measures the TSC frequency against a reference counter. TSC
// reads the TSC (serialized; amd64.TSCEndL on the machine, a fake in host
// tests); Bound is the most TSC cycles any one wait may take, so that a
// counter that stops or never starts ends the wait instead of hanging the
// boot.
type Calibrator struct {
	TSC   func() uint64
	Bound uint64
}

// CalBound bounds the boot's calibration waits: 2^34 TSC cycles is 3.4 s
// at 5 GHz and 17 s at 1 GHz, far more than the 0.5 s window at any real
// TSC rate.
const CalBound = 1 << 34

// Plausible TSC rates: 10 MHz (an emulator's instruction counter runs in
// the tens of MHz) to 20 GHz.
const (
	minTSCHz = 10_000_000
	maxTSCHz = 20_000_000_000
)

// Counter-validation rounds and reads, as Linux's ACPI PM timer check
// (drivers/clocksource/acpi_pm.c, ACPI_PM_MONOTONICITY_CHECKS and
// ACPI_PM_READ_CHECKS).
const (
	validateRounds = 10
	validateReads  = 10000
)

// sample reads ref between two TSC reads five times and keeps the
// tightest pair (bracket with the calibrator's TSC).
func (c Calibrator) sample(ref func() uint64) (tsc, r uint64, ok bool) {
	return bracket(c.TSC, c.TSC, ref)
}

// Validate checks that ref counts, as Linux checks the ACPI PM timer
// before it trusts it (acpi_pm.c, init_acpi_pm_clocksource): in each of
// 10 rounds the counter must change within 10000 reads and the TSC bound,
// and move forward (or wrap).
func (c Calibrator) Validate(ref RefCounter) CalError {
	if ref.Read == nil || ref.Bits == 0 || ref.Hz == 0 {
		return CalNoCounter
	}
	mask := uint64(1)<<ref.Bits - 1
	for j := 0; j < validateRounds; j++ {
		t0 := c.TSC()
		v1 := ref.Read()
		i := 0
		for ; i < validateReads; i++ {
			v2 := ref.Read()
			if v2 == v1 {
				if c.TSC()-t0 > c.Bound/validateRounds {
					return CalStuck
				}
				continue
			}
			if (v2-v1)&mask > mask/2 {
				return CalBackwards
			}
			break
		}
		if i == validateReads {
			return CalStuck
		}
	}
	return CalOK
}

// Against validates ref and measures the TSC frequency over window ticks
// of it, as Together does with one reference. It returns the frequency in
// Hz.
func (c Calibrator) Against(ref RefCounter, window uint64) (uint64, CalError) {
	var out [1]Measurement
	c.together([]RefCounter{ref}, []uint64{window}, out[:])
	return out[0].Hz, out[0].Err
}

// Measurement is the TSC frequency measured against one reference, or
// why there is none.
type Measurement struct {
	Hz  uint64   // 0: none
	Err CalError // why Hz is 0; CalNotTried where the reference was not measured
}

// maxRefs is how many references Together measures at once: the ACPI PM
// timer and the HPET.
const maxRefs = 2

// Together validates each of refs (at most maxRefs; a reference whose
// Read is nil is CalNoCounter) and measures the TSC frequency against
// every one that passed over one window, setting out[i] for refs[i]. Each
// is read between two TSC reads at the start and at the end (bracket: an
// end whose every bracket took SMIThreshold cycles or more is
// CalDisturbed) and all along in between: each step must move forward by
// less than half the counter's period (a wrap is counted; a step back
// drops the reference with CalBackwards, the others go on). The wait
// lasts until the first reference still counting has advanced by 1/div
// of a second (its Hz/div ticks; the boot's div is 2: half a second), and
// must end within the TSC bound (CalTimeout for every reference still
// counting). An SMI inside the window delays both clocks alike: only the
// ends need guarding.
func (c Calibrator) Together(refs []RefCounter, div uint64, out []Measurement) {
	var windows [maxRefs]uint64
	for i := range min(len(refs), maxRefs) {
		windows[i] = refs[i].Hz / div
	}
	c.together(refs, windows[:], out)
}

// tracked is one reference counter through Together's window.
type tracked struct {
	ref    RefCounter
	mask   uint64
	window uint64 // ticks to wait for, when it leads
	t0     uint64 // TSC at the first sample
	prev   uint64 // the counter's last value
	ticks  uint64 // ticks since the first sample
	err    CalError
}

// advance counts the step from the last value to v; a step of half the
// period or more is a step back, which ends the reference.
func (k *tracked) advance(v uint64) {
	d := (v - k.prev) & k.mask
	if d > k.mask/2 {
		k.err = CalBackwards
		return
	}
	k.ticks += d
	k.prev = v
}

// together is Together with each reference's window in its own ticks.
func (c Calibrator) together(refs []RefCounter, windows []uint64, out []Measurement) {
	var ks [maxRefs]tracked
	n := min(len(refs), len(out), maxRefs)
	for i := 0; i < n; i++ {
		k := &ks[i]
		k.ref, k.window = refs[i], windows[i]
		if k.err = c.Validate(k.ref); k.err != CalOK {
			continue
		}
		k.mask = uint64(1)<<k.ref.Bits - 1
		var ok bool
		if k.t0, k.prev, ok = c.sample(k.ref.Read); !ok {
			k.err = CalDisturbed
		}
	}
	start := c.TSC()
	for {
		lead := -1
		for i := 0; i < n && lead < 0; i++ {
			if ks[i].err == CalOK {
				lead = i
			}
		}
		if lead < 0 || ks[lead].ticks >= ks[lead].window {
			break
		}
		if c.TSC()-start > c.Bound {
			for i := 0; i < n; i++ {
				if ks[i].err == CalOK {
					ks[i].err = CalTimeout
				}
			}
			break
		}
		for i := 0; i < n; i++ {
			if ks[i].err == CalOK {
				ks[i].advance(ks[i].ref.Read())
			}
		}
	}
	for i := 0; i < n; i++ {
		k := &ks[i]
		if k.err == CalOK {
			t1, v, ok := c.sample(k.ref.Read)
			if !ok {
				k.err = CalDisturbed
			} else if k.advance(v); k.err == CalOK {
				out[i].Hz, k.err = rate(t1-k.t0, k.ref.Hz, k.ticks)
			}
		}
		out[i].Err = k.err
	}
}

// rate returns cycles * hz / ticks, checked against the plausible range.
func rate(cycles, hz, ticks uint64) (uint64, CalError) {
	hi, lo := bits.Mul64(cycles, hz)
	if ticks == 0 || hi >= ticks {
		return 0, CalImplausible
	}
	r, _ := bits.Div64(hi, lo, ticks)
	if r < minTSCHz || r > maxTSCHz {
		return 0, CalImplausible
	}
	return r, CalOK
}

// AgainstPIT measures the TSC frequency against PIT channel 2 over ms
// milliseconds (at most 54: the count is 16 bits), as Linux's
// pit_calibrate_tsc (arch/x86/kernel/tsc.c): it starts the one-shot and
// spins until OUT2 rises, each read of OUT2 between two TSC reads, keeping
// the shortest and longest TSC step; fewer than 1000 reads (CalStuck), or a
// longest step above ten times the shortest (CalDisturbed: an SMI or a
// stall in the middle), is an error, and so is a start (Start's
// pitStartAccesses port accesses, between two TSC reads) longer than ten
// shortest steps per access (an SMI before the count began would shorten
// the TSC's interval unseen, which Linux leaves to its reference check);
// so is a wait beyond the TSC bound (CalTimeout).
func (c Calibrator) AgainstPIT(p PIT8254, ms uint64) (uint64, CalError) {
	if p.Start == nil || p.Out2 == nil || p.Hz == 0 {
		return 0, CalNoCounter
	}
	count := p.Hz * ms / 1000
	if count == 0 || count > 0xffff {
		return 0, CalImplausible
	}
	s := c.TSC()
	p.Start(uint16(count))
	t0 := c.TSC()
	prev := t0
	minStep, maxStep := ^uint64(0), uint64(0)
	reads := 0
	for !p.Out2() {
		t := c.TSC()
		if t-t0 > c.Bound {
			return 0, CalTimeout
		}
		step := t - prev
		minStep, maxStep = min(minStep, step), max(maxStep, step)
		prev = t
		reads++
	}
	t1 := c.TSC()
	const minReads = 1000 // Linux: loopmin
	switch {
	case reads < minReads:
		return 0, CalStuck
	case maxStep > 10*minStep, t0-s > 10*pitStartAccesses*minStep:
		return 0, CalDisturbed
	}
	return rate(t1-t0, p.Hz, count)
}

// pitStartAccesses is how many port accesses PIT8254.Start makes on the
// machine (pitStart: the gate read and written, the mode, the count's two
// bytes), against one per step of AgainstPIT's loop.
const pitStartAccesses = 5

// pitAttempts is how many one-shots CalibratePIT runs at most: Linux's
// pit_hpet_ptimer_calibrate_cpu tries three times.
const pitAttempts = 3

// CalibratePIT runs AgainstPIT until an attempt is neither disturbed nor
// stuck (both what an SMI does to it), at most pitAttempts times, and
// returns its figure (or the last attempt's error) and how many attempts
// were made beyond the first. A timeout, a missing PIT or an implausible
// figure ends it at once: a second try would say the same.
func (c Calibrator) CalibratePIT(p PIT8254, ms uint64) (hz uint64, e CalError, retries int) {
	for i := 0; i < pitAttempts; i++ {
		hz, e = c.AgainstPIT(p, ms)
		if e != CalDisturbed && e != CalStuck {
			return hz, e, i
		}
	}
	return 0, e, pitAttempts - 1
}

// agreePPM is how far a CPUID frequency and a measured one may differ for
// the CPUID figure to be taken: the PM timer's crystal is good to about
// 100 ppm, the measurement over half a second to a few; CPUID.16H taken
// for the TSC frequency is off by 2000 to 4000 ppm on Skylake.
const agreePPM = 1000

// calWindowDiv: the boot measures against the PM timer and the HPET over
// 1/calWindowDiv of a second.
const calWindowDiv = 2

// Measurements are a boot's TSC measurements against each reference.
type Measurements struct {
	PM, HPET, PIT Measurement
	PITRetries    int // one-shots run beyond the first (CalibratePIT)
}

// Measure measures the TSC against the ACPI PM timer and the HPET
// together over half a second (Together; a reference whose Read is nil
// is absent, CalNoCounter), and against the PIT (CalibratePIT over pitMs
// milliseconds) only where neither gave a figure; the PIT is otherwise
// CalNotTried. The PIT is the last resort: its 50 ms window and its step
// of a port read (about a microsecond) make it good to tens of ppm where
// the other two are good to one, and its legacy I/O is what SMIs hit.
func (c Calibrator) Measure(pm, hpet RefCounter, pit PIT8254, pitMs uint64) Measurements {
	var out [maxRefs]Measurement
	c.Together([]RefCounter{pm, hpet}, calWindowDiv, out[:])
	m := Measurements{PM: out[0], HPET: out[1], PIT: Measurement{Err: CalNotTried}}
	if m.PM.Hz == 0 && m.HPET.Hz == 0 {
		m.PIT.Hz, m.PIT.Err, m.PITRetries = c.CalibratePIT(pit, pitMs)
	}
	return m
}

// TSCChoice is the TSC frequency the boot settles on, with the evidence.
type TSCChoice struct {
	Hz         uint64
	Source     TSCSource
	CPUID      CPUIDFrequency
	MeasuredHz uint64    // 0: no measurement
	Measured   TSCSource // TSCPMTimer, TSCHPET or TSCPIT
	PPM        int64     // (CPUID - measured) / measured, when both exist
	Disagree   bool      // both exist and differ by more than agreePPM: the measured one is taken
	CrossCheck bool      // both exist
	// Refs are every reference's figure, or why there is none.
	Refs Measurements
	// HPETvsPM is (HPET's figure - the PM timer's) / the PM timer's in
	// ppm, when both exist (RefsCompared).
	HPETvsPM     int64
	RefsCompared bool
	// HPET is what FindHPET found (the caller sets it).
	HPET HPETInfo
}

// ChooseTSC settles the TSC frequency from CPUID's figure and the
// measurements m. The measured figure is the PM timer's, else the
// HPET's, else the PIT's (ptilab's order since it first measured: the PM
// timer runs at a frequency the ACPI specification fixes, where the
// HPET's period is what the hardware reports; both count over the same
// half second, and the HPET's figure is kept beside it as a check,
// HPETvsPM; Linux refines against the HPET first). The choice is CPUID's
// figure when the two agree within agreePPM or when nothing was measured,
// the measured one when they disagree or CPUID has none. Hz is 0 when
// neither exists.
func ChooseTSC(cpuid CPUIDFrequency, m Measurements) TSCChoice {
	c := TSCChoice{CPUID: cpuid, Refs: m}
	switch {
	case m.PM.Hz != 0:
		c.MeasuredHz, c.Measured = m.PM.Hz, TSCPMTimer
	case m.HPET.Hz != 0:
		c.MeasuredHz, c.Measured = m.HPET.Hz, TSCHPET
	case m.PIT.Hz != 0:
		c.MeasuredHz, c.Measured = m.PIT.Hz, TSCPIT
	}
	if m.PM.Hz != 0 && m.HPET.Hz != 0 {
		c.HPETvsPM, c.RefsCompared = PPM(m.HPET.Hz, m.PM.Hz), true
	}
	measuredHz, measured := c.MeasuredHz, c.Measured
	switch {
	case cpuid.Hz != 0 && measuredHz != 0:
		c.CrossCheck = true
		c.PPM = PPM(cpuid.Hz, measuredHz)
		if c.PPM > agreePPM || c.PPM < -agreePPM {
			c.Disagree = true
			c.Hz, c.Source = measuredHz, measured
		} else {
			c.Hz, c.Source = cpuid.Hz, cpuid.Source
		}
	case cpuid.Hz != 0:
		c.Hz, c.Source = cpuid.Hz, cpuid.Source
	case measuredHz != 0:
		c.Hz, c.Source = measuredHz, measured
	}
	return c
}
