package amd64

import (
	"math/big"
	"math/bits"
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var tscFreqs = []struct {
	name string
	hz   uint64
}{
	{"1GHz", 1_000_000_000},
	{"2.0959GHz", 2_095_900_000},
	{"3.4GHz", 3_400_000_000},
	{"19.2MHz", 19_200_000},
}

// mulDiv returns floor(a*b/c) computed exactly.
func mulDiv(a, b, c uint64) *big.Int {
	r := new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b))
	return r.Quo(r, new(big.Int).SetUint64(c))
}

// within reports whether got is within tol of the exact value want.
func within(got uint64, want *big.Int, tol uint64) bool {
	d := new(big.Int).Sub(new(big.Int).SetUint64(got), want)
	d.Abs(d)
	return d.Cmp(new(big.Int).SetUint64(tol)) <= 0
}

func TestNewTSCClockFactors(t *testing.T) {
	for _, f := range tscFreqs {
		t.Run(f.name, func(t *testing.T) {
			c := NewTSCClock(f.hz)
			assert.Equal(t, f.hz, c.Hz)
			assert.Equal(t, mulDiv(1<<32, 1e9, f.hz).Uint64(), c.nsMult)
			assert.Equal(t, mulDiv(1<<32, f.hz, 1e9).Uint64(), c.cycMult)
		})
	}
	// At 1 GHz both factors are exactly 1.0 in 32.32.
	c := NewTSCClock(1e9)
	assert.Equal(t, uint64(1<<32), c.nsMult)
	assert.Equal(t, uint64(1<<32), c.cycMult)
}

// Known values, up to 2^32 units, convert within 1 of the exact floor.
func TestTSCClockKnownValues(t *testing.T) {
	for _, f := range tscFreqs {
		t.Run(f.name, func(t *testing.T) {
			c := NewTSCClock(f.hz)
			cycles := []uint64{0, 1, 2, 3, 1000, f.hz / 1000, f.hz / 30, f.hz, 123_456_789, 1 << 31, 1 << 32}
			for _, n := range cycles {
				want := mulDiv(n, 1e9, f.hz)
				got := c.Nanoseconds(n)
				assert.True(t, within(got, want, 1), "Nanoseconds(%d) = %d, want %s", n, got, want)
				assert.LessOrEqual(t, got, want.Uint64(), "rounds down")
			}
			nss := []uint64{0, 1, 2, 1000, 1_000_000, 10_000_000, 999_999_999, 1_000_000_000, 1 << 32}
			for _, n := range nss {
				want := mulDiv(n, f.hz, 1e9)
				got := c.Cycles(n)
				assert.True(t, within(got, want, 1), "Cycles(%d) = %d, want %s", n, got, want)
				assert.LessOrEqual(t, got, want.Uint64(), "rounds down")
			}
		})
	}

	// Exact spot checks.
	assert.Equal(t, uint64(1_000_000_000), NewTSCClock(1e9).Nanoseconds(1e9))
	assert.Equal(t, uint64(52), NewTSCClock(19_200_000).Nanoseconds(1)) // 52.083 ns
	assert.Equal(t, uint64(123_456_789), NewTSCClock(1e9).Cycles(123_456_789))
	// 2^32 * 3.4 is 14602888806.4: the factor is short, the result rounds
	// down by one.
	assert.Equal(t, uint64(3_399_999), NewTSCClock(3_400_000_000).Cycles(1_000_000))
}

func TestTSCClockRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, f := range tscFreqs {
		t.Run(f.name, func(t *testing.T) {
			c := NewTSCClock(f.hz)
			// Each conversion rounds down and its factor is short by less
			// than 2^-32: below 2 units lost for values up to 2^32, which
			// the second conversion scales by the frequency ratio.
			cycTol := 2*(f.hz/1e9+1) + 2
			nsTol := 2*(1e9/f.hz+1) + 2
			for i := 0; i < 2000; i++ {
				n := rng.Uint64() >> 32
				back := c.Cycles(c.Nanoseconds(n))
				assert.LessOrEqual(t, back, n)
				assert.LessOrEqual(t, n-back, cycTol+n>>30, "cycles %d -> %d", n, back)

				back = c.Nanoseconds(c.Cycles(n))
				assert.LessOrEqual(t, back, n)
				assert.LessOrEqual(t, n-back, nsTol+n>>30, "ns %d -> %d", n, back)
			}
		})
	}
}

