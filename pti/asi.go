package pti

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/goos"
)

// Address Space Isolation (ASI; Brendan Jackman's RFC series for Linux,
// linuxasi.dev): the kernel runs on a nonsensitive table, which maps all
// of it but the frames that hold user data, and moves to the sensitive
// (full) table only when it touches such a frame. In ptilab the sensitive
// frames are the processes' pages and the tasks kernel's pipe and socket
// rings (lseek's files have no contents): they come from 2 MiB blocks of their own (goos's
// sensitive blocks), so that the nonsensitive table leaves each block out
// with one cleared PD entry.

// Nonsensitive is ASI's nonsensitive kernel table: a PML4 whose entries
// are the kernel table's, except where a sensitive block lies, where the
// PML4 entry and the PDPT entry lead to private copies of the kernel's
// PDPT and PD (tables of its own, kept across SyncNonsensitive calls) in which the block's
// PD entry is clear. The processes' nonsensitive tables share its
// top-level entries, as their kernel sides share the kernel table's.
type Nonsensitive struct {
	Root uint64
	pdpt map[int]uint64    // PML4 slot: private PDPT
	pd   map[[2]int]uint64 // PML4 slot, PDPT index: private PD
}

// SensitiveBlock is the size and alignment of a sensitive block: one PD
// entry of the kernel's identity map (2 MiB pages above the first 2 MiB).
const SensitiveBlock = amd64.PageSize2M

// SyncNonsensitive makes n the kernel table kernel with the 2 MiB blocks at the
// physical (identity-mapped) addresses blocks left out: it copies the
// kernel's entries into n's tables again, so that what the kernel mapped
// since the last call (the Go runtime's heap grows into the PML4 slot of
// the identity map) is in n too. It takes tables from mem the first time
// a table is needed and returns an error when mem runs out, when a block
// is not SensitiveBlock-aligned, or when the kernel does not map a block
// with a 2 MiB page or a table of 4 KiB pages (a 1 GiB page would have to
// be split first).
func SyncNonsensitive[M amd64.TableMemory](n *Nonsensitive, mem M, kernel amd64.PageTable[M], blocks []uint64) error {
	if n.Root == 0 {
		var ok bool
		if n.Root, ok = mem.NewTable(); !ok {
			return fmt.Errorf("pti: out of memory for the nonsensitive PML4")
		}
		n.pdpt, n.pd = map[int]uint64{}, map[[2]int]uint64{}
	}
	root := mem.Table(n.Root)
	*root = *mem.Table(kernel.Root)
	fresh := map[uint64]bool{} // private tables copied in this call
	for _, b := range blocks {
		if b%SensitiveBlock != 0 {
			return fmt.Errorf("pti: sensitive block %#x is not 2 MiB-aligned", b)
		}
		i, j, k := int(b>>39)&511, int(b>>30)&511, int(b>>21)&511
		pdpt, err := private(mem, &root[i], mem.Table(kernel.Root)[i], n.pdpt, i, fresh)
		if err != nil {
			return fmt.Errorf("pti: sensitive block %#x: PML4 entry %d: %w", b, i, err)
		}
		kpdpt := mem.Table(mem.Table(kernel.Root)[i] & amd64.PTE_ADDR)
		pd, err := private(mem, &pdpt[j], kpdpt[j], n.pd, [2]int{i, j}, fresh)
		if err != nil {
			return fmt.Errorf("pti: sensitive block %#x: PDPT entry %d: %w", b, j, err)
		}
		pd[k] = 0
	}
	return nil
}

// private points *e, an entry of one of a Nonsensitive's tables, at its private copy of
// the table that the kernel's entry ke references (kept in tables under
// key), copying the kernel's table into it once per SyncNonsensitive (fresh).
func private[M amd64.TableMemory, K comparable](mem M, e *uint64, ke uint64, tables map[K]uint64, key K, fresh map[uint64]bool) (*amd64.Table, error) {
	switch {
	case ke&amd64.PTE_P == 0:
		return nil, fmt.Errorf("not present in the kernel table")
	case ke&amd64.PTE_PS != 0:
		return nil, fmt.Errorf("a 1 GiB page in the kernel table")
	}
	pa, ok := tables[key]
	if !ok {
		if pa, ok = mem.NewTable(); !ok {
			return nil, fmt.Errorf("out of memory for a private table")
		}
		tables[key] = pa
	}
	t := mem.Table(pa)
	if !fresh[pa] {
		*t = *mem.Table(ke & amd64.PTE_ADDR)
		fresh[pa] = true
	}
	*e = pa | ke&^amd64.PTE_ADDR
	return t, nil
}

// syncNonsensitive brings the image's nonsensitive kernel table
// (env.nonsensitive) up to date with the kernel table and the sensitive
// blocks taken so far (goos.SensitiveBlocks).
func syncNonsensitive() error {
	return SyncNonsensitive(&env.nonsensitive, goos.PhysTables{}, goos.KernelTable(), goos.SensitiveBlocks())
}

// asiSites are the site bits of asi actions k (entryData.ASIActions,
// asiActions): each knob's own (experiment.Mitigation.Site).
func asiSites(k experiment.Knobs) uint64 {
	var s uint64
	for _, m := range k.List() {
		s |= uint64(m.Site())
	}
	return s
}

// setASI sets the entry data's ASI fields for a run in mode m: in an asi
// mode the span of the sensitive blocks, where a kernel fault on the
// nonsensitive table is an ASI fault, and NOFLUSH for the switch with
// PCIDs; elsewhere an empty span (no fault is an ASI fault). It brings
// the nonsensitive table up to date first: the rings and processes of
// the run took their blocks after the processes' tables were built.
func setASI(d *entryData, m experiment.Mode) error {
	d.ASILo, d.ASIHi, d.ASINoflush, d.ASISensitive, d.ASITransitions = 0, 0, 0, 0, 0
	if !m.ASI() {
		return nil
	}
	if err := syncNonsensitive(); err != nil {
		return err
	}
	blocks := goos.SensitiveBlocks()
	if len(blocks) == 0 {
		return nil
	}
	d.ASILo, d.ASIHi = blocks[0], blocks[0]
	for _, b := range blocks {
		d.ASILo, d.ASIHi = min(d.ASILo, b), max(d.ASIHi, b+SensitiveBlock)
	}
	if m.PCID() {
		d.ASINoflush = CR3_NOFLUSH
	}
	return nil
}
