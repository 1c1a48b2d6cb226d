package board

import (
	"math/bits"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
)

// Real CPUID values of the reference parts and their neighbours.
var (
	// Core i7-3770 (Ivy Bridge, 06_3AH): the maximum basic leaf is 0DH,
	// no leaf 15H or 16H.
	ivyBridge = amd64.TSCLeaves{Intel: true, Family: 6, Model: 0x3a}
	// Core i5-8350U (Kaby Lake R, a Skylake-family client part, 06_8EH
	// stepping 10, CPUID.1:EAX 000806EAH): 15H EAX 2, EBX 158 (9EH), ECX
	// 0; 16H base 1900 MHz, maximum 3600 MHz, bus 100 MHz. Source: `cpuid
	// -1 --raw` of a Dell XPS 13 9370, posted by Paul Menzel to LKML on
	// 2022-08-23 ("Re: WARNING: CPU: 1 PID: 83 at
	// arch/x86/kernel/cpu/sgx/main.c:446"). The TSC runs at 24 MHz * 158
	// / 2 = 1896 MHz; 16H's base is 0.21% off.
	skylakeClient = amd64.TSCLeaves{Intel: true, Family: 6, Model: 0x8e, Has15: true, Has16: true,
		Leaf15: [3]uint32{2, 158, 0}, Leaf16: [3]uint32{1900, 3600, 100}}
	// Xeon Gold 6146 (Skylake server, 06_55H): 15H EAX 2, EBX 256
	// (100H), ECX 0, as posted in anrieff/libcpuid issue 124 (2022-07-13);
	// 25 MHz * 256 / 2 = 3200 MHz. That post gives no 16H: the one here is
	// the part's published base and maximum turbo (3200 and 4200 MHz),
	// only the sanity bound reads it.
	skylakeServer = amd64.TSCLeaves{Intel: true, Family: 6, Model: 0x55, Has15: true, Has16: true,
		Leaf15: [3]uint32{2, 256, 0}, Leaf16: [3]uint32{3200, 4200, 100}}
	// Core i9-7900X (Skylake-X, 06_55H stepping 4, the Xeon Scalable
	// die), AIDA64 dump in github.com/InstLatx64/InstLatx64
	// GenuineIntel/GenuineIntel0050654_SkylakeX_CPUID.txt: 15H EAX 2, EBX
	// 276 (114H), ECX 0; 16H 3300/4000/100 MHz. Its ratio fits a 24 MHz
	// crystal (3312 MHz); the table's 25 MHz for 06_55H gives 3450 MHz,
	// 4.5% above 16H's base.
	skylakeX = amd64.TSCLeaves{Intel: true, Family: 6, Model: 0x55, Has15: true, Has16: true,
		Leaf15: [3]uint32{2, 276, 0}, Leaf16: [3]uint32{3300, 4000, 100}}
	// A part that enumerates its crystal in 15H:ECX (38.4 MHz).
	enumerated = amd64.TSCLeaves{Intel: true, Family: 6, Model: 0x7e, Has15: true, Has16: true,
		Leaf15: [3]uint32{2, 62, 38_400_000}, Leaf16: [3]uint32{1200, 3900, 100}}
)

func TestCPUIDTSC(t *testing.T) {
	f := CPUIDTSC(ivyBridge)
	assert.Equal(t, CPUIDFrequency{}, f, "Ivy Bridge: no CPUID figure, the PM timer gives it")

	f = CPUIDTSC(skylakeClient)
	assert.Equal(t, uint64(1_896_000_000), f.Hz)
	assert.Equal(t, TSCCrystalTable, f.Source)
	assert.Equal(t, uint64(24_000_000), f.CrystalHz)
	assert.Equal(t, uint64(1_900_000_000), f.BaseHz)
	assert.Equal(t, int64(-2105), PPM(f.Hz, f.BaseHz), "what taking 16H for the TSC frequency got wrong")

	f = CPUIDTSC(skylakeServer)
	assert.Equal(t, uint64(3_200_000_000), f.Hz)
	assert.Equal(t, uint64(25_000_000), f.CrystalHz)
	assert.Equal(t, TSCCrystalTable, f.Source)

	f = CPUIDTSC(skylakeX)
	assert.Zero(t, f.Hz, "25 MHz for a 24 MHz crystal: outside 16H's bound")
	assert.True(t, f.Rejected)

	f = CPUIDTSC(enumerated)
	assert.Equal(t, uint64(1_190_400_000), f.Hz)
	assert.Equal(t, TSCCPUID15H, f.Source)

	amd := skylakeClient
	amd.Intel = false
	assert.Zero(t, CPUIDTSC(amd).Hz, "the crystal table is Intel's")
	unknown := skylakeClient
	unknown.Model = 0x3c
	assert.Zero(t, CPUIDTSC(unknown).Hz, "a model the table does not list")
	no16 := skylakeClient
	no16.Has16, no16.Leaf16 = false, [3]uint32{}
	assert.Equal(t, uint64(1_896_000_000), CPUIDTSC(no16).Hz, "no 16H: no bound")
}

