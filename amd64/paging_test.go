package amd64

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/testkit/hosttables"
)

// fakeMem is a TableMemory over Go memory: tables live in a map keyed by a
// fake physical address, handed out from 0x1000 upwards in 4 KiB steps.
type fakeMem = hosttables.Memory[Table]

// fakeMemBase is the fake physical address of a fakeMem's first table.
const fakeMemBase = 0x1000

// newPT returns a page table in a fakeMem that hands out at most limit
// tables (< 0: no limit), its root the first table.
func newPT(t *testing.T, limit int) (PageTable[*fakeMem], *fakeMem) {
	t.Helper()
	pt, mem := hosttables.NewPageTable(t, fakeMemBase, limit, New[*fakeMem])
	require.Equal(t, uint64(fakeMemBase), pt.Root)
	return pt, mem
}

func TestNewExhausted(t *testing.T) {
	_, ok := New(hosttables.New[Table](t, fakeMemBase, 0))
	assert.False(t, ok)
}

func TestIndexAndLevelSize(t *testing.T) {
	va := uint64(0xffff_8123_4567_89ab)
	assert.Equal(t, int(va>>39&511), index(va, LevelPML4))
	assert.Equal(t, int(va>>30&511), index(va, LevelPDPT))
	assert.Equal(t, int(va>>21&511), index(va, LevelPD))
	assert.Equal(t, int(va>>12&511), index(va, LevelPT))
	assert.Equal(t, uint64(PageSize), levelSize(LevelPT))
	assert.Equal(t, uint64(PageSize2M), levelSize(LevelPD))
	assert.Equal(t, uint64(PageSize1G), levelSize(LevelPDPT))
	assert.Equal(t, uint64(512<<30), levelSize(LevelPML4))
}

func TestMapPageSizes(t *testing.T) {
	tests := []struct {
		name     string
		va, pa   uint64
		size     uint64
		pageSize uint64
		flags    uint64
		level    int
		tables   int // tables allocated, root included
	}{
		{"4K", 0x0000_0000_0040_0000, 0x0000_0000_1234_5000, 3 * PageSize, PageSize, PTE_W, LevelPT, 4},
		{"4K upper half", 0xffff_ffff_8000_0000, 0x0000_0000_0100_0000, PageSize, PageSize, PTE_W | PTE_G | PTE_NX, LevelPT, 4},
		{"2M", 0x0000_0000_0060_0000, 0x0000_0001_0000_0000, 2 * PageSize2M, PageSize2M, PTE_W | PTE_NX, LevelPD, 3},
		{"1G", 0x0000_0080_0000_0000, 0x0000_0004_0000_0000, 2 * PageSize1G, PageSize1G, PTE_U, LevelPDPT, 2},
		{"1G upper half", 0xffff_8880_0000_0000, 0, PageSize1G, PageSize1G, PTE_W | PTE_G, LevelPDPT, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt, mem := newPT(t, -1)
			require.True(t, pt.Map(tt.va, tt.pa, tt.size, tt.pageSize, tt.flags))
			assert.Len(t, mem.Tables, tt.tables)

			wantFlags := tt.flags | PTE_P
			if tt.pageSize != PageSize {
				wantFlags |= PTE_PS
			}
			for off := uint64(0); off < tt.size; off += tt.pageSize {
				pte, level := pt.Lookup(tt.va + off)
				require.Equal(t, tt.level, level, "level at +%#x", off)
				assert.Equal(t, (tt.pa+off)|wantFlags, pte, "entry at +%#x", off)
				assert.Equal(t, wantFlags, pte&PTEFlags)

				// Translate anywhere inside the page, including its last byte.
				for _, in := range []uint64{0, 8, tt.pageSize / 3 &^ 7, tt.pageSize - 1} {
					pa, ok := pt.Translate(tt.va + off + in)
					require.True(t, ok)
					assert.Equal(t, fmt.Sprintf("%#x", tt.pa+off+in), fmt.Sprintf("%#x", pa))
				}
			}
			// Just past the range is not mapped.
			_, level := pt.Lookup(tt.va + tt.size)
			assert.Equal(t, 0, level)
			_, ok := pt.Translate(tt.va + tt.size)
			assert.False(t, ok)
			if tt.va >= tt.pageSize {
				_, ok = pt.Translate(tt.va - 1)
				assert.False(t, ok)
			}
		})
	}
}

