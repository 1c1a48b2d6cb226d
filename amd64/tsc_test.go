package amd64

import (
	"math/big"
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