// TestCPUIDTSCHost: whatever CPUIDTSC makes of the host's leaves 15H and
// 16H is a plausible TSC rate, or none; without leaf 15H, none.
func TestCPUIDTSCHost(t *testing.T) {
	saved := amd64.Features
	t.Cleanup(func() { amd64.Features = saved })
	amd64.DetectFeatures()
	f := CPUIDTSC(amd64.ReadTSCLeaves())
	if f.Hz != 0 {
		assert.Greater(t, f.Hz, uint64(minTSCHz))
		assert.Less(t, f.Hz, uint64(maxTSCHz))
		assert.Contains(t, []TSCSource{TSCCPUID15H, TSCCrystalTable}, f.Source)
	}

	amd64.Features.MaxLeaf = 0xd
	assert.Zero(t, CPUIDTSC(amd64.ReadTSCLeaves()).Hz)
}

func TestModelCrystalHz(t *testing.T) {
	for model, want := range map[uint32]uint64{
		0x4e: 24e6, 0x5e: 24e6, 0x8e: 24e6, 0x9e: 24e6,
		0x55: 25e6, 0x5f: 25e6, 0x5c: 19.2e6,
		0x3a: 0, 0x3c: 0, 0x7e: 0,
	} {
		assert.Equal(t, want, ModelCrystalHz(6, model), "06_%02XH", model)
	}
	assert.Zero(t, ModelCrystalHz(0xf, 0x5e))
}

func TestPPM(t *testing.T) {
	assert.Equal(t, int64(2000), PPM(4_008_000_000, 4_000_000_000))
	assert.Equal(t, int64(-1996), PPM(4_000_000_000, 4_008_000_000))
	assert.Equal(t, int64(0), PPM(5, 0))
	assert.Equal(t, int64(0), PPM(7, 7))
}

// pmOnly, hpetOnly, pitOnly: measurements where one reference gave hz
// and the others none.
func pmOnly(hz uint64) Measurements {
	return Measurements{PM: Measurement{Hz: hz}, HPET: Measurement{Err: CalNoCounter}, PIT: Measurement{Err: CalNotTried}}
}

func TestChooseTSC(t *testing.T) {
	sky := CPUIDTSC(skylakeClient)
	// The PM timer's figure 30 ppm off: CPUID's is taken, both reported.
	c := ChooseTSC(sky, pmOnly(1_895_945_000))
	assert.Equal(t, uint64(1_896_000_000), c.Hz)
	assert.Equal(t, TSCCrystalTable, c.Source)
	assert.True(t, c.CrossCheck)
	assert.False(t, c.Disagree)
	assert.Equal(t, int64(29), c.PPM)
	assert.Equal(t, TSCPMTimer, c.Measured)
	assert.False(t, c.RefsCompared, "no HPET figure")

	// 2000 ppm apart: the measurement is taken.
	c = ChooseTSC(sky, pmOnly(1_899_800_000))
	assert.Equal(t, uint64(1_899_800_000), c.Hz)
	assert.Equal(t, TSCPMTimer, c.Source)
	assert.True(t, c.Disagree)
	assert.Equal(t, int64(-2000), c.PPM)

	// Ivy Bridge: the measurement alone.
	c = ChooseTSC(CPUIDTSC(ivyBridge), pmOnly(3_392_300_000))
	assert.Equal(t, uint64(3_392_300_000), c.Hz)
	assert.Equal(t, TSCPMTimer, c.Source)
	assert.False(t, c.CrossCheck)

	// No measurement: CPUID alone, unchecked.
	none := Measurements{PM: Measurement{Err: CalNoCounter}, HPET: Measurement{Err: CalNoCounter}, PIT: Measurement{Err: CalTimeout}}
	c = ChooseTSC(sky, none)
	assert.Equal(t, uint64(1_896_000_000), c.Hz)
	assert.False(t, c.CrossCheck)
	assert.Equal(t, TSCNone, c.Measured)
	assert.Equal(t, none, c.Refs, "every reference's outcome kept")

	assert.Zero(t, ChooseTSC(CPUIDTSC(ivyBridge), none).Hz)
}