// Every non-leaf entry is P|W|U and points at a table; the leaf alone
// carries the access rights.
func TestIntermediateEntryFlags(t *testing.T) {
	tests := []struct {
		name     string
		pageSize uint64
		leaf     int
	}{
		{"4K", PageSize, LevelPT},
		{"2M", PageSize2M, LevelPD},
		{"1G", PageSize1G, LevelPDPT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt, mem := newPT(t, -1)
			va := uint64(0xffff_8000_4000_0000) // all indices non-zero but PT
			require.True(t, pt.Map(va, 0, tt.pageSize, tt.pageSize, PTE_NX|PTE_G))
			tb := mem.Table(pt.Root)
			for l := LevelPML4; l > tt.leaf; l-- {
				e := tb[index(va, l)]
				assert.Equal(t, uint64(PTE_P|PTE_W|PTE_U), e&PTEFlags, "level %d entry flags", l)
				assert.Equal(t, uint64(PTE_P|PTE_W|PTE_U), e&^PTE_ADDR, "level %d: no other bits", l)
				_, ok := mem.Tables[e&PTE_ADDR]
				require.True(t, ok, "level %d entry points at a table", l)
				tb = mem.Table(e & PTE_ADDR)
			}
			leaf := tb[index(va, tt.leaf)]
			assert.Equal(t, tt.pageSize != PageSize, leaf&PTE_PS != 0, "PS on the leaf")
			assert.NotZero(t, leaf&PTE_NX)
			assert.NotZero(t, leaf&PTE_G)
			assert.Zero(t, leaf&(PTE_W|PTE_U))
		})
	}
}

// Tables are shared between mappings that have a common prefix.
func TestMapSharesTables(t *testing.T) {
	pt, mem := newPT(t, -1)
	require.True(t, pt.Map(0x1000, 0x1000, PageSize, PageSize, 0))
	require.Len(t, mem.Tables, 4)
	require.True(t, pt.Map(0x1ff000, 0x9000, PageSize, PageSize, 0)) // same PT
	assert.Len(t, mem.Tables, 4)
	require.True(t, pt.Map(0x200000, 0xa000, PageSize, PageSize, 0)) // next PT
	assert.Len(t, mem.Tables, 5)
	require.True(t, pt.Map(0x4000_0000, 0xb000, PageSize, PageSize, 0)) // next PD
	assert.Len(t, mem.Tables, 7)
	// Remapping replaces the entry in place.
	require.True(t, pt.Map(0x1000, 0x5000, PageSize, PageSize, PTE_W))
	assert.Len(t, mem.Tables, 7)
	pte, _ := pt.Lookup(0x1000)
	assert.Equal(t, uint64(0x5000|PTE_P|PTE_W), pte)
}

func TestMapOverLargePageFails(t *testing.T) {
	tests := []struct {
		name            string
		largeVA, largeP uint64
		largeSize       uint64
		va, pageSize    uint64
	}{
		{"4K in 2M", 0x20_0000, PageSize2M, PageSize2M, 0x20_1000, PageSize},
		{"4K in 1G", 0x4000_0000, PageSize1G, PageSize1G, 0x4000_1000, PageSize},
		{"2M in 1G", 0x4000_0000, PageSize1G, PageSize1G, 0x4020_0000, PageSize2M},
		{"4K at start of 2M", 0x20_0000, PageSize2M, PageSize2M, 0x20_0000, PageSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt, mem := newPT(t, -1)
			require.True(t, pt.Map(tt.largeVA, 0x8000_0000, tt.largeSize, tt.largeP, PTE_W))
			before := len(mem.Tables)
			assert.False(t, pt.Map(tt.va, 0x1234_0000&^(tt.pageSize-1), tt.pageSize, tt.pageSize, PTE_W))
			assert.Len(t, mem.Tables, before, "no table allocated")
			// The large page is untouched.
			pa, ok := pt.Translate(tt.va)
			require.True(t, ok)
			assert.Equal(t, 0x8000_0000+tt.va-tt.largeVA, pa)
			_, level := pt.Lookup(tt.va)
			assert.Equal(t, map[uint64]int{PageSize2M: LevelPD, PageSize1G: LevelPDPT}[tt.largeP], level)
			// PTE refuses too, with or without create.
			assert.Nil(t, pt.PTE(tt.va, true))
			assert.Nil(t, pt.PTE(tt.va, false))
		})
	}
}

