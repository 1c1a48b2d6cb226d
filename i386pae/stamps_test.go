package i386pae

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/i386pae/layout"
)

// TestStampCost: a stamp's cost is the median of the calibration blocks'
// means, so that one block an SMI or an NMI hit does not move it; the
// sums' high words count.
func TestStampCost(t *testing.T) {
	var blocks [layout.StampCalBlocks][layout.PhaseCount][2]uint32
	for b := range blocks {
		blocks[b][layout.PhaseCopyIn] = [2]uint32{40 * layout.StampBlockCalls, 0}
		blocks[b][layout.PhaseCR3Out] = [2]uint32{uint32(30+b) * layout.StampBlockCalls, 0}
	}
	// An SMI of about 100 µs at 3 GHz in block 3: its mean goes up by
	// 2400 cycles a call, a mean over all blocks by 300.
	blocks[3][layout.PhaseCopyIn][0] += 300_000
	assert.Equal(t, 40.0, stampCost(&blocks, layout.PhaseCopyIn), "the disturbed block left out")
	assert.Equal(t, 33.5, stampCost(&blocks, layout.PhaseCR3Out), "the middle two blocks' mean (8 blocks)")
	assert.Zero(t, stampCost(&blocks, layout.PhaseCR3In))
	blocks[5][layout.PhaseDispatch] = [2]uint32{0, 1}
	blocks[6][layout.PhaseDispatch] = [2]uint32{0, 1}
	blocks[7][layout.PhaseDispatch] = [2]uint32{0, 1}
	blocks[4][layout.PhaseDispatch] = [2]uint32{0, 1}
	assert.Equal(t, float64(1<<32)/layout.StampBlockCalls/2, stampCost(&blocks, layout.PhaseDispatch), "the high word")
}
