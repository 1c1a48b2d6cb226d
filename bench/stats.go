package bench

import (
	"math"
	"sort"
)

// Stats summarizes repeated measurements of one quantity: the mean, the
// sample standard deviation, the median, the minimum and the maximum.
// PerfPct is the spread as `perf stat --repeat` prints it after "+-".
type Stats struct {
	N      int     // measurements
	Mean   float64 // arithmetic mean
	Stddev float64 // sample standard deviation (n-1)
	Median float64
	Min    float64
	Max    float64
	// Values are the measurements, in the order they were taken.
	Values []float64
}

// StddevPct is the standard deviation in percent of the mean (0 when the
// mean is 0).
func (s Stats) StddevPct() float64 {
	if s.Mean == 0 {
		return 0
	}
	return 100 * s.Stddev / math.Abs(s.Mean)
}

// PerfPct is the standard deviation of the mean (stddev/sqrt(n)) in
// percent of the mean: what `perf stat --repeat` prints as "+- x%"
// (tools/perf/util/stat.c, stddev_stats), so that ptilab's spread reads
// like the reference threads'.
func (s Stats) PerfPct() float64 {
	if s.N == 0 {
		return 0
	}
	return s.StddevPct() / math.Sqrt(float64(s.N))
}

// Summarize computes the Stats of xs (which it does not change).
func Summarize(xs []float64) Stats {
	n := len(xs)
	if n == 0 {
		return Stats{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	st := Stats{N: n, Min: s[0], Max: s[n-1], Values: append([]float64(nil), xs...)}
	if n%2 == 1 {
		st.Median = s[n/2]
	} else {
		st.Median = (s[n/2-1] + s[n/2]) / 2
	}
	for _, x := range s {
		st.Mean += x
	}
	st.Mean /= float64(n)
	if n > 1 {
		var ss float64
		for _, x := range s {
			ss += (x - st.Mean) * (x - st.Mean)
		}
		st.Stddev = math.Sqrt(ss / float64(n-1))
	}
	return st
}

// PerOp turns R repeats of cycle counts for n operations each into cycles
// per operation, less the overhead of one empty iteration: (c - n*empty)/n
// for each repeat c.
func PerOp(cycles []uint64, n int, empty float64) []float64 {
	out := make([]float64, len(cycles))
	for i, c := range cycles {
		out[i] = (float64(c) - float64(n)*empty) / float64(n)
	}
	return out
}