// TestChooseTSCReferences: the PM timer's figure is the measured one
// where it exists, the HPET's beside it as a check (their difference in
// ppm); the HPET's where the PM timer gave none, the PIT's where neither
// did.
func TestChooseTSCReferences(t *testing.T) {
	ivy := CPUIDTSC(ivyBridge)
	both := Measurements{PM: Measurement{Hz: 3_392_300_000}, HPET: Measurement{Hz: 3_392_310_000}, PIT: Measurement{Err: CalNotTried}}
	c := ChooseTSC(ivy, both)
	assert.Equal(t, uint64(3_392_300_000), c.Hz, "the PM timer's")
	assert.Equal(t, TSCPMTimer, c.Source)
	assert.True(t, c.RefsCompared)
	assert.Equal(t, int64(2), c.HPETvsPM, "(HPET - PM) / PM: 10 kHz in 3.39 GHz")

	hpetOnly := Measurements{PM: Measurement{Err: CalDisturbed}, HPET: Measurement{Hz: 3_392_310_000}, PIT: Measurement{Err: CalNotTried}}
	c = ChooseTSC(ivy, hpetOnly)
	assert.Equal(t, uint64(3_392_310_000), c.Hz)
	assert.Equal(t, TSCHPET, c.Source)
	assert.Equal(t, TSCHPET, c.Measured)
	assert.Equal(t, "hpet", c.Source.String())
	assert.False(t, c.RefsCompared)

	// Skylake: CPUID's figure checked against the HPET.
	sky := CPUIDTSC(skylakeClient)
	c = ChooseTSC(sky, Measurements{PM: Measurement{Err: CalNoCounter}, HPET: Measurement{Hz: 1_896_003_000}, PIT: Measurement{Err: CalNotTried}})
	assert.Equal(t, uint64(1_896_000_000), c.Hz)
	assert.Equal(t, TSCCrystalTable, c.Source)
	assert.Equal(t, TSCHPET, c.Measured)
	assert.Equal(t, int64(-1), c.PPM)

	pitOnly := Measurements{PM: Measurement{Err: CalNoCounter}, HPET: Measurement{Err: CalNoCounter}, PIT: Measurement{Hz: 100_000_527}, PITRetries: 1}
	c = ChooseTSC(ivy, pitOnly)
	assert.Equal(t, uint64(100_000_527), c.Hz)
	assert.Equal(t, TSCPIT, c.Source)
	assert.Equal(t, 1, c.Refs.PITRetries)
}

// fakeClock is a simulated machine for the calibration's host tests: a
// TSC at tscHz whose every read costs readCost cycles, a reference counter
// at refHz, bits wide, starting at refStart, whose every read costs
// ioCost cycles (port I/O), and a PIT one-shot. The behaviour of the
// reference can be broken on purpose.
type fakeClock struct {
	now, tscHz, readCost, ioCost uint64
	refHz, refStart              uint64
	bits                         uint
	reads                        int
	stopAfter                    int    // the counter stops after this many reads (0: never)
	stopped                      uint64 // its value from then on
	constant                     *uint64
	backAt                       int // at this read it jumps back by 1000 ticks (0: never)
	pitEnd                       uint64
	pitNever, pitAtOnce          bool
	stallAt, stall               uint64 // one TSC read at this time takes stall cycles more
	stallPeriod                  uint64 // and again every stallPeriod cycles (0: once)
	stalled                      bool
	startStall                   uint64 // the next PIT start takes this many cycles more (an SMI in it)
}

