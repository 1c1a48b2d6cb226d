package bench

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSummarize(t *testing.T) {
	for _, c := range []struct {
		xs                                  []float64
		mean, stddev, median, min, max, pct float64
	}{
		{[]float64{5}, 5, 0, 5, 5, 5, 0},
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, math.Sqrt(32.0 / 7), 4.5, 2, 9, 100 * math.Sqrt(32.0/7) / 5},
		{[]float64{3, 1, 2}, 2, 1, 2, 1, 3, 50},
		{[]float64{-2, 2}, 0, math.Sqrt(8), 0, -2, 2, 0},
	} {
		in := append([]float64(nil), c.xs...)
		s := Summarize(c.xs)
		assert.Equal(t, len(c.xs), s.N)
		assert.InDelta(t, c.mean, s.Mean, 1e-12, "%v", c.xs)
		assert.InDelta(t, c.stddev, s.Stddev, 1e-12, "%v", c.xs)
		assert.InDelta(t, c.median, s.Median, 1e-12, "%v", c.xs)
		assert.Equal(t, c.min, s.Min)
		assert.Equal(t, c.max, s.Max)
		assert.InDelta(t, c.pct, s.StddevPct(), 1e-9, "%v", c.xs)
		assert.InDelta(t, c.pct/math.Sqrt(float64(len(c.xs))), s.PerfPct(), 1e-9, "%v: perf's +- is the stddev of the mean", c.xs)
		assert.Equal(t, in, c.xs, "Summarize leaves its input alone")
		assert.Equal(t, in, s.Values, "the measurements, in the order taken")
	}
	assert.Equal(t, Stats{}, Summarize(nil))
}

func TestPerOp(t *testing.T) {
	// 1000 operations in 25000 cycles with 3 cycles of loop per iteration:
	// 22 cycles each.
	assert.Equal(t, []float64{22, 23.5}, PerOp([]uint64{25000, 26500}, 1000, 3))
}
