package pti

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
)

// TableMemory is where a process's tables live: amd64.TableMemory and pairs of
// 8 KiB-aligned tables for the two PML4s.
type TableMemory interface {
	amd64.TableMemory
	// NewTablePair returns two contiguous zeroed tables, the first 8 KiB
	// aligned.
	NewTablePair() (pa uint64, ok bool)
}

// Frames are the physical memory of a process, which its threads (the
// tasks) share: contiguous frames for its code, data and stack
// (UserCodePages, DataPages or UserDataPages when 0, UserStackPages).
type Frames struct {
	Code, Data, Stack uint64
	DataPages         int // at most MaxDataPages
}

// MaxDataPages is the most data pages a process can have: they run from
// UserData to the stack pages.
const MaxDataPages = (UserStackTop-UserData)/4096 - UserStackPages

// dataPages returns the number of f's data pages.
func (f Frames) dataPages() uint64 {
	if f.DataPages == 0 {
		return UserDataPages
	}
	return uint64(f.DataPages)
}

// Space is a process's address space in one isolation mode (its row says
// whether the tables are a pair and whether CR3 carries a PCID).
type Space struct {
	Mode experiment.Mode
	// KernelRoot is the PML4 the kernel side runs on: the Go kernel's
	// mappings, the process's pages and the entry area.
	KernelRoot uint64
	// UserRoot is the PML4 ring 3 runs on: KernelRoot+4096 when the mode
	// isolates (the process's pages and the entry area only), KernelRoot
	// otherwise.
	UserRoot uint64
	// ASID tells the address space apart from other processes': with
	// PCIDs its kernel PCID is KernelPCID+ASID and its user PCID that with
	// bit 11 set (Linux: kern_pcid(asid) = asid+1).
	ASID uint16
}

// Leaf flags of the process's and the entry area's pages.
const (
	flagsUserCode  = amd64.PTE_U
	flagsUserData  = amd64.PTE_U | amd64.PTE_W | amd64.PTE_NX
	flagsEntryText = 0
	flagsEntryRW   = amd64.PTE_W | amd64.PTE_NX
	flagsEntryRO   = amd64.PTE_NX
)

// Build makes the address space of a process with frames f in mode on
// mem: the kernel side shares every top-level entry of the Go kernel's
// table kernel (the kernel's mappings, supervisor-only), and maps the
// process's pages (user pages) and the entry area at entry (EntryPages
// contiguous frames, supervisor-only; the deferred modes' pages of
// Exposure too, from the DeferPages frames that follow, and the FRED
// entry's FREDPages after those, in every mode); with isolation
// the user side maps only the process's pages and the entry area. The
// entry area's pages are global when global is set (and CR4.PGE is on);
// nx selects execute-disable on data pages (EFER.NXE). An asi mode's user
// side is the nonsensitive table, whose kernel mappings are those of the
// PML4 at ns (SyncNonsensitive's). It returns false when memory for
// tables runs out, or when an asi mode has no ns.
func Build[M TableMemory](mem M, kernel amd64.PageTable[M], ns uint64, f Frames, entry uint64, mode experiment.Mode, global, nx bool) (Space, bool) {
	var root uint64
	var ok bool
	if mode.Isolated() {
		root, ok = mem.NewTablePair()
	} else {
		root, ok = mem.NewTable()
	}
	if !ok {
		return Space{}, false
	}
	sp := Space{Mode: mode, KernelRoot: root, UserRoot: root}
	if mode.Isolated() {
		sp.UserRoot = root + amd64.PageSize
	}

	k := mem.Table(root)
	src := mem.Table(kernel.Root)
	for i := range k {
		if i != UserPML4Slot && i != 511 {
			k[i] = src[i]
		}
	}
	pt := amd64.PageTable[M]{Root: root, Mem: mem}
	nxMask, g := amd64.LeafBits(nx, global)
	ok = pt.Map(UserCode, f.Code, UserCodePages*amd64.PageSize, amd64.PageSize, flagsUserCode) &&
		f.dataPages() <= MaxDataPages &&
		pt.Map(UserData, f.Data, f.dataPages()*amd64.PageSize, amd64.PageSize, flagsUserData&nxMask) &&
		pt.Map(UserStackTop-UserStackPages*amd64.PageSize, f.Stack, UserStackPages*amd64.PageSize, amd64.PageSize, flagsUserData&nxMask) &&
		pt.Map(EntryText, entry, EntryTextPages*amd64.PageSize, amd64.PageSize, flagsEntryText|g) &&
		pt.Map(EntryData, entry+(EntryData-EntryBase), amd64.PageSize, amd64.PageSize, flagsEntryRW&nxMask|g) &&
		pt.Map(EntryDesc, entry+(EntryDesc-EntryBase), amd64.PageSize, amd64.PageSize, flagsEntryRW&nxMask|g) &&
		pt.Map(EntryIDT, entry+(EntryIDT-EntryBase), amd64.PageSize, amd64.PageSize, flagsEntryRO&nxMask|g) &&
		pt.Map(EntryStack, entry+(EntryStack-EntryBase), EntryISTMC-EntryStack, amd64.PageSize, flagsEntryRW&nxMask|g) &&
		pt.Map(EntryFREDText, entry+(EntryFREDText-EntryBase), FREDPages*amd64.PageSize, amd64.PageSize, flagsEntryText|g) &&
		mapAreas(pt, mode, entry, nxMask, g)
	if !ok {
		return Space{}, false
	}
	if mode.Isolated() {
		// The user side shares the kernel side's tables below these two
		// slots: the process's and the entry area's. An asi mode's user
		// side is the nonsensitive table: the other slots are ns's (the
		// kernel's, but the sensitive blocks: SyncNonsensitive).
		u := mem.Table(sp.UserRoot)
		if mode.Row().Exposes&experiment.ExposesNonsensitiveKernel != 0 {
			if ns == 0 {
				return Space{}, false
			}
			*u = *mem.Table(ns)
		}
		u[UserPML4Slot] = k[UserPML4Slot]
		u[511] = k[511]
	}
	return sp, true
}