func (c *fakeClock) tsc() uint64 {
	c.now += c.readCost
	if !c.stalled && c.stallAt != 0 && c.now >= c.stallAt {
		c.stalled = true
		c.now += c.stall
		if c.stallPeriod != 0 {
			c.stalled, c.stallAt = false, c.stallAt+c.stallPeriod
		}
	}
	return c.now
}

func (c *fakeClock) ref() uint64 {
	c.now += c.ioCost
	c.reads++
	mask := uint64(1)<<c.bits - 1
	if c.constant != nil {
		return *c.constant & mask
	}
	if c.stopAfter != 0 && c.reads > c.stopAfter {
		return c.stopped
	}
	hi, lo := bits.Mul64(c.now, c.refHz)
	v, _ := bits.Div64(hi, lo, c.tscHz)
	v += c.refStart
	if c.backAt != 0 && c.reads >= c.backAt {
		v -= 1000
	}
	v &= mask
	c.stopped = v
	return v
}

func (c *fakeClock) counter() RefCounter {
	return RefCounter{Read: c.ref, Hz: c.refHz, Bits: c.bits}
}

func (c *fakeClock) calibrator() Calibrator { return Calibrator{TSC: c.tsc, Bound: CalBound} }

func (c *fakeClock) pit() PIT8254 {
	return PIT8254{
		Start: func(count uint16) {
			c.now += c.startStall
			c.startStall = 0
			c.pitEnd = c.now + uint64(count)*c.tscHz/PITHzForTest
		},
		Out2: func() bool {
			c.now += c.ioCost
			switch {
			case c.pitAtOnce:
				return true
			case c.pitNever:
				return false
			}
			return c.now >= c.pitEnd
		},
		Hz: PITHzForTest,
	}
}

// PITHzForTest is the 8254's input clock (board.PITHz).
const PITHzForTest = 1193182

func newFakeClock(tscHz uint64, bits uint, start uint64) *fakeClock {
	return &fakeClock{tscHz: tscHz, readCost: 30, ioCost: 1500, refHz: 3_579_545, refStart: start, bits: bits}
}

// TestCalibrateAgainstPMTimer: half a second of a 24-bit and a 32-bit PM
// timer, across a wrap, gives the TSC rate within 10 ppm.
func TestCalibrateAgainstPMTimer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clock *fakeClock
	}{
		{"24-bit, across a wrap", newFakeClock(2_095_999_435, 24, 1<<24-1000)},
		{"32-bit", newFakeClock(3_392_300_000, 32, 12345)},
		{"Bochs-like 50 MHz instruction counter", newFakeClock(50_000_000, 24, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.clock
			hz, e := c.calibrator().Against(c.counter(), 3_579_545/2)
			require.Equal(t, CalOK, e, e.String())
			assert.InDelta(t, 0, PPM(hz, c.tscHz), 10, "got %d Hz, want %d", hz, c.tscHz)
			assert.GreaterOrEqual(t, c.now, c.tscHz/2, "the window lasted half a second")
		})
	}
}

// TestCalibrateFailures: a counter that never moves, that stops in the
// window, or that steps back ends the calibration with an error, within
// the TSC bound, never a hang.
func TestCalibrateFailures(t *testing.T) {
	const hz = 3_000_000_000
	allOnes := uint64(0xffffffff) // an absent I/O port reads all ones
	for _, tc := range []struct {
		name  string
		setup func(c *fakeClock)
		want  CalError
	}{
		{"absent port", func(c *fakeClock) { c.constant = &allOnes }, CalStuck},
		{"stops in the window", func(c *fakeClock) { c.stopAfter = 50_000 }, CalTimeout},
		{"steps back", func(c *fakeClock) { c.backAt = 20_000 }, CalBackwards},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeClock(hz, 24, 0)
			tc.setup(c)
			got, e := c.calibrator().Against(c.counter(), 3_579_545/2)
			assert.Equal(t, tc.want, e, e.String())
			assert.Zero(t, got)
			assert.LessOrEqual(t, c.now, uint64(CalBound+CalBound/4), "ended within the TSC bound")
		})
	}
	var c fakeClock
	_, e := c.calibrator().Against(RefCounter{}, 100)
	assert.Equal(t, CalNoCounter, e)
}

