package amd64

// 4-level paging (SDM Vol. 3A, 4.5): PML4 -> PDPT -> PD -> PT, 512 entries of
// 8 bytes per 4 KiB table.

// LeafBits returns what a table builder changes in its leaves' flags: the
// mask nxMask keeps PTE_NX only where the CPU has execute-disable (nx:
// EFER.NXE on; PTE_NX is reserved otherwise), and g is PTE_G where the
// pages are to be global (global, with CR4.PGE).
func LeafBits(nx, global bool) (nxMask, g uint64) {
	nxMask = ^uint64(0)
	if !nx {
		nxMask = ^uint64(PTE_NX)
	}
	if global {
		g = PTE_G
	}
	return nxMask, g
}

// VirtualAddressBits is the width of a linear address under 4-level
// paging: an address is canonical when bits 63 to VirtualAddressBits-1 are
// all equal (SDM Vol. 1, 3.3.7.1).
const VirtualAddressBits = 48

// Paging-entry bits (SDM Vol. 3A, 4.5, Tables 4-15 to 4-20).
const (
	PTE_P   = 1 << 0  // present
	PTE_W   = 1 << 1  // writable
	PTE_U   = 1 << 2  // user-accessible
	PTE_PWT = 1 << 3  // page-level write-through
	PTE_PCD = 1 << 4  // page-level cache disable
	PTE_A   = 1 << 5  // accessed
	PTE_D   = 1 << 6  // dirty
	PTE_PS  = 1 << 7  // page size: 1 GiB in a PDPTE, 2 MiB in a PDE
	PTE_G   = 1 << 8  // global (CR4.PGE)
	PTE_NX  = 1 << 63 // execute-disable (EFER.NXE)
	PTE_PAT = 1 << 7  // PAT index bit of a 4 KiB page (where large pages have PS)
	// PTE_PAT_LARGE is the PAT index bit of a 2 MiB or 1 GiB page.
	PTE_PAT_LARGE = 1 << 12
	PTE_ADDR      = 0x000ffffffffff000

	PageSize   = 1 << 12
	PageSize2M = 1 << 21
	PageSize1G = 1 << 30
	// PTEFlags are the bits of an entry that are not the address.
	PTEFlags = PTE_P | PTE_W | PTE_U | PTE_PWT | PTE_PCD | PTE_A | PTE_D | PTE_PS | PTE_G | PTE_NX
)

// Levels of the paging hierarchy, named after the table an index selects.
const (
	LevelPT   = 1
	LevelPD   = 2
	LevelPDPT = 3
	LevelPML4 = 4
)

// Table is one paging structure: 512 entries.
type Table [512]uint64

// TableMemory is where page tables live. The kernel implements it over
// identity-mapped physical frames; host tests implement it over Go memory,
// so the same builder is tested on the host (gVisor's pagetables.Allocator
// plays this role).
type TableMemory interface {
	// NewTable returns the physical address of a zeroed 4 KiB table, and
	// false when memory is exhausted.
	NewTable() (pa uint64, ok bool)
	// Table returns the table at physical address pa.
	Table(pa uint64) *Table
}

// PageTable is a 4-level address space rooted at the PML4 at Root.
type PageTable[M TableMemory] struct {
	Root uint64
	Mem  M
}

// New returns a page table with an empty PML4, or false when memory is
// exhausted.
func New[M TableMemory](mem M) (PageTable[M], bool) {
	root, ok := mem.NewTable()
	return PageTable[M]{Root: root, Mem: mem}, ok
}

func index(va uint64, level int) int {
	return int(va>>(12+9*uint(level-1))) & 511
}

// levelSize is the span of one entry at level: 4 KiB in a PT, 2 MiB in a
// PD, 1 GiB in a PDPT, 512 GiB in the PML4.
func levelSize(level int) uint64 {
	return 1 << (12 + 9*uint(level-1))
}

// tableFlags are the bits of a non-leaf entry: the most permissive, so that
// the leaf alone decides the access rights (SDM Vol. 3A, 4.6.1).
const tableFlags = PTE_P | PTE_W | PTE_U

// entry returns a pointer to the entry for va at level, creating the tables
// above it when create is set. It returns nil when a table is missing (and
// create is false or memory is exhausted) or when a large page at a higher
// level already maps va.
func (pt *PageTable[M]) entry(va uint64, level int, create bool) *uint64 {
	t := pt.Mem.Table(pt.Root)
	for l := LevelPML4; l > level; l-- {
		if t = NextTable(pt.Mem, &t[index(va, l)], tableFlags, create); t == nil {
			return nil
		}
	}
	return &t[index(va, level)]
}

// NextTable returns the table that the entry *e of a paging structure
// references, one level down. When *e is not present (P clear) and create
// is set, it first takes a new table from mem and points *e at it with
// flags (which must include P). It returns nil when *e is not present and
// create is false or mem is exhausted, and when *e maps a large page (PS
// set). The step of every walk: 4-level (entry) and PAE (i386pae), whose
// PDPTEs never have bit 7 set.
func NextTable[M TableMemory](mem M, e *uint64, flags uint64, create bool) *Table {
	switch {
	case *e&PTE_P == 0:
		if !create {
			return nil
		}
		pa, ok := mem.NewTable()
		if !ok {
			return nil
		}
		*e = pa | flags
	case *e&PTE_PS != 0:
		return nil
	}
	return mem.Table(*e & PTE_ADDR)
}