// CR3 bits (SDM Vol. 3A, 4.5, Table 4-13; Linux arch/x86/include/asm/tlbflush.h
// and arch/x86/entry/calling.h).
const (
	CR3_NOFLUSH_BIT = amd64.CR3_NOFLUSH_BIT
	CR3_NOFLUSH     = amd64.CR3_NOFLUSH // keep the PCID's TLB entries (CR4.PCIDE = 1)
	// PTIUserPGTableBit selects the user PML4 of a pair (bit 12: the
	// upper 4 KiB).
	PTIUserPGTableBit = 12
	// PTIUserPCIDBit makes a kernel PCID the matching user PCID.
	PTIUserPCIDBit = 11
	// KernelPCID is the kernel PCID ptilab's tasks use: ASID 0 + 1, as
	// Linux's kern_pcid (PCID 0 stays for the Go kernel's own table).
	KernelPCID = 1
	UserPCID   = KernelPCID | 1<<PTIUserPCIDBit

	// PTIUserMask is what the trampolines OR into CR3 to go to the user
	// side and clear to come back (Linux PTI_USER_PGTABLE_AND_PCID_MASK).
	PTIUserMask = 1<<PTIUserPGTableBit | 1<<PTIUserPCIDBit
)

// KernelCR3 composes the CR3 value of the kernel side of sp: the PML4 and,
// in a PCID mode, its kernel PCID (KernelPCID+ASID) with NOFLUSH when
// noflush is set.
func KernelCR3(sp Space, noflush bool) uint64 {
	v := sp.KernelRoot
	if sp.Mode.PCID() {
		v |= KernelPCID + uint64(sp.ASID)
		if noflush {
			v |= CR3_NOFLUSH
		}
	}
	return v
}

// UserCR3 composes the CR3 value of the user side from the kernel side's
// by the trampolines' arithmetic: bit 12 selects the user PML4 and, with
// PCIDs, bit 11 the user PCID.
func UserCR3(sp Space, noflush bool) uint64 {
	switch {
	case sp.Mode.PCID():
		return KernelCR3(sp, noflush) | PTIUserMask
	case sp.Mode.Isolated():
		return KernelCR3(sp, false) | 1<<PTIUserPGTableBit
	}
	return KernelCR3(sp, false)
}