// TestCalibrateAgainstPIT: 50 ms of PIT channel 2 gives the TSC rate within
// 100 ppm; an OUT2 that never rises ends at the TSC bound, one that is
// high at once or a stall in the middle is refused.
func TestCalibrateAgainstPIT(t *testing.T) {
	const hz = 2_400_000_000
	c := newFakeClock(hz, 24, 0)
	got, e := c.calibrator().AgainstPIT(c.pit(), 50)
	require.Equal(t, CalOK, e, e.String())
	assert.InDelta(t, 0, PPM(got, hz), 100, "got %d Hz", got)

	c = newFakeClock(hz, 24, 0)
	c.pitNever = true
	_, e = c.calibrator().AgainstPIT(c.pit(), 50)
	assert.Equal(t, CalTimeout, e)
	assert.LessOrEqual(t, c.now, uint64(CalBound+CalBound/4))

	c = newFakeClock(hz, 24, 0)
	c.pitAtOnce = true
	_, e = c.calibrator().AgainstPIT(c.pit(), 50)
	assert.Equal(t, CalStuck, e)

	c = newFakeClock(hz, 24, 0)
	c.stallAt, c.stall = hz/100, hz/100 // 10 ms lost in the middle (an SMI)
	_, e = c.calibrator().AgainstPIT(c.pit(), 50)
	assert.Equal(t, CalDisturbed, e)

	_, e = c.calibrator().AgainstPIT(c.pit(), 60)
	assert.Equal(t, CalImplausible, e, "60 ms does not fit the 16-bit count")
}

// TestCalibratePITRetries: an attempt an SMI disturbed (in its loop or in
// its start) is run again, at most three times in all, and the retries
// are counted; an attempt that timed out is not retried.
func TestCalibratePITRetries(t *testing.T) {
	const hz = 2_400_000_000
	c := newFakeClock(hz, 24, 0)
	got, e, retries := c.calibrator().CalibratePIT(c.pit(), 50)
	require.Equal(t, CalOK, e, e.String())
	assert.Zero(t, retries, "undisturbed: the first attempt")
	assert.InDelta(t, 0, PPM(got, hz), 100, "got %d Hz", got)

	c = newFakeClock(hz, 24, 0)
	c.stallAt, c.stall = hz/100, hz/1000 // 1 ms lost 10 ms into the first attempt
	got, e, retries = c.calibrator().CalibratePIT(c.pit(), 50)
	require.Equal(t, CalOK, e, e.String())
	assert.Equal(t, 1, retries)
	assert.InDelta(t, 0, PPM(got, hz), 100, "the second attempt's figure: got %d Hz", got)

	c = newFakeClock(hz, 24, 0)
	c.startStall = hz / 1000 // 1 ms in the first start: the count began late
	_, e = c.calibrator().AgainstPIT(c.pit(), 50)
	assert.Equal(t, CalDisturbed, e, "a disturbed start")
	got, e, retries = c.calibrator().CalibratePIT(c.pit(), 50)
	require.Equal(t, CalOK, e, e.String())
	assert.Zero(t, retries, "the next start is clean")
	assert.InDelta(t, 0, PPM(got, hz), 100, "got %d Hz", got)

	c = newFakeClock(hz, 24, 0)
	c.stallAt, c.stall, c.stallPeriod = hz/100, hz/1000, hz*3/100 // every 30 ms: each attempt hit
	got, e, retries = c.calibrator().CalibratePIT(c.pit(), 50)
	assert.Equal(t, CalDisturbed, e)
	assert.Zero(t, got)
	assert.Equal(t, 2, retries, "three attempts in all")

	c = newFakeClock(hz, 24, 0)
	c.pitNever = true
	_, e, retries = c.calibrator().CalibratePIT(c.pit(), 50)
	assert.Equal(t, CalTimeout, e)
	assert.Zero(t, retries, "a timeout is not retried")
	assert.LessOrEqual(t, c.now, uint64(CalBound+CalBound/4))

	c = newFakeClock(hz, 24, 0)
	c.pitAtOnce = true
	_, e, retries = c.calibrator().CalibratePIT(c.pit(), 50)
	assert.Equal(t, CalStuck, e)
	assert.Equal(t, 2, retries, "OUT2 high at once, as after a massive SMI: retried")
}

