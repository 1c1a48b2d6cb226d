package tlb

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
)

// TestKernelTextSplitOnceThenFlush follows the kernel text's pages through
// Setup and two runs on the fake Go kernel (2 MiB pages from 2 MiB to 8
// MiB), text at [3 MiB + 8 KiB, 5 MiB - 4 KiB): Setup splits the two 2
// MiB pages that hold it and invalidates all their 4 KiB pages, with no G
// bit changed; a run with global pages changes the G bit of the text pages
// only, each followed by its INVLPG, and splits nothing; the same setting
// again changes and invalidates nothing; global off clears them with their
// INVLPGs.
func TestKernelTextSplitOnceThenFlush(t *testing.T) {
	_, pt := kernelTable(t)
	start, end := uint64(3<<20+8<<10), uint64(5<<20-4<<10)
	var flushed []uintptr
	invlpg := func(va uintptr) { flushed = append(flushed, va) }
	tables := func() int { n := 0; pt.Walk(func(amd64.Mapping) { n++ }); return n }

	require.NoError(t, splitForText(pt, start, end, invlpg))
	require.Len(t, flushed, 2*512, "every 4 KiB page of both 2 MiB pages")
	assert.Equal(t, uintptr(2<<20), flushed[0])
	assert.Equal(t, uintptr(6<<20-4<<10), flushed[len(flushed)-1])
	for va := uint64(2 << 20); va < 6<<20; va += amd64.PageSize {
		pte := pt.PTE(va, false)
		require.NotNil(t, pte, "%#x split", va)
		assert.Equal(t, va|amd64.PTE_P|amd64.PTE_W, *pte&^(amd64.PTE_A|amd64.PTE_D), "%#x: same translation and attributes", va)
	}
	mappings := tables()

	flushed = nil
	require.NoError(t, setGlobal(pt, start, end, true, invlpg))
	pages := int((end - start) / amd64.PageSize)
	require.Len(t, flushed, pages, "one INVLPG per changed page")
	for i, va := range flushed {
		assert.Equal(t, uintptr(start)+uintptr(i)*amd64.PageSize, va)
		assert.NotZero(t, *pt.PTE(uint64(va), false)&amd64.PTE_G)
	}
	assert.Zero(t, *pt.PTE(start-amd64.PageSize, false)&amd64.PTE_G, "the page below the text stays non-global")
	assert.Zero(t, *pt.PTE(end, false)&amd64.PTE_G, "the page above the text stays non-global")
	assert.Greater(t, tables(), mappings, "the global text is a run of its own in the walk")

	flushed = nil
	require.NoError(t, setGlobal(pt, start, end, true, invlpg))
	assert.Empty(t, flushed, "nothing changed, nothing invalidated")

	require.NoError(t, setGlobal(pt, start, end, false, invlpg))
	assert.Len(t, flushed, pages)
	assert.Equal(t, mappings, tables(), "back to the split table's runs")

	// A text page still in a 2 MiB page: setGlobal refuses, it does not
	// split a live page.
	err := setGlobal(pt, 7<<20, 7<<20+amd64.PageSize, true, invlpg)
	assert.ErrorContains(t, err, "not mapped by a 4 KiB page")
}