func TestLookupUnmapped(t *testing.T) {
	pt, _ := newPT(t, -1)
	for _, va := range []uint64{0, 0x1000, 0x7fff_ffff_f000, 0xffff_8000_0000_0000, 0xffff_ffff_ffff_f000} {
		pte, level := pt.Lookup(va)
		assert.Zero(t, pte)
		assert.Zero(t, level)
		_, ok := pt.Translate(va)
		assert.False(t, ok)
	}
	// A non-present leaf in an existing table is not mapped either.
	require.True(t, pt.Map(0x1000, 0x1000, PageSize, PageSize, 0))
	_, level := pt.Lookup(0x2000)
	assert.Zero(t, level)
}

func TestPTE(t *testing.T) {
	pt, mem := newPT(t, -1)
	va := uint64(0x0000_7f00_1234_5000)

	// create=false on missing tables: nil, and nothing allocated.
	assert.Nil(t, pt.PTE(va, false))
	assert.Len(t, mem.Tables, 1)

	// create=true builds PDPT, PD and PT.
	p := pt.PTE(va, true)
	require.NotNil(t, p)
	assert.Len(t, mem.Tables, 4)
	assert.Zero(t, *p)
	*p = 0xabcd_e000 | PTE_P | PTE_W
	pa, ok := pt.Translate(va + 0x123)
	require.True(t, ok)
	assert.Equal(t, uint64(0xabcd_e123), pa)

	// The same entry again, without create.
	assert.Same(t, p, pt.PTE(va, false))
	// A neighbour in the same PT exists even though it is not present.
	q := pt.PTE(va+PageSize, false)
	require.NotNil(t, q)
	assert.Zero(t, *q)
	// A different PD: missing without create.
	assert.Nil(t, pt.PTE(va+PageSize2M, false))
	assert.Len(t, mem.Tables, 4)
}

func TestPTECreateExhausted(t *testing.T) {
	pt, mem := newPT(t, 2) // root and one more
	assert.Nil(t, pt.PTE(0x1000, true))
	assert.Len(t, mem.Tables, 2)
	// The partial path is left consistent: the PDPT is linked, the rest is
	// missing, nothing maps.
	_, level := pt.Lookup(0x1000)
	assert.Zero(t, level)
	assert.Nil(t, pt.PTE(0x1000, false))
}

// TestMapExhausted: a page needs a table at each level down to its own,
// the root included; with any of them missing Map fails and maps nothing.
func TestMapExhausted(t *testing.T) {
	tests := []struct {
		name     string
		pageSize uint64
		tables   int // root included
	}{
		{"4K", PageSize, 4},
		{"2M", PageSize2M, 3},
		{"1G", PageSize1G, 2},
	}
	for _, tt := range tests {
		for limit := 1; limit <= tt.tables; limit++ {
			name := tt.name + " fits"
			if limit < tt.tables {
				name = tt.name + " no " + [...]string{"PDPT", "PD", "PT"}[limit-1]
			}
			t.Run(name, func(t *testing.T) {
				pt, _ := newPT(t, limit)
				fits := limit == tt.tables
				assert.Equal(t, fits, pt.Map(0, 0x4000_0000, tt.pageSize, tt.pageSize, PTE_W))
				_, ok := pt.Translate(0)
				assert.Equal(t, fits, ok)
			})
		}
	}

	// A range that needs a second PT when none is left: the first 2 MiB
	// are mapped, Map reports failure.
	pt, _ := newPT(t, 4)
	assert.False(t, pt.Map(0x1f_f000, 0x10_0000, 2*PageSize, PageSize, 0))
	_, ok := pt.Translate(0x1f_f000)
	assert.True(t, ok)
	_, ok = pt.Translate(0x20_0000)
	assert.False(t, ok)
}