// TestBracket: the tightest of five brackets is kept, and a reference
// read whose every bracket is SMIThreshold cycles or longer (an SMI in
// each) is refused.
func TestBracket(t *testing.T) {
	var now uint64
	costs := []uint64{SMIThreshold * 2, 900, SMIThreshold, 400, 700} // the ref read's cost in each bracket
	i := 0
	tsc := func() uint64 { return now }
	ref := func() uint64 {
		now += costs[i%len(costs)]
		i++
		return uint64(i)
	}
	mid, v, ok := bracket(tsc, tsc, ref)
	assert.True(t, ok)
	assert.Equal(t, uint64(4), v, "the fourth read, 400 cycles")
	before := SMIThreshold*3 + 900 // the first three brackets
	assert.Equal(t, uint64(before+200), mid, "the middle of its bracket")

	now, i = 0, 0
	costs = []uint64{SMIThreshold, SMIThreshold + 1, 3 * SMIThreshold, SMIThreshold, SMIThreshold}
	_, _, ok = bracket(tsc, tsc, ref)
	assert.False(t, ok, "an SMI in every bracket")
}

// TestCalibrateDisturbedEnd: a reference whose every read at the end of
// the window takes longer than SMIThreshold gives no figure.
func TestCalibrateDisturbedEnd(t *testing.T) {
	c := newFakeClock(2_000_000_000, 24, 0)
	window := uint64(3_579_545 / 2)
	slow := RefCounter{Hz: c.refHz, Bits: c.bits, Read: func() uint64 {
		v := c.ref()
		if c.now > c.tscHz/2 { // the window has passed: each read now stalls
			c.now += 2 * SMIThreshold
		}
		return v
	}}
	_, e := c.calibrator().Against(slow, window)
	assert.Equal(t, CalDisturbed, e)
}

// counterAt is a second counter of the same simulated machine: hz,
// width bits wide, starting at start, each read costing cost cycles (an
// HPET's MMIO read).
func (c *fakeClock) counterAt(hz uint64, width uint, start, cost uint64) RefCounter {
	return RefCounter{Hz: hz, Bits: width, Read: func() uint64 {
		c.now += cost
		hi, lo := bits.Mul64(c.now, hz)
		v, _ := bits.Div64(hi, lo, c.tscHz)
		return (v + start) & (1<<width - 1)
	}}
}

// TestCalibrateTogether: the PM timer and an HPET measured over the same
// half second each give the TSC rate within 10 ppm, a 32-bit HPET
// wrapping in the window included.
func TestCalibrateTogether(t *testing.T) {
	t.Run("Intel PCH, 14.31818 MHz, about to wrap", func(t *testing.T) { checkTogether(t, 3_392_300_000, 69_841_279, 1<<32-5000) })
	t.Run("QEMU, 100 MHz", func(t *testing.T) { checkTogether(t, 2_095_999_435, 10_000_000, 0) })
	t.Run("100 ps: 32 bits wrap in 0.43 s", func(t *testing.T) { checkTogether(t, 3_000_000_000, HPETMinPeriodFs, 1<<31) })
}

// checkTogether measures a TSC at hz against a 24-bit PM timer about to
// wrap and an HPET of periodFs starting at start, over one window.
func checkTogether(t *testing.T, hz uint64, periodFs uint32, start uint64) {
	c := newFakeClock(hz, 24, 1<<24-1000)
	h := HPETCounter(periodFs)
	hp := c.counterAt(h.Hz, h.Bits, start, 500)
	var out [2]Measurement
	c.calibrator().Together([]RefCounter{c.counter(), hp}, 2, out[:])
	for i, name := range []string{"PM timer", "HPET"} {
		require.Equal(t, CalOK, out[i].Err, "%s: %s", name, out[i].Err)
		assert.InDelta(t, 0, PPM(out[i].Hz, hz), 10, "%s: got %d Hz, want %d", name, out[i].Hz, hz)
	}
	assert.GreaterOrEqual(t, c.now, hz/2, "the window lasted half a second")
	assert.Less(t, c.now, hz*6/10, "one window for both")
}

