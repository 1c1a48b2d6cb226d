package goos

import (
	"github.com/ptilab/ptilab/linuxabi"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	tLo = 0x100000000 // 4 GiB
	tHi = 0x7f0000000000
	mb  = 1 << 20
)

func newAS() *addressSpace {
	return &addressSpace{lo: tLo, hi: tHi}
}

// ranges lists the address space's ranges as {start, end, prot} triples.
func ranges(a *addressSpace) [][3]uint64 {
	var r [][3]uint64
	for i := 0; i < a.n; i++ {
		r = append(r, [3]uint64{a.v[i].start, a.v[i].end, uint64(a.v[i].prot)})
	}
	return r
}

func TestVMFindFreeHintAndTopDown(t *testing.T) {
	a := newAS()
	// A free, aligned hint is honoured.
	at, ok := a.findFree(0xc000000000, 64*mb)
	require.True(t, ok)
	assert.Equal(t, uint64(0xc000000000), at)
	require.True(t, a.insert(at, at+64*mb, linuxabi.PROT_NONE))

	// A hint that overlaps, is unaligned, or lies outside [lo, hi) is not:
	// the highest free range is used instead, as Linux's top-down allocator.
	for _, hint := range []uint64{0xc000000000 + mb, 0xc000000123, 0x1000, tHi} {
		at, ok = a.findFree(hint, 2*mb)
		require.True(t, ok)
		assert.Equal(t, uint64(tHi-2*mb), at, "hint %#x", hint)
	}
	require.True(t, a.insert(tHi-2*mb, tHi, linuxabi.PROT_READ|linuxabi.PROT_WRITE))
	at, ok = a.findFree(0, 4*mb)
	require.True(t, ok)
	assert.Equal(t, uint64(tHi-6*mb), at, "next range goes below the last")

	_, ok = a.findFree(0, tHi-tLo)
	assert.False(t, ok, "no room for the whole space")
}

func TestVMInsertMerges(t *testing.T) {
	a := newAS()
	rw := uint8(linuxabi.PROT_READ | linuxabi.PROT_WRITE)
	require.True(t, a.insert(tLo+0*mb, tLo+1*mb, rw))
	require.True(t, a.insert(tLo+2*mb, tLo+3*mb, rw))
	require.True(t, a.insert(tLo+1*mb, tLo+2*mb, rw)) // fills the gap: one range
	assert.Equal(t, [][3]uint64{{tLo, tLo + 3*mb, 3}}, ranges(a))
	require.True(t, a.insert(tLo+3*mb, tLo+4*mb, linuxabi.PROT_NONE)) // other protection: no merge
	assert.Equal(t, 2, a.n)
}

func TestVMRemoveSplits(t *testing.T) {
	a := newAS()
	require.True(t, a.insert(tLo, tLo+10*mb, linuxabi.PROT_NONE))
	require.True(t, a.remove(tLo+4*mb, tLo+6*mb)) // a hole in the middle
	assert.Equal(t, [][3]uint64{{tLo, tLo + 4*mb, 0}, {tLo + 6*mb, tLo + 10*mb, 0}}, ranges(a))
	require.True(t, a.remove(tLo+3*mb, tLo+7*mb)) // trims both sides
	assert.Equal(t, [][3]uint64{{tLo, tLo + 3*mb, 0}, {tLo + 7*mb, tLo + 10*mb, 0}}, ranges(a))
	require.True(t, a.remove(tLo, tLo+20*mb)) // everything
	assert.Equal(t, 0, a.n)
	require.True(t, a.remove(tLo, tLo+mb), "removing nothing is fine")
}

// TestVMRuntimePattern replays how the Go runtime uses mmap: reserve an
// arena with PROT_NONE, commit pieces of it read-write with MAP_FIXED,
// release some with madvise (no change here) and unmap the rest.
func TestVMRuntimePattern(t *testing.T) {
	a := newAS()
	const arena = 64 * mb
	base, ok := a.findFree(0xc000000000, arena)
	require.True(t, ok)
	require.True(t, a.insert(base, base+arena, linuxabi.PROT_NONE))
	rw := uint8(linuxabi.PROT_READ | linuxabi.PROT_WRITE)
	for _, c := range [][2]uint64{{0, 4 * mb}, {8 * mb, 12 * mb}, {4 * mb, 8 * mb}} {
		require.True(t, a.remove(base+c[0], base+c[1]))
		require.True(t, a.insert(base+c[0], base+c[1], rw))
	}
	assert.Equal(t, [][3]uint64{{base, base + 12*mb, 3}, {base + 12*mb, base + arena, 0}}, ranges(a))
	all, acc := a.reserved()
	assert.Equal(t, uint64(arena), all)
	assert.Equal(t, uint64(12*mb), acc)

	i, ok := a.lookup(base + 5*mb)
	require.True(t, ok)
	assert.Equal(t, rw, a.v[i].prot)
	_, ok = a.lookup(base + arena)
	assert.False(t, ok)
	assert.True(t, a.covered(base, base+arena))
	assert.False(t, a.covered(base, base+arena+1))
}

func TestVMProtect(t *testing.T) {
	a := newAS()
	require.True(t, a.insert(tLo, tLo+4*mb, linuxabi.PROT_READ|linuxabi.PROT_WRITE))
	require.True(t, a.protect(tLo+mb, tLo+2*mb, linuxabi.PROT_READ))
	assert.Equal(t, [][3]uint64{{tLo, tLo + mb, 3}, {tLo + mb, tLo + 2*mb, 1}, {tLo + 2*mb, tLo + 4*mb, 3}}, ranges(a))
	assert.False(t, a.protect(tLo+3*mb, tLo+5*mb, linuxabi.PROT_READ), "part of the range is not mapped")
	require.True(t, a.protect(tLo+mb, tLo+2*mb, linuxabi.PROT_READ|linuxabi.PROT_WRITE))
	assert.Equal(t, [][3]uint64{{tLo, tLo + 4*mb, 3}}, ranges(a), "merged back")
}

func TestVMTableFull(t *testing.T) {
	a := newAS()
	// Alternate protections so that nothing merges; the last range is three
	// pages long.
	for i := uint64(0); i < maxVMAs-1; i++ {
		require.True(t, a.insert(tLo+i*2*pageSize, tLo+i*2*pageSize+pageSize, uint8(i%2)))
	}
	last := uint64(tHi - 3*pageSize)
	require.True(t, a.insert(last, tHi, linuxabi.PROT_READ))
	require.Equal(t, maxVMAs, a.n)
	assert.False(t, a.insert(tHi-8*pageSize, tHi-7*pageSize, linuxabi.PROT_EXEC), "no room for another range")
	before := ranges(a)
	assert.False(t, a.remove(last+pageSize, last+2*pageSize), "a split needs a free entry")
	assert.Equal(t, before, ranges(a), "a failed remove changes nothing")
	assert.False(t, a.protect(last+pageSize, last+2*pageSize, linuxabi.PROT_NONE))
	assert.Equal(t, before, ranges(a), "a failed protect changes nothing")
	require.True(t, a.remove(last, tHi), "removing a whole range needs no entry")
}
