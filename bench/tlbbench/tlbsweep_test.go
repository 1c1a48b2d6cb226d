package tlbbench

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/pti"
	"github.com/ptilab/ptilab/tlb"
)

// TestSweepExtra: a mode's extra over off is the difference of the means,
// absent when either did not measure.
func TestSweepExtra(t *testing.T) {
	off := bench.Measurement{Stats: bench.Stats{Mean: 120}}
	on := bench.Measurement{Stats: bench.Stats{Mean: 450.5}}
	e, ok := sweepExtra(&on, &off)
	assert.True(t, ok)
	assert.InDelta(t, 330.5, e, 1e-9)
	assert.InDelta(t, 450.5/120, bench.Ratio(&on, &off), 1e-9)
	_, ok = sweepExtra(&on, nil)
	assert.False(t, ok, "off did not run")
	unsup := bench.Measurement{Unsup: errors.New("PCID")}
	_, ok = sweepExtra(&unsup, &off)
	assert.False(t, ok)
	failed := bench.Measurement{Failure: errors.New("fault")}
	_, ok = sweepExtra(&on, &failed)
	assert.False(t, ok)
}

// TestSweepWorldOf: the user sweeps call getppid and touch in ring 3
// (the block's Pages from Base, a page apart); the kernel sweep calls the
// touch call with its pages, first page and stride in RDI, RSI, RDX and
// touches nothing in ring 3.
func TestSweepWorldOf(t *testing.T) {
	w := sweepWorldOf(sweepUser2M, 16)
	assert.Equal(t, uint64(linuxabi.SYS_getppid), w.nr)
	assert.Equal(t, tlb.SweepBlock{Pages: 16, Base: pti.SweepUser2M, Stride: 2 << 20}, w.block)
	w = sweepWorldOf(sweepKernel4K, 256)
	assert.Equal(t, uint64(linuxabi.SYS_ptilab_touch), w.nr)
	assert.Equal(t, tlb.SweepBlock{Arg0: 256, Arg1: tlb.SweepKernel4K, Arg2: 4096}, w.block)
	assert.Equal(t, uint64(pti.SysTouch), w.nr)
	// The regions: 4096 pages each, in the user slot (the 4 KiB one ends
	// before the 2 MiB one) and in the kernel slot of the upper half.
	assert.Less(t, uint64(pti.SweepUser4K+tlb.SweepMaxPages*4096), uint64(pti.SweepUser2M))
	assert.Equal(t, uint64(pti.UserPML4Slot), uint64(pti.SweepUser2M+tlb.SweepMaxPages<<21-1)>>39&511)
	assert.Equal(t, uint64(tlb.SweepKernelPML4Slot), uint64(tlb.SweepKernel4K)>>39&511)
	assert.Equal(t, 64, int(tlb.SweepLineMask/64)+1, "64 cache lines per page")
}