func TestSplit(t *testing.T) {
	pt, mem := newPT(t, -1)
	va := uint64(0xffff_8000_0060_0000)
	pa := uint64(0x1_0000_0000)
	flags := uint64(PTE_W | PTE_G | PTE_NX | PTE_PCD)
	require.True(t, pt.Map(va, pa, PageSize2M, PageSize2M, flags))
	walkBefore := hosttables.Walked(pt.Walk)
	before := len(mem.Tables)

	require.True(t, pt.Split(va+0x12345))
	require.Len(t, mem.Tables, before+1)

	// The PDE now points at a table, with table flags.
	pde := pt.entry(va, LevelPD, false)
	require.NotNil(t, pde)
	assert.Zero(t, *pde&PTE_PS)
	assert.Equal(t, uint64(PTE_P|PTE_W|PTE_U), *pde&^PTE_ADDR)

	for i := uint64(0); i < 512; i++ {
		v := va + i*PageSize
		pte, level := pt.Lookup(v)
		require.Equal(t, LevelPT, level, "page %d", i)
		assert.Equal(t, (pa+i*PageSize)|flags|PTE_P, pte, "page %d", i)
		got, ok := pt.Translate(v + 0x7ff)
		require.True(t, ok)
		assert.Equal(t, pa+i*PageSize+0x7ff, got)
	}
	// Walk sees the same mapping as before.
	assert.Equal(t, walkBefore, hosttables.Walked(pt.Walk))

	// Splitting again does nothing: the range is already 4 KiB pages.
	assert.True(t, pt.Split(va))
	assert.Len(t, mem.Tables, before+1)
	// Neither does splitting an unmapped address or a 1 GiB page.
	assert.True(t, pt.Split(0x1000))
	require.True(t, pt.Map(0x4000_0000, 0, PageSize1G, PageSize1G, 0))
	n := len(mem.Tables)
	assert.True(t, pt.Split(0x4020_0000))
	assert.Len(t, mem.Tables, n)
	_, level := pt.Lookup(0x4020_0000)
	assert.Equal(t, LevelPDPT, level)
}

// TestSplitMovesPAT checks that the PAT bit of a 2 MiB page (bit 12) becomes
// the PAT bit of each 4 KiB page (bit 7) (SDM Vol. 3A, Tables 4-18, 4-20).
func TestSplitMovesPAT(t *testing.T) {
	pt, _ := newPT(t, -1)
	require.True(t, pt.Map(0x20_0000, 0x40_0000, PageSize2M, PageSize2M, PTE_W|PTE_PAT_LARGE))
	require.True(t, pt.Split(0x20_0000))
	for i := uint64(0); i < 512; i += 511 {
		pte, level := pt.Lookup(0x20_0000 + i*PageSize)
		require.Equal(t, LevelPT, level)
		assert.Equal(t, (0x40_0000+i*PageSize)|PTE_P|PTE_W|PTE_PAT, pte, "page %d", i)
	}
}

func TestSplitExhausted(t *testing.T) {
	pt, mem := newPT(t, 3)
	require.True(t, pt.Map(0x20_0000, 0x4000_0000, PageSize2M, PageSize2M, PTE_W))
	require.Len(t, mem.Tables, 3)
	assert.False(t, pt.Split(0x20_0000))
	// The 2 MiB page is still there.
	pte, level := pt.Lookup(0x20_1000)
	assert.Equal(t, LevelPD, level)
	assert.Equal(t, uint64(0x4000_0000|PTE_P|PTE_W|PTE_PS), pte)
}

