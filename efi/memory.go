package efi

import "unsafe"

// Memory types (UEFI 2.10, 7.2.1, Table 7-5).
const (
	ReservedMemoryType      = 0
	LoaderCode              = 1
	LoaderData              = 2
	BootServicesCode        = 3
	BootServicesData        = 4
	RuntimeServicesCode     = 5
	RuntimeServicesData     = 6
	ConventionalMemory      = 7
	UnusableMemory          = 8
	ACPIReclaimMemory       = 9
	ACPIMemoryNVS           = 10
	MemoryMappedIO          = 11
	MemoryMappedIOPortSpace = 12
	PalCode                 = 13
	PersistentMemory        = 14
	UnacceptedMemory        = 15
)

// Allocation types (UEFI 2.10, 7.2.1).
const (
	AllocateAnyPages   = 0
	AllocateMaxAddress = 1
	AllocateAddress    = 2
)

// PageShift is log2 of the UEFI page size (4 KiB).
const PageShift = 12

// claim is a range of pages ptilab took from the firmware: Exit gives them
// back.
type claim struct {
	Base, Pages uint64
}

var (
	claims  [128]claim
	nclaims uint64
)

// AllocatePages takes pages 4 KiB pages from the firmware as LoaderData
// (UEFI 2.10, 7.2.1). kind is AllocateAnyPages, AllocateMaxAddress (at or
// below addr) or AllocateAddress (exactly at addr). The pages are recorded
// and returned to the firmware by Exit. It returns the physical address of
// the first page.
func AllocatePages(kind, pages, addr uint64) (uint64, Status) {
	if nclaims == uint64(len(claims)) {
		return 0, OutOfResources
	}
	a := addr
	s := BootService(bsAllocatePages, kind, LoaderData, pages, addrOf(&a))
	if s.Error() {
		return 0, s
	}
	claims[nclaims] = claim{a, pages}
	nclaims++
	return a, Success
}

func addrOf(p *uint64) uint64 { return addr(p) }

// MemoryDescriptor is an EFI_MEMORY_DESCRIPTOR (UEFI 2.10, 7.2.3).
type MemoryDescriptor struct {
	Type          uint32
	_             uint32
	PhysicalStart uint64
	VirtualStart  uint64
	NumberOfPages uint64
	Attribute     uint64
}

// End returns the first physical address after the range.
func (d *MemoryDescriptor) End() uint64 {
	return d.PhysicalStart + d.NumberOfPages<<PageShift
}

// IsRAM reports whether the range is system memory (as opposed to device
// memory, holes and persistent memory).
func (d *MemoryDescriptor) IsRAM() bool {
	switch d.Type {
	case LoaderCode, LoaderData, BootServicesCode, BootServicesData,
		RuntimeServicesCode, RuntimeServicesData, ConventionalMemory,
		ACPIReclaimMemory, ACPIMemoryNVS:
		return true
	}
	return false
}

// MemoryMap is a snapshot of the firmware's memory map.
type MemoryMap struct {
	buf      [64 << 10]byte
	size     uint64 // bytes used in buf
	descSize uint64 // bytes per descriptor (may exceed the struct)
	Key      uint64
}

// Read fetches the current memory map (UEFI 2.10, 7.2.3 GetMemoryMap). m
// must be identity-mapped (a global, not a goroutine's variable).
func (m *MemoryMap) Read() Status {
	size := uint64(len(m.buf))
	var version uint32
	s := BootService(bsGetMemoryMap, addrOf(&size), addr(&m.buf[0]), addrOf(&m.Key), addrOf(&m.descSize), addr(&version))
	if s.Error() {
		m.size = 0
		return s
	}
	m.size = size
	return Success
}

// Len returns the number of descriptors.
func (m *MemoryMap) Len() int {
	if m.descSize == 0 {
		return 0
	}
	return int(m.size / m.descSize)
}

// At returns descriptor i.
func (m *MemoryMap) At(i int) *MemoryDescriptor {
	return (*MemoryDescriptor)(unsafe.Pointer(&m.buf[uint64(i)*m.descSize]))
}

// Totals returns the bytes of RAM and of free (conventional) memory in the
// map, and the end of the highest range of any type.
func (m *MemoryMap) Totals() (ram, free, top uint64) {
	for i := 0; i < m.Len(); i++ {
		d := m.At(i)
		n := d.NumberOfPages << PageShift
		if d.IsRAM() {
			ram += n
		}
		if d.Type == ConventionalMemory {
			free += n
		}
		if d.End() > top {
			top = d.End()
		}
	}
	return
}

// bounce is the buffer through which data passes between Go memory (not
// identity-mapped) and the firmware.
var bounce struct {
	base, size uint64
}

// BounceSize is the size of the bounce buffer in bytes.
const BounceSize = 256 << 10

// InitBounce allocates the bounce buffer.
func InitBounce() Status {
	a, s := AllocatePages(AllocateAnyPages, BounceSize>>PageShift, 0)
	if s.Error() {
		return s
	}
	bounce.base, bounce.size = a, BounceSize
	return Success
}

// Bounce returns the bounce buffer's physical address and its contents.
func Bounce() (uint64, []byte) {
	return bounce.base, Bytes(bounce.base, int(bounce.size))
}
