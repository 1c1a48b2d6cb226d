package i386pae

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/testkit/hosttables"
)

// paeMem is a TableMemory over Go memory: tables keyed by a fake physical
// address, handed out upwards from 64 MiB (below 4 GiB, as the PAE tables
// must be).
type paeMem = hosttables.Memory[amd64.Table]

// newPAEMem returns a paeMem that hands out at most limit tables (< 0: no
// limit).
func newPAEMem(t *testing.T, limit int) *paeMem {
	return hosttables.New[amd64.Table](t, paeMemBase, limit)
}

// paeMemBase is the fake physical address of a paeMem's first table.
const paeMemBase = 64 << 20

// newPAE returns a page table in a paeMem that hands out at most limit
// tables (< 0: no limit).
func newPAE(t *testing.T, limit int) (PageTable[*paeMem], *paeMem) {
	t.Helper()
	return hosttables.NewPageTable(t, paeMemBase, limit, New[*paeMem])
}

func walkPAE(t *testing.T, pt *PageTable[*paeMem]) []amd64.Mapping {
	t.Helper()
	var ms []amd64.Mapping
	require.NoError(t, pt.Walk(func(m amd64.Mapping) { ms = append(ms, m) }))
	return ms
}

func TestNewExhausted(t *testing.T) {
	_, ok := New(newPAEMem(t, 0))
	assert.False(t, ok)
}

func TestIndices(t *testing.T) {
	va := uint32(0xff812345)
	assert.Equal(t, 3, pdptIndex(va))
	assert.Equal(t, 508, pdIndex(va))
	assert.Equal(t, 0x12, ptIndex(va))
	assert.Equal(t, 0, pdptIndex(0x3fffffff))
	assert.Equal(t, 511, pdIndex(0x3fffffff))
	assert.Equal(t, 511, ptIndex(0x3fffffff))
}

// The PDPTE bits of SDM Vol. 3A, Table 4-8.
func TestPDPTEBits(t *testing.T) {
	assert.Equal(t, uint64(0x8000_0000_0000_01e6), uint64(PDPTEReserved))
	for _, b := range []uint64{amd64.PTE_W, amd64.PTE_U, amd64.PTE_A, amd64.PTE_D, amd64.PTE_PS, amd64.PTE_G, amd64.PTE_NX} {
		assert.NotZero(t, PDPTEReserved&b, "%#x is reserved in a PAE PDPTE", b)
	}
	assert.Equal(t, uint64(amd64.PTE_P), uint64(PDPTE_P))
	assert.Equal(t, uint64(amd64.PTE_PWT), uint64(PDPTE_PWT))
	assert.Equal(t, uint64(amd64.PTE_PCD), uint64(PDPTE_PCD))
	assert.Zero(t, PDPTEReserved&(PDPTE_P|PDPTE_PWT|PDPTE_PCD))
}

func TestMapTranslate(t *testing.T) {
	pt, mem := newPAE(t, -1)
	const flags = amd64.PTE_W | amd64.PTE_U | amd64.PTE_NX
	require.True(t, pt.Map(0xbffff000, 0x1_2345_6000, 0x3000, flags), "across PDPTEs 2 and 3")

	for off := uint32(0); off < 0x3000; off += 0x1000 {
		pa, f, ok := pt.Translate(0xbffff000 + off + 0x123)
		require.True(t, ok)
		assert.Equal(t, 0x1_2345_6000+uint64(off)+0x123, pa)
		assert.Equal(t, uint64(flags|amd64.PTE_P), f)
	}
	for _, va := range []uint32{0, 0xbfffe000, 0xc0002000, 0xfffff000} {
		_, _, ok := pt.Translate(va)
		assert.False(t, ok, "%#x", va)
	}

	// PDPTEs carry only P; PDEs that reference PTs get P|W|U.
	pdpt := mem.Table(pt.PDPT)
	for i, e := range pdpt {
		switch i {
		case 2, 3:
			assert.Equal(t, uint64(PDPTE_P), e&^amd64.PTE_ADDR, "PDPTE %d", i)
			pd := mem.Table(e & amd64.PTE_ADDR)
			for j, pde := range pd {
				if pde != 0 {
					assert.Equal(t, uint64(amd64.PTE_P|amd64.PTE_W|amd64.PTE_U), pde&^amd64.PTE_ADDR, "PDE %d.%d", i, j)
				}
			}
		default:
			assert.Zero(t, e, "PDPTE %d", i)
		}
	}
	assert.Equal(t, []amd64.Mapping{
		{VA: 0xbffff000, PA: 0x1_2345_6000, Size: 0x3000, Flags: flags | amd64.PTE_P},
	}, walkPAE(t, &pt))
}

func TestMapRejects(t *testing.T) {
	pt, mem := newPAE(t, -1)
	tests := []struct {
		name string
		va   uint32
		pa   uint64
		size uint32
	}{
		{"va unaligned", 0x1001, 0x2000, 0x1000},
		{"pa unaligned", 0x1000, 0x2800, 0x1000},
		{"size unaligned", 0x1000, 0x2000, 0x800},
		{"past 4 GiB", 0xfffff000, 0x2000, 0x2000},
		{"pa beyond 52 bits", 0x1000, 1 << 52, 0x1000},
	}
	for _, tt := range tests {
		assert.False(t, pt.Map(tt.va, tt.pa, tt.size, 0), tt.name)
	}
	assert.Equal(t, 1, len(mem.Tables), "nothing allocated for a rejected range")
	assert.True(t, pt.Map(0xfffff000, 0x2000, 0x1000, 0), "the last page")
	assert.True(t, pt.Map(0x1000, 0x2000, 0, 0), "an empty range")
}

