package goos

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
)

// withPool runs f with the frame pool over a Go buffer of mib MiB (the
// pool reaches frames by address, as the identity map lets it in the
// image) and no sensitive blocks, and puts both back afterwards.
func withPool(t *testing.T, mib int, f func(base uint64)) {
	buf := make([]byte, mib<<20)
	base := uint64(uintptr(unsafe.Pointer(&buf[0])))
	savedPool, savedSensitive := pool, sensitive
	t.Cleanup(func() { pool, sensitive = savedPool, savedSensitive })
	pool = framePool{}
	sensitive.n, sensitive.next, sensitive.end = 0, 0, 0
	require.True(t, pool.add((base+pageSize-1)&^(pageSize-1), base+uint64(len(buf))&^(pageSize-1)))
	f(base)
}

// Sensitive frames are carved from whole 2 MiB blocks that hold nothing
// else, consecutively; a request larger than the room left takes new
// blocks (contiguous); the blocks are listed as taken.
func TestAllocSensitiveFrames(t *testing.T) {
	withPool(t, 16, func(uint64) {
		other, ok := AllocFrames(1, pageSize) // an ordinary frame first
		require.True(t, ok)
		ring, ok := AllocSensitiveFrames(16)
		require.True(t, ok)
		assert.Zero(t, ring%amd64.PageSize2M, "the first block's start")
		assert.NotEqual(t, other&^(amd64.PageSize2M-1), ring, "not the ordinary frame's block")
		data, ok := AllocSensitiveFrames(4)
		require.True(t, ok)
		assert.Equal(t, ring+16*pageSize, data, "the same block")
		assert.Equal(t, []uint64{ring}, SensitiveBlocks())

		big, ok := AllocSensitiveFrames(600) // more than the 492 left, more than a block
		require.True(t, ok)
		assert.Zero(t, big%amd64.PageSize2M)
		assert.Equal(t, []uint64{ring, big, big + amd64.PageSize2M}, SensitiveBlocks())
		next, ok := AllocSensitiveFrames(1)
		require.True(t, ok)
		assert.Equal(t, big+600*pageSize, next, "the rest of the second run")
		for _, b := range SensitiveBlocks() {
			assert.False(t, other >= b && other < b+amd64.PageSize2M, "ordinary frame %#x in sensitive block %#x", other, b)
		}

		_, ok = AllocSensitiveFrames(0)
		assert.False(t, ok, "no frames")
		_, ok = AllocSensitiveFrames(16 << 20 / pageSize)
		assert.False(t, ok, "more than the pool")
	})
}