// 2^60 cycles (18 years at 2 GHz) converts without overflow; the error is
// the 32.32 factor's: below 2^-32 per unit converted, plus the rounding.
func TestTSCClockHuge(t *testing.T) {
	for _, f := range tscFreqs {
		t.Run(f.name, func(t *testing.T) {
			c := NewTSCClock(f.hz)
			n := uint64(1) << 60
			if f.hz < 1e9 {
				// Keep the result within uint64 nanoseconds: 2^58 cycles
				// at 19.2 MHz is 1.5e19 ns.
				n = 1 << 58
			}
			want := mulDiv(n, 1e9, f.hz)
			require.True(t, want.IsUint64())
			got := c.Nanoseconds(n)
			assert.True(t, within(got, want, n>>32+1), "Nanoseconds(%d) = %d, want %s", n, got, want)
			assert.InEpsilon(t, float64(want.Uint64()), float64(got), 1e-9)

			ns := uint64(1) << 60
			wantC := mulDiv(ns, f.hz, 1e9)
			gotC := c.Cycles(ns)
			assert.True(t, within(gotC, wantC, ns>>32+1), "Cycles(2^60) = %d, want %s", gotC, wantC)
		})
	}
}

func TestTSCClockMonotonic(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, f := range tscFreqs {
		t.Run(f.name, func(t *testing.T) {
			c := NewTSCClock(f.hz)
			xs := make([]uint64, 0, 3000)
			for i := uint64(0); i < 1000; i++ {
				xs = append(xs, i) // consecutive small values
			}
			for i := 0; i < 2000; i++ {
				xs = append(xs, rng.Uint64()>>6)
			}
			sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
			var prevNs, prevCyc uint64
			for _, x := range xs {
				ns, cyc := c.Nanoseconds(x), c.Cycles(x)
				require.GreaterOrEqual(t, ns, prevNs, "Nanoseconds(%d)", x)
				require.GreaterOrEqual(t, cyc, prevCyc, "Cycles(%d)", x)
				prevNs, prevCyc = ns, cyc
			}
		})
	}
}

// Real CPUID values of the reference parts and their neighbours.
var (
	// Core i7-3770 (Ivy Bridge, 06_3AH): the maximum basic leaf is 0DH,
	// no leaf 15H or 16H.
	ivyBridge = TSCLeaves{Intel: true, Family: 6, Model: 0x3a}
	// Core i5-8350U (Kaby Lake R, a Skylake-family client part, 06_8EH
	// stepping 10, CPUID.1:EAX 000806EAH): 15H EAX 2, EBX 158 (9EH), ECX
	// 0; 16H base 1900 MHz, maximum 3600 MHz, bus 100 MHz. Source: `cpuid
	// -1 --raw` of a Dell XPS 13 9370, posted by Paul Menzel to LKML on
	// 2022-08-23 ("Re: WARNING: CPU: 1 PID: 83 at
	// arch/x86/kernel/cpu/sgx/main.c:446"). The TSC runs at 24 MHz * 158
	// / 2 = 1896 MHz; 16H's base is 0.21% off.
	skylakeClient = TSCLeaves{Intel: true, Family: 6, Model: 0x8e, Has15: true, Has16: true,
		Leaf15: [3]uint32{2, 158, 0}, Leaf16: [3]uint32{1900, 3600, 100}}
	// Xeon Gold 6146 (Skylake server, 06_55H): 15H EAX 2, EBX 256
	// (100H), ECX 0, as posted in anrieff/libcpuid issue 124 (2022-07-13);
	// 25 MHz * 256 / 2 = 3200 MHz. That post gives no 16H: the one here is
	// the part's published base and maximum turbo (3200 and 4200 MHz),
	// only the sanity bound reads it.
	skylakeServer = TSCLeaves{Intel: true, Family: 6, Model: 0x55, Has15: true, Has16: true,
		Leaf15: [3]uint32{2, 256, 0}, Leaf16: [3]uint32{3200, 4200, 100}}
	// Core i9-7900X (Skylake-X, 06_55H stepping 4, the Xeon Scalable
	// die), AIDA64 dump in github.com/InstLatx64/InstLatx64
	// GenuineIntel/GenuineIntel0050654_SkylakeX_CPUID.txt: 15H EAX 2, EBX
	// 276 (114H), ECX 0; 16H 3300/4000/100 MHz. Its ratio fits a 24 MHz
	// crystal (3312 MHz); the table's 25 MHz for 06_55H gives 3450 MHz,
	// 4.5% above 16H's base.
	skylakeX = TSCLeaves{Intel: true, Family: 6, Model: 0x55, Has15: true, Has16: true,
		Leaf15: [3]uint32{2, 276, 0}, Leaf16: [3]uint32{3300, 4000, 100}}
	// A part that enumerates its crystal in 15H:ECX (38.4 MHz).
	enumerated = TSCLeaves{Intel: true, Family: 6, Model: 0x7e, Has15: true, Has16: true,
		Leaf15: [3]uint32{2, 62, 38_400_000}, Leaf16: [3]uint32{1200, 3900, 100}}
)

