package efiimage

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBaseRelocBlocksEmpty(t *testing.T) {
	assert.Empty(t, BaseRelocBlocks(nil))
	assert.Empty(t, BaseRelocBlocks([]uint32{}))
}

func TestBaseRelocBlocksOneEntryPadded(t *testing.T) {
	// One entry in page 0x1000: header (8) + entry (2) + padding (2) = 12.
	want := []byte{
		0x00, 0x10, 0x00, 0x00, // PageRVA 0x1000
		0x0c, 0x00, 0x00, 0x00, // BlockSize 12
		0x08, 0xa0, // DIR64 | 0x008
		0x00, 0x00, // ABSOLUTE padding
	}
	assert.Equal(t, want, BaseRelocBlocks([]uint32{0x1008}))
}

func TestBaseRelocBlocksSeveralPages(t *testing.T) {
	// Unsorted input spanning three pages: two entries in 0x2000 (even, no
	// padding), three in 0x5000 (odd, padded), one at the very end of
	// 0x10000 (odd, padded).
	in := []uint32{0x5ff8, 0x2010, 0x10ff8, 0x5000, 0x2000, 0x5abc}
	orig := append([]uint32(nil), in...)
	want := []byte{
		0x00, 0x20, 0x00, 0x00, 0x0c, 0x00, 0x00, 0x00, // page 0x2000, 12 bytes
		0x00, 0xa0, 0x10, 0xa0, // 0x000, 0x010
		0x00, 0x50, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, // page 0x5000, 16 bytes
		0x00, 0xa0, 0xbc, 0xaa, 0xf8, 0xaf, 0x00, 0x00, // 0x000, 0xabc, 0xff8, pad
		0x00, 0x00, 0x01, 0x00, 0x0c, 0x00, 0x00, 0x00, // page 0x10000, 12 bytes
		0xf8, 0xaf, 0x00, 0x00, // 0xff8, pad
	}
	assert.Equal(t, want, BaseRelocBlocks(in))
	assert.Equal(t, orig, in, "input must not be modified")
}

func TestBaseRelocBlocksFullPage(t *testing.T) {
	// 512 quadwords fill a page: one block of 8 + 1024 bytes, no padding.
	var in []uint32
	for off := uint32(0); off < pageSize; off += 8 {
		in = append(in, 0x7000+off)
	}
	got := BaseRelocBlocks(in)
	if assert.Len(t, got, 8+2*512) {
		assert.Equal(t, []byte{0x00, 0x70, 0x00, 0x00, 0x08, 0x04, 0x00, 0x00}, got[:8])
		assert.Equal(t, []byte{0xf8, 0xaf}, got[len(got)-2:])
	}
	assert.Equal(t, decodeBlocks(t, got), in)
}