func TestWalk(t *testing.T) {
	const rw = PTE_P | PTE_W
	type mapping struct{ va, pa, size, pageSize, flags uint64 }
	tests := []struct {
		name  string
		maps  []mapping
		touch func(pt *PageTable[*fakeMem]) // optional change after mapping
		want  []Mapping
	}{
		{
			name: "empty",
			want: nil,
		},
		{
			name: "one run of 4K pages",
			maps: []mapping{{0x40_0000, 0x1000_0000, 4 * PageSize, PageSize, PTE_W}},
			want: []Mapping{{0x40_0000, 0x1000_0000, 4 * PageSize, rw}},
		},
		{
			name: "two calls, contiguous, equal flags: merged",
			maps: []mapping{
				{0x40_0000, 0x1000_0000, 2 * PageSize, PageSize, PTE_W},
				{0x40_2000, 0x1000_2000, 2 * PageSize, PageSize, PTE_W},
			},
			want: []Mapping{{0x40_0000, 0x1000_0000, 4 * PageSize, rw}},
		},
		{
			name: "flag change splits the run",
			maps: []mapping{
				{0x40_0000, 0x1000_0000, 2 * PageSize, PageSize, PTE_W},
				{0x40_2000, 0x1000_2000, 1 * PageSize, PageSize, PTE_W | PTE_NX},
				{0x40_3000, 0x1000_3000, 1 * PageSize, PageSize, PTE_W},
			},
			want: []Mapping{
				{0x40_0000, 0x1000_0000, 2 * PageSize, rw},
				{0x40_2000, 0x1000_2000, PageSize, rw | PTE_NX},
				{0x40_3000, 0x1000_3000, PageSize, rw},
			},
		},
		{
			name: "runs across table boundaries and page sizes merge",
			maps: []mapping{
				{0x1f_e000, 0x3f_e000, 2 * PageSize, PageSize, PTE_W},
				{0x20_0000, 0x40_0000, PageSize2M, PageSize2M, PTE_W},
				{0x40_0000, 0x60_0000, PageSize, PageSize, PTE_W},
			},
			want: []Mapping{{0x1f_e000, 0x3f_e000, 2*PageSize + PageSize2M + PageSize, rw}},
		},
		{
			name: "1G pages, PS not reported",
			maps: []mapping{{0x4000_0000, 0x8000_0000, 2 * PageSize1G, PageSize1G, PTE_G}},
			want: []Mapping{{0x4000_0000, 0x8000_0000, 2 * PageSize1G, PTE_P | PTE_G}},
		},
		{
			name: "accessed and dirty bits ignored",
			maps: []mapping{{0x40_0000, 0x1000_0000, 3 * PageSize, PageSize, PTE_W}},
			touch: func(pt *PageTable[*fakeMem]) {
				*pt.PTE(0x40_1000, false) |= PTE_A | PTE_D
			},
			want: []Mapping{{0x40_0000, 0x1000_0000, 3 * PageSize, rw}},
		},
		{
			name: "not-present entry ends the run",
			maps: []mapping{{0x40_0000, 0x1000_0000, 3 * PageSize, PageSize, PTE_W}},
			touch: func(pt *PageTable[*fakeMem]) {
				*pt.PTE(0x40_1000, false) &^= PTE_P
			},
			want: []Mapping{
				{0x40_0000, 0x1000_0000, PageSize, rw},
				{0x40_2000, 0x1000_2000, PageSize, rw},
			},
		},
		{
			name: "upper half sign-extended and after the lower half",
			maps: []mapping{
				{0xffff_ffff_8000_0000, 0x20_0000, 2 * PageSize2M, PageSize2M, PTE_W | PTE_G},
				{0xffff_8000_0000_0000, 0, PageSize1G, PageSize1G, PTE_W | PTE_NX},
				{0x0000_7fff_ffff_f000, 0x5000, PageSize, PageSize, PTE_U},
			},
			want: []Mapping{
				{0x0000_7fff_ffff_f000, 0x5000, PageSize, PTE_P | PTE_U},
				{0xffff_8000_0000_0000, 0, PageSize1G, rw | PTE_NX},
				{0xffff_ffff_8000_0000, 0x20_0000, 2 * PageSize2M, rw | PTE_G},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt, _ := newPT(t, -1)
			for _, m := range tt.maps {
				require.True(t, pt.Map(m.va, m.pa, m.size, m.pageSize, m.flags))
			}
			if tt.touch != nil {
				tt.touch(&pt)
			}
			got := hosttables.Walked(pt.Walk)
			assert.Equal(t, tt.want, got)
			for _, m := range got {
				assert.Zero(t, m.Flags&(PTE_PS|PTE_A|PTE_D), "flags %#x", m.Flags)
			}
		})
	}
}

// TestWalkUnmerged: two writable 4 KiB pages mapped one by one that are
// not contiguous in both spaces, or that straddle the non-canonical hole,
// are two runs, each as mapped.
func TestWalkUnmerged(t *testing.T) {
	tests := []struct {
		name   string
		va, pa [2]uint64
	}{
		{"physical discontinuity splits the run", [2]uint64{0x40_0000, 0x40_1000}, [2]uint64{0x1000_0000, 0x2000_0000}},
		{"virtual gap splits the run", [2]uint64{0x40_0000, 0x40_2000}, [2]uint64{0x1000_0000, 0x1000_1000}},
		{"lower half top and upper half bottom are not merged", [2]uint64{0x0000_7fff_ffff_f000, 0xffff_8000_0000_0000}, [2]uint64{0x10_0000, 0x10_1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt, _ := newPT(t, -1)
			var want []Mapping
			for i := range tt.va {
				require.True(t, pt.Map(tt.va[i], tt.pa[i], PageSize, PageSize, PTE_W))
				want = append(want, Mapping{tt.va[i], tt.pa[i], PageSize, PTE_P | PTE_W})
			}
			assert.Equal(t, want, hosttables.Walked(pt.Walk))
		})
	}
}

func TestLeafBits(t *testing.T) {
	const flags = PTE_W | PTE_U | PTE_NX
	for _, c := range []struct {
		nx, global bool
		want       uint64
	}{
		{true, false, flags},
		{false, false, PTE_W | PTE_U},
		{true, true, flags | PTE_G},
		{false, true, PTE_W | PTE_U | PTE_G},
	} {
		mask, g := LeafBits(c.nx, c.global)
		assert.Equal(t, c.want, flags&mask|g, "nx %v global %v", c.nx, c.global)
	}
}