func TestTSCLeavesFrequency(t *testing.T) {
	f := ivyBridge.Frequency()
	assert.Equal(t, CPUIDFrequency{}, f, "Ivy Bridge: no CPUID figure, the PM timer gives it")

	f = skylakeClient.Frequency()
	assert.Equal(t, uint64(1_896_000_000), f.Hz)
	assert.Equal(t, TSCCrystalTable, f.Source)
	assert.Equal(t, uint64(24_000_000), f.CrystalHz)
	assert.Equal(t, uint64(1_900_000_000), f.BaseHz)
	assert.Equal(t, int64(-2105), PPM(f.Hz, f.BaseHz), "what taking 16H for the TSC frequency got wrong")

	f = skylakeServer.Frequency()
	assert.Equal(t, uint64(3_200_000_000), f.Hz)
	assert.Equal(t, uint64(25_000_000), f.CrystalHz)
	assert.Equal(t, TSCCrystalTable, f.Source)

	f = skylakeX.Frequency()
	assert.Zero(t, f.Hz, "25 MHz for a 24 MHz crystal: outside 16H's bound")
	assert.True(t, f.Rejected)

	f = enumerated.Frequency()
	assert.Equal(t, uint64(1_190_400_000), f.Hz)
	assert.Equal(t, TSCCPUID15H, f.Source)

	amd := skylakeClient
	amd.Intel = false
	assert.Zero(t, amd.Frequency().Hz, "the crystal table is Intel's")
	unknown := skylakeClient
	unknown.Model = 0x3c
	assert.Zero(t, unknown.Frequency().Hz, "a model the table does not list")
	no16 := skylakeClient
	no16.Has16, no16.Leaf16 = false, [3]uint32{}
	assert.Equal(t, uint64(1_896_000_000), no16.Frequency().Hz, "no 16H: no bound")
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

func TestChooseTSC(t *testing.T) {
	sky := skylakeClient.Frequency()
	// The PM timer's figure 30 ppm off: CPUID's is taken, both reported.
	c := ChooseTSC(sky, 1_895_945_000, TSCPMTimer)
	assert.Equal(t, uint64(1_896_000_000), c.Hz)
	assert.Equal(t, TSCCrystalTable, c.Source)
	assert.True(t, c.CrossCheck)
	assert.False(t, c.Disagree)
	assert.Equal(t, int64(29), c.PPM)
	assert.Equal(t, TSCPMTimer, c.Measured)

	// 2000 ppm apart: the measurement is taken.
	c = ChooseTSC(sky, 1_899_800_000, TSCPMTimer)
	assert.Equal(t, uint64(1_899_800_000), c.Hz)
	assert.Equal(t, TSCPMTimer, c.Source)
	assert.True(t, c.Disagree)
	assert.Equal(t, int64(-2000), c.PPM)

	// Ivy Bridge: the measurement alone.
	c = ChooseTSC(ivyBridge.Frequency(), 3_392_300_000, TSCPMTimer)
	assert.Equal(t, uint64(3_392_300_000), c.Hz)
	assert.Equal(t, TSCPMTimer, c.Source)
	assert.False(t, c.CrossCheck)

	// No measurement: CPUID alone, unchecked.
	c = ChooseTSC(sky, 0, TSCPIT)
	assert.Equal(t, uint64(1_896_000_000), c.Hz)
	assert.False(t, c.CrossCheck)
	assert.Equal(t, TSCNone, c.Measured)

	assert.Zero(t, ChooseTSC(ivyBridge.Frequency(), 0, TSCNone).Hz)
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
	stalled                      bool
}

func (c *fakeClock) tsc() uint64 {
	c.now += c.readCost
	if !c.stalled && c.stallAt != 0 && c.now >= c.stallAt {
		c.stalled = true
		c.now += c.stall
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
		Start: func(count uint16) { c.pitEnd = c.now + uint64(count)*c.tscHz/PITHzForTest },
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
		hz    uint64
		bits  uint
		start uint64
	}{
		{"24-bit, across a wrap", 2_095_999_435, 24, 1<<24 - 1000},
		{"32-bit", 3_392_300_000, 32, 12345},
		{"Bochs-like 50 MHz instruction counter", 50_000_000, 24, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeClock(tc.hz, tc.bits, tc.start)
			hz, e := c.calibrator().Against(c.counter(), 3_579_545/2)
			require.Equal(t, CalOK, e, e.String())
			assert.InDelta(t, 0, PPM(hz, tc.hz), 10, "got %d Hz, want %d", hz, tc.hz)
			assert.GreaterOrEqual(t, c.now, tc.hz/2, "the window lasted half a second")
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