func TestMapExhausted(t *testing.T) {
	// PDPT and PD only: no table left for the PT.
	pt, _ := newPAE(t, 2)
	assert.False(t, pt.Map(0x400000, 0x1000, 0x1000, 0))
	_, _, ok := pt.Translate(0x400000)
	assert.False(t, ok)
}

// Walk merges runs contiguous in both spaces with equal flags, drops A and
// D, and reports 2 MiB PDEs (which Map does not make) as they are.
func TestWalk(t *testing.T) {
	pt, mem := newPAE(t, -1)
	require.True(t, pt.Map(0x400000, 0x10000, 0x2000, amd64.PTE_U))
	require.True(t, pt.Map(0x402000, 0x12000, 0x1000, amd64.PTE_U|amd64.PTE_A|amd64.PTE_D)) // merged: A/D not reported
	require.True(t, pt.Map(0x403000, 0x20000, 0x1000, amd64.PTE_U))                         // PA not contiguous
	require.True(t, pt.Map(0x404000, 0x21000, 0x1000, amd64.PTE_U|amd64.PTE_W))             // flags differ
	require.True(t, pt.Map(0x5ff000, 0x7ff000, 0x1000, amd64.PTE_G))                        // the last PTE of a PT
	pd := mem.Table(mem.Table(pt.PDPT)[0] & amd64.PTE_ADDR)
	pd[3] = 0x800000 | amd64.PTE_P | amd64.PTE_PS | amd64.PTE_G // 0x600000: a 2 MiB page, merged with the PTE before it

	assert.Equal(t, []amd64.Mapping{
		{VA: 0x400000, PA: 0x10000, Size: 0x3000, Flags: amd64.PTE_P | amd64.PTE_U},
		{VA: 0x403000, PA: 0x20000, Size: 0x1000, Flags: amd64.PTE_P | amd64.PTE_U},
		{VA: 0x404000, PA: 0x21000, Size: 0x1000, Flags: amd64.PTE_P | amd64.PTE_U | amd64.PTE_W},
		{VA: 0x5ff000, PA: 0x7ff000, Size: 0x201000, Flags: amd64.PTE_P | amd64.PTE_G},
	}, walkPAE(t, &pt))

	pa, f, ok := pt.Translate(0x612345)
	require.True(t, ok)
	assert.Equal(t, uint64(0x812345), pa)
	assert.Equal(t, uint64(amd64.PTE_P|amd64.PTE_G), f, "PS is not reported")
	assert.Nil(t, pt.pte(0x601000, true), "a 2 MiB page maps it")
	assert.False(t, pt.Map(0x601000, 0x1000, 0x1000, 0))
}

// Walk refuses a PDPT that MOV to CR3 would refuse, naming the entry.
func TestWalkBadPDPTE(t *testing.T) {
	tests := []struct {
		name  string
		entry int
		bits  uint64
		want  string
	}{
		{"R/W", 1, amd64.PTE_W, "PDPTE 1"},
		{"U/S", 3, amd64.PTE_U, "PDPTE 3"},
		{"A", 0, amd64.PTE_A, "PDPTE 0"},
		{"PS", 2, amd64.PTE_PS, "PDPTE 2"},
		{"G", 3, amd64.PTE_G, "PDPTE 3"},
		{"XD", 3, amd64.PTE_NX, "PDPTE 3"},
		{"bit 52", 3, 1 << 52, "PDPTE 3"},
		{"PD address unaligned", 3, 0x800, "not page aligned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt, mem := newPAE(t, -1)
			require.True(t, pt.Map(0x400000, 0x1000, 0x1000, 0))
			require.True(t, pt.Map(0xff800000, 0x2000, 0x1000, 0))
			require.True(t, pt.Map(0x40000000, 0x3000, 0x1000, 0))
			require.True(t, pt.Map(0x80000000, 0x4000, 0x1000, 0))
			mem.Table(pt.PDPT)[tt.entry] |= tt.bits
			called := false
			err := pt.Walk(func(amd64.Mapping) { called = true })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.False(t, called, "no mappings of a PDPT the CPU would not load")
		})
	}

	// Reserved bits count in a not-present PDPTE too; PWT and PCD are
	// allowed.
	pt, mem := newPAE(t, -1)
	mem.Table(pt.PDPT)[2] = amd64.PTE_W
	assert.ErrorContains(t, pt.Walk(func(amd64.Mapping) {}), "PDPTE 2")
	mem.Table(pt.PDPT)[2] = 0
	require.True(t, pt.Map(0x400000, 0x1000, 0x1000, 0))
	mem.Table(pt.PDPT)[0] |= PDPTE_PWT | PDPTE_PCD
	assert.NoError(t, pt.Walk(func(amd64.Mapping) {}))
}
