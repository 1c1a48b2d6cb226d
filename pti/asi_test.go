package pti

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/testkit/hosttables"
)

// asiKernel is a kernel table shaped as goos's: an identity map with 4 KiB
// pages in the first 2 MiB and 2 MiB pages above, to 6 GiB (so that it
// spans PDPT entries 0 to 5 of PML4 slot 0), and a runtime page above it.
func asiKernel(t *testing.T, mem *hostMem) amd64.PageTable[*hostMem] {
	pt, ok := amd64.New[*hostMem](mem)
	require.True(t, ok)
	require.True(t, pt.Map(amd64.PageSize, amd64.PageSize, amd64.PageSize2M-amd64.PageSize, amd64.PageSize, amd64.PTE_W))
	require.True(t, pt.Map(amd64.PageSize2M, amd64.PageSize2M, 6<<30-amd64.PageSize2M, amd64.PageSize2M, amd64.PTE_W))
	require.True(t, pt.Map(8<<30, 0x9000, amd64.PageSize, amd64.PageSize, amd64.PTE_W|amd64.PTE_NX))
	return pt
}

// without returns ms with the 2 MiB blocks at blocks (identity-mapped)
// cut out.
func without(ms []amd64.Mapping, blocks ...uint64) []amd64.Mapping {
	var out []amd64.Mapping
	for _, m := range ms {
		cur := m
		for _, b := range blocks {
			if b >= cur.VA && b+SensitiveBlock <= cur.VA+cur.Size {
				if b > cur.VA {
					out = append(out, amd64.Mapping{VA: cur.VA, PA: cur.PA, Size: b - cur.VA, Flags: cur.Flags})
				}
				end := cur.VA + cur.Size
				cur = amd64.Mapping{VA: b + SensitiveBlock, PA: cur.PA + (b + SensitiveBlock - cur.VA), Size: end - b - SensitiveBlock, Flags: cur.Flags}
			}
		}
		if cur.Size > 0 {
			out = append(out, cur)
		}
	}
	return out
}

// The nonsensitive table maps what the kernel table maps but the
// sensitive blocks, takes private tables only on the blocks' paths (a PDPT
// per PML4 slot, a PD per GiB), leaves the kernel table as it was, and
// follows what the kernel maps later at the next sync, in the same tables.
func TestNonsensitive(t *testing.T) {
	mem := newHostMem(t)
	kernel := asiKernel(t, mem)
	before := walk(mem, kernel.Root)
	// Two blocks in one GiB, one in another, one above 4 GiB.
	blocks := []uint64{0x40000000, 0x40400000, 0x80200000, 0x140000000}
	var ns Nonsensitive
	n := len(mem.Tables)
	require.NoError(t, SyncNonsensitive(&ns, mem, kernel, blocks))
	assert.Equal(t, n+1+1+3, len(mem.Tables), "a PML4, a PDPT for slot 0, a PD for each of 3 GiBs")
	assert.Equal(t, before, walk(mem, kernel.Root), "the kernel table is left as it was")
	assert.Equal(t, without(before, blocks...), walk(mem, ns.Root))
	for _, b := range blocks {
		_, ok := (&amd64.PageTable[*hostMem]{Root: ns.Root, Mem: mem}).Translate(b + 0x1000)
		assert.False(t, ok, "block %#x", b)
	}

	// The runtime maps more in slot 0 (a new PDPT entry) and in a block's
	// GiB; the next sync has it, in the tables it already has.
	require.True(t, kernel.Map(7<<30, 0xa000, amd64.PageSize, amd64.PageSize, amd64.PTE_W|amd64.PTE_NX))
	n = len(mem.Tables)
	require.NoError(t, SyncNonsensitive(&ns, mem, kernel, blocks))
	assert.Equal(t, n, len(mem.Tables), "no new tables")
	assert.Equal(t, without(walk(mem, kernel.Root), blocks...), walk(mem, ns.Root))

	// A block fewer: mapped again.
	require.NoError(t, SyncNonsensitive(&ns, mem, kernel, blocks[1:]))
	assert.Equal(t, without(walk(mem, kernel.Root), blocks[1:]...), walk(mem, ns.Root))
}

func TestNonsensitiveErrors(t *testing.T) {
	mem := newHostMem(t)
	kernel := asiKernel(t, mem)
	var ns Nonsensitive
	assert.ErrorContains(t, SyncNonsensitive(&ns, mem, kernel, []uint64{0x40001000}), "not 2 MiB-aligned")
	assert.ErrorContains(t, SyncNonsensitive(&ns, mem, kernel, []uint64{1 << 39}), "PML4 entry 1: not present in the kernel table")
	assert.ErrorContains(t, SyncNonsensitive(&ns, mem, kernel, []uint64{7 << 30}), "PDPT entry 7: not present in the kernel table")
	huge, ok := amd64.New[*hostMem](mem)
	require.True(t, ok)
	require.True(t, huge.Map(0, 0, 1<<30, amd64.PageSize1G, amd64.PTE_W))
	assert.ErrorContains(t, SyncNonsensitive(&ns, mem, huge, []uint64{0x200000}), "a 1 GiB page in the kernel table")

	// Memory for the kernel's tables and the nonsensitive PML4 only.
	probe := newHostMem(t)
	asiKernel(t, probe)
	limited := hosttables.New[amd64.Table](t, 64<<20, len(probe.Tables)+1)
	var ns2 Nonsensitive
	assert.ErrorContains(t, SyncNonsensitive(&ns2, limited, asiKernel(t, limited), []uint64{0x40000000}), "out of memory for a private table")
}
