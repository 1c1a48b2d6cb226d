package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/cpustate"
)

// TestBaselineRecord: the baseline's figures from a scan and the
// counters around it, on a 2 GHz TSC: rates per second, microseconds,
// the core clock, and the warnings a PC gets (none under an emulator).
func TestBaselineRecord(t *testing.T) {
	hw := Clock{Hz: 2e9}
	second := cpustate.Gaps{Span: 2e9, Reads: 50e6, Max: 123_000, Over: 250, OverTicks: 250 * 100_000}
	all := cpustate.SampleAPERF | cpustate.SampleSMI | cpustate.SampleNMI

	t.Run("usb keyboard", func(t *testing.T) {
		b := baselineRecord(second, cpustate.Sample{APERF: 1.7e9, MPERF: 2e9, SMI: 250, NMI: 1}, all, hw)
		assert.Equal(t, 1000.0, b.Ms)
		assert.Equal(t, "msr", b.SMICount)
		assert.Equal(t, uint64(250), b.SMIs)
		assert.Equal(t, 250.0, b.SMIsPerS)
		assert.Equal(t, uint64(1), b.NMIs)
		assert.Equal(t, 61.5, b.MaxGapUs)
		assert.Equal(t, 250.0, b.GapsPerS)
		assert.Equal(t, 12500.0, b.GapTotalUs)
		assert.Equal(t, "aperf/mperf", b.CoreClock)
		assert.Equal(t, 1700.0, b.CoreMHz)
		require.Len(t, b.Warnings, 1)
		assert.Contains(t, b.Warnings[0], "250 SMIs a second: unplug USB keyboards and mice")
		lines := baselineLines(b)
		assert.Equal(t, "ptilab baseline: 1000 ms of TSC reads, interrupts masked: 250 SMIs (250.0/s) | 250 gaps over 10 µs (250.0/s, 12500.0 µs in all), longest 61.5 µs | 1 NMIs | core clock 1700 MHz", lines[0])
		assert.Equal(t, "ptilab baseline: WARNING: "+b.Warnings[0], lines[1])
	})
	t.Run("no SMI count", func(t *testing.T) {
		b := baselineRecord(second, cpustate.Sample{}, cpustate.SampleNMI, hw)
		assert.Equal(t, "unsupported", b.SMICount)
		assert.Equal(t, "unsupported", b.CoreClock)
		require.Len(t, b.Warnings, 1)
		assert.Contains(t, b.Warnings[0], "250 gaps over 10 µs a second (SMIs the SMI count does not show)")
	})
	t.Run("quiet", func(t *testing.T) {
		b := baselineRecord(cpustate.Gaps{Span: 2e9, Max: 2_000, Over: 1, OverTicks: 30_000}, cpustate.Sample{APERF: 2e9, MPERF: 2e9, SMI: 1}, all, hw)
		assert.Empty(t, b.Warnings)
		assert.Equal(t, 2000.0, b.CoreMHz)
	})
	t.Run("aperf not counting", func(t *testing.T) {
		b := baselineRecord(second, cpustate.Sample{SMI: 0}, all, Clock{Hz: 2e9})
		assert.Equal(t, "not counting", b.CoreClock)
		assert.Zero(t, b.CoreMHz)
		assert.Contains(t, b.Warnings, "APERF and MPERF read but did not advance over the scan: the figures carry no core clock")
	})
	t.Run("emulated", func(t *testing.T) {
		b := baselineRecord(second, cpustate.Sample{SMI: 250}, all, Clock{Hz: 2e9, Emulator: "bochs"})
		assert.True(t, b.Emulated)
		assert.Empty(t, b.Warnings, "the gaps are the host's")
		assert.Contains(t, baselineLines(b)[0], "(EMULATED: the gaps are the host's)")
	})
}