// Map maps [va, va+size) to [pa, pa+size) with pages of pageSize (PageSize,
// PageSize2M or PageSize1G) and leaf flags (PTE_P is added; PTE_PS is added
// for large pages). va, pa and size must be multiples of pageSize. It
// returns false when memory for tables runs out or a range is already
// mapped by a larger page.
func (pt *PageTable[M]) Map(va, pa, size, pageSize, flags uint64) bool {
	level := LevelPT
	switch pageSize {
	case PageSize2M:
		level, flags = LevelPD, flags|PTE_PS
	case PageSize1G:
		level, flags = LevelPDPT, flags|PTE_PS
	}
	for off := uint64(0); off < size; off += pageSize {
		e := pt.entry(va+off, level, true)
		if e == nil {
			return false
		}
		*e = (pa+off)&PTE_ADDR | flags | PTE_P
	}
	return true
}

// Lookup returns the leaf entry mapping va and the level it sits at, or
// level 0 when va is not mapped.
func (pt *PageTable[M]) Lookup(va uint64) (pte uint64, level int) {
	t := pt.Mem.Table(pt.Root)
	for l := LevelPML4; l >= LevelPT; l-- {
		e := t[index(va, l)]
		if e&PTE_P == 0 {
			return 0, 0
		}
		if l == LevelPT || e&PTE_PS != 0 {
			return e, l
		}
		t = pt.Mem.Table(e & PTE_ADDR)
	}
	return 0, 0
}

// Translate returns the physical address va maps to.
func (pt *PageTable[M]) Translate(va uint64) (uint64, bool) {
	e, l := pt.Lookup(va)
	if l == 0 {
		return 0, false
	}
	return e&PTE_ADDR&^(levelSize(l)-1) | va&(levelSize(l)-1), true
}

// PTE returns a pointer to the 4 KiB-page entry for va, creating the tables
// above it when create is set; nil when va lies in a large page or a table
// is missing.
func (pt *PageTable[M]) PTE(va uint64, create bool) *uint64 {
	return pt.entry(va, LevelPT, create)
}

// Split replaces the 2 MiB page that maps va, if any, by a page table of 512
// 4 KiB pages with the same flags. It returns false when memory runs out.
func (pt *PageTable[M]) Split(va uint64) bool {
	pde := pt.entry(va, LevelPD, false)
	if pde == nil || *pde&PTE_PS == 0 || *pde&PTE_P == 0 {
		return true
	}
	pa, ok := pt.Mem.NewTable()
	if !ok {
		return false
	}
	t := pt.Mem.Table(pa)
	base := *pde & PTE_ADDR &^ (PageSize2M - 1)
	flags := *pde & PTEFlags &^ PTE_PS
	if *pde&PTE_PAT_LARGE != 0 {
		flags |= PTE_PAT // the PAT bit moves from bit 12 to bit 7
	}
	for i := range t {
		t[i] = base + uint64(i)*PageSize | flags
	}
	*pde = pa | tableFlags
	return true
}

// Mapping is one run of the address space as Walk reports it: Size bytes
// from VA map to PA with the leaf Flags (PTE_PS removed).
type Mapping struct {
	VA, PA, Size, Flags uint64
}

// Walk calls fn for each mapped page in address order, merging runs of
// pages that are contiguous in both address spaces and have equal flags.
// The walk covers the canonical lower half and upper half.
func (pt *PageTable[M]) Walk(fn func(Mapping)) {
	var cur Mapping
	pt.walk(pt.Mem.Table(pt.Root), LevelPML4, 0, func(va, pa, size, flags uint64) {
		if cur.Size != 0 && cur.VA+cur.Size == va && cur.PA+cur.Size == pa && cur.Flags == flags {
			cur.Size += size
			return
		}
		if cur.Size != 0 {
			fn(cur)
		}
		cur = Mapping{VA: va, PA: pa, Size: size, Flags: flags}
	})
	if cur.Size != 0 {
		fn(cur)
	}
}

func (pt *PageTable[M]) walk(t *Table, level int, base uint64, fn func(va, pa, size, flags uint64)) {
	for i, e := range t {
		if e&PTE_P == 0 {
			continue
		}
		va := base + uint64(i)*levelSize(level)
		if level == LevelPML4 && i >= 256 {
			va |= 0xffff000000000000 // sign extension of bit 47
		}
		if level == LevelPT || e&PTE_PS != 0 {
			fn(va, e&PTE_ADDR&^(levelSize(level)-1), levelSize(level), e&PTEFlags&^(PTE_PS|PTE_A|PTE_D))
			continue
		}
		pt.walk(pt.Mem.Table(e&PTE_ADDR), level-1, va, fn)
	}
}