// TestCalibrateTogetherFailures: a reference that fails leaves the
// other's figure alone; the HPET leads the window where the PM timer
// drops out.
func TestCalibrateTogetherFailures(t *testing.T) {
	const hz = 3_000_000_000
	hpetHz := HPETCounter(69_841_279).Hz

	// A halted HPET (its counter constant): the PM timer's figure alone.
	c := newFakeClock(hz, 24, 0)
	halted := RefCounter{Hz: hpetHz, Bits: 32, Read: func() uint64 { c.now += 500; return 1234 }}
	var out [2]Measurement
	c.calibrator().Together([]RefCounter{c.counter(), halted}, 2, out[:])
	assert.Equal(t, CalStuck, out[1].Err)
	assert.Zero(t, out[1].Hz)
	require.Equal(t, CalOK, out[0].Err, out[0].Err.String())
	assert.InDelta(t, 0, PPM(out[0].Hz, hz), 10)

	// The PM timer steps back mid-window: the HPET's figure, its window
	// half a second all the same.
	c = newFakeClock(hz, 24, 0)
	c.backAt = 200_000
	out = [2]Measurement{}
	c.calibrator().Together([]RefCounter{c.counter(), c.counterAt(hpetHz, 32, 0, 500)}, 2, out[:])
	assert.Equal(t, CalBackwards, out[0].Err)
	require.Equal(t, CalOK, out[1].Err, out[1].Err.String())
	assert.InDelta(t, 0, PPM(out[1].Hz, hz), 10)
	assert.GreaterOrEqual(t, c.now, uint64(hz/2))

	// No PM timer, no HPET.
	out = [2]Measurement{}
	c.calibrator().Together([]RefCounter{{}, {}}, 2, out[:])
	assert.Equal(t, [2]Measurement{{Err: CalNoCounter}, {Err: CalNoCounter}}, out)

	// Both stop in the window: both time out, within the TSC bound.
	c = newFakeClock(hz, 24, 0)
	c.stopAfter = 100_000
	stops := c.counter()
	c2 := stops
	out = [2]Measurement{}
	c.calibrator().Together([]RefCounter{stops, c2}, 2, out[:])
	assert.Equal(t, [2]Measurement{{Err: CalTimeout}, {Err: CalTimeout}}, out)
	assert.LessOrEqual(t, c.now, uint64(CalBound+CalBound/4))
}

// TestMeasure: the PIT is measured only where neither the PM timer nor
// the HPET gave a figure.
func TestMeasure(t *testing.T) {
	const hz = 2_400_000_000
	hpetHz := HPETCounter(69_841_279).Hz
	c := newFakeClock(hz, 24, 0)
	started := 0
	pit := c.pit()
	start := pit.Start
	pit.Start = func(n uint16) { started++; start(n) }
	m := c.calibrator().Measure(c.counter(), c.counterAt(hpetHz, 32, 0, 500), pit, 50)
	assert.InDelta(t, 0, PPM(m.PM.Hz, hz), 10)
	assert.InDelta(t, 0, PPM(m.HPET.Hz, hz), 10)
	assert.Equal(t, Measurement{Err: CalNotTried}, m.PIT)
	assert.Zero(t, started, "the PIT left alone")

	m = c.calibrator().Measure(RefCounter{}, c.counterAt(hpetHz, 32, 0, 500), pit, 50)
	assert.Equal(t, CalNoCounter, m.PM.Err)
	assert.InDelta(t, 0, PPM(m.HPET.Hz, hz), 10)
	assert.Zero(t, started, "the HPET's figure is enough")

	m = c.calibrator().Measure(RefCounter{}, RefCounter{}, pit, 50)
	assert.Equal(t, CalNoCounter, m.HPET.Err)
	require.Equal(t, CalOK, m.PIT.Err, m.PIT.Err.String())
	assert.InDelta(t, 0, PPM(m.PIT.Hz, hz), 100)
	assert.Equal(t, 1, started)
	assert.Zero(t, m.PITRetries)
}
