package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
)

// withCounters runs the test with SetCounters(src), restoring the
// counters of a CPU without the MSRs afterwards.
func withCounters(t *testing.T, src cpustate.SampleSources) {
	t.Helper()
	SetCounters(src)
	t.Cleanup(func() { SetCounters(0) })
}

// The NMI count is always read, even on a CPU with neither MSR.
func TestSetCountersNMI(t *testing.T) {
	withCounters(t, 0)
	assert.Equal(t, cpustate.SampleNMI, counters)
	SetCounters(cpustate.SampleAPERF | cpustate.SampleSMI)
	assert.Equal(t, cpustate.SampleAPERF|cpustate.SampleSMI|cpustate.SampleNMI, counters)
}

// Without APERF/MPERF and MSR_SMI_COUNT (QEMU, Bochs), NMIs alone mark
// repeats: 2 NMIs in the second of 4 repeats disturb it, the headline is
// over the other 3; core clock and SMIs stay unsupported.
func TestDisturbDeltasNMIOnly(t *testing.T) {
	withCounters(t, 0)
	perOp := []float64{100, 700, 100, 100}
	deltas := []cpustate.Sample{{}, {NMI: 2}, {}, {}}
	d := DisturbDeltas(perOp, deltas, SampledRepeat, 1)
	assert.Equal(t, uint64(2), d.NMIs)
	assert.Zero(t, d.SMIs)
	assert.Equal(t, 1, d.Disturbed)
	assert.Equal(t, 3, d.Undisturbed.N)
	assert.Equal(t, 100.0, d.Undisturbed.Mean)
	assert.Zero(t, d.Ratio, "no core clock")
	assert.Equal(t, contract.Core{
		CoreClock: "unsupported", SMICount: "unsupported", NMIs: 2, Disturbed: 1, DisturbedRepeats: []int{1}, Sampled: "repeat",
		Undisturbed: &contract.Spread{N: 3, Mean: 100, Median: 100, Min: 100, Max: 100}, Headline: "undisturbed",
		PMU: &contract.PMUCounts{Unsupported: pmuNow.reason},
	}, d.CoreRecord(1_000_000_000))

	calm := DisturbDeltas(perOp, []cpustate.Sample{{}, {}, {}, {}}, SampledRepeat, 1)
	assert.Zero(t, calm.Disturbed)
	assert.Equal(t, "all", calm.CoreRecord(1_000_000_000).Headline)
}

// With every counter: an SMI in one repeat, NMIs in another and both in a
// third disturb 3 of 5 repeats, each counted once; the SMIs and NMIs are
// summed apart.
func TestDisturbDeltasSMIAndNMI(t *testing.T) {
	withCounters(t, cpustate.SampleAPERF|cpustate.SampleSMI)
	perOp := []float64{100, 200, 300, 400, 100}
	clock := cpustate.Sample{APERF: 50, MPERF: 100}
	deltas := make([]cpustate.Sample, 5)
	for i := range deltas {
		deltas[i] = clock
	}
	deltas[1].SMI = 1
	deltas[2].NMI = 1
	deltas[3].SMI, deltas[3].NMI = 1, 4
	d := DisturbDeltas(perOp, deltas, SampledRepeat, 1)
	assert.Equal(t, uint64(2), d.SMIs)
	assert.Equal(t, uint64(5), d.NMIs)
	assert.Equal(t, 3, d.Disturbed)
	assert.Equal(t, 2, d.Undisturbed.N)
	assert.Equal(t, "all", d.headline(), "fewer than half undisturbed")
	c := d.CoreRecord(3_400_000_000)
	assert.Equal(t, "msr", c.SMICount)
	assert.Equal(t, uint64(2), c.SMIs)
	assert.Equal(t, uint64(5), c.NMIs)
	assert.Equal(t, 3, c.Disturbed)
	assert.Equal(t, 1700.0, c.CoreMHz)
	assert.Equal(t, 110.0, c.CoreMean, "the mean 220 TSC cycles at half the clock")
	assert.Equal(t, []int{1, 2, 3}, c.DisturbedRepeats, "the repeats an SMI or an NMI disturbed, by index")
	assert.Nil(t, c.RepeatMHz, "every repeat at the figure's clock: core_mhz holds for each")
	deltas[4] = cpustate.Sample{APERF: 60, MPERF: 100}
	strays := DisturbDeltas(perOp, deltas, SampledRepeat, 1).CoreRecord(3_400_000_000)
	assert.Equal(t, []float64{1700, 1700, 1700, 1700, 2040}, strays.RepeatMHz, "a repeat at another clock: each repeat's own")

	// Read around all repeats at once: no repeat can be told apart.
	run := DisturbDeltas(perOp, deltas[:1], sampledRun, 5)
	rc := run.CoreRecord(3_400_000_000)
	assert.Nil(t, rc.DisturbedRepeats)
	assert.Nil(t, rc.RepeatMHz)
}

// Sampled around the whole loop (the 32-bit phases), one NMI marks every
// repeat.
func TestDisturbDeltasNMIPerRun(t *testing.T) {
	withCounters(t, 0)
	d := DisturbDeltas([]float64{1, 2, 3}, []cpustate.Sample{{NMI: 1}}, sampledRun, 1)
	assert.Equal(t, uint64(1), d.NMIs)
	assert.Equal(t, 3, d.Disturbed)
	assert.Zero(t, d.Undisturbed.N)
	c := d.CoreRecord(1)
	assert.Equal(t, "run", c.Sampled)
	assert.Nil(t, c.Undisturbed)
	assert.Equal(t, "all", c.Headline)
}
