package cpustate

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestScanGaps: steps of 10 ticks with two interruptions, one of 500
// ticks and one of 40 (under the threshold of 50): the scan sees the
// longest step and counts the one over the threshold, and stops once the
// span has passed.
func TestScanGaps(t *testing.T) {
	now := uint64(1000)
	reads := 0
	tsc := func() uint64 {
		reads++
		switch reads {
		case 20:
			now += 500
		case 40:
			now += 40
		default:
			now += 10
		}
		return now
	}
	g := ScanGaps(tsc, 2000, 50)
	assert.Equal(t, uint64(500), g.Max)
	assert.Equal(t, uint64(1), g.Over)
	assert.Equal(t, uint64(500), g.OverTicks)
	assert.GreaterOrEqual(t, g.Span, uint64(2000))
	assert.Less(t, g.Span, uint64(2000+10))
	assert.Equal(t, uint64(reads-1), g.Reads, "every read after the first is a step")
	// 2000 ticks: 500 + 40 + 10 for each other step.
	assert.Equal(t, uint64(2000-500-40)/10+2, g.Reads)
}
