package efi

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type testDesc struct {
	typ                  uint32
	start, virt, n, attr uint64
}

// fillMap writes descs into m's buffer as the firmware would, descSize
// bytes apart, with the bytes past the struct in each slot set to junk.
func fillMap(t *testing.T, m *MemoryMap, descSize uint64, descs []testDesc) {
	t.Helper()
	require.GreaterOrEqual(t, descSize, uint64(unsafe.Sizeof(MemoryDescriptor{})))
	for i := range m.buf {
		m.buf[i] = 0xa5
	}
	for i, d := range descs {
		b := m.buf[uint64(i)*descSize:]
		binary.LittleEndian.PutUint32(b[0:], d.typ)
		binary.LittleEndian.PutUint32(b[4:], 0xdeadbeef) // padding
		binary.LittleEndian.PutUint64(b[8:], d.start)
		binary.LittleEndian.PutUint64(b[16:], d.virt)
		binary.LittleEndian.PutUint64(b[24:], d.n)
		binary.LittleEndian.PutUint64(b[32:], d.attr)
	}
	m.descSize = descSize
	m.size = uint64(len(descs)) * descSize
}

func TestMemoryMapAt(t *testing.T) {
	descs := []testDesc{
		{ConventionalMemory, 0x0, 0, 0xa0, 0xf},
		{ReservedMemoryType, 0xa0000, 0, 0x60, 0},
		{LoaderCode, 0x10_0000, 0x1234, 0x300, 0x8000000000000000},
		{MemoryMappedIO, 0xfec0_0000, 0, 1, 1},
		{ConventionalMemory, 0x1_0000_0000, 0, 0x40000, 0xf},
	}
	for _, descSize := range []uint64{40, 48, 56} {
		m := new(MemoryMap)
		fillMap(t, m, descSize, descs)
		require.Equal(t, len(descs), m.Len(), "descSize %d", descSize)
		for i, want := range descs {
			d := m.At(i)
			assert.Equal(t, want.typ, d.Type, "desc %d", i)
			assert.Equal(t, want.start, d.PhysicalStart, "desc %d", i)
			assert.Equal(t, want.virt, d.VirtualStart, "desc %d", i)
			assert.Equal(t, want.n, d.NumberOfPages, "desc %d", i)
			assert.Equal(t, want.attr, d.Attribute, "desc %d", i)
			assert.Equal(t, want.start+want.n*4096, d.End(), "desc %d", i)
			// At points into the buffer at i*descSize.
			assert.Equal(t, unsafe.Pointer(&m.buf[uint64(i)*descSize]), unsafe.Pointer(d))
		}
	}
}

func TestMemoryMapLen(t *testing.T) {
	tests := []struct {
		name           string
		size, descSize uint64
		want           int
	}{
		{"empty", 0, 48, 0},
		{"no descSize", 480, 0, 0},
		{"exact", 10 * 48, 48, 10},
		{"partial trailing descriptor ignored", 3*48 + 40, 48, 3},
		{"struct-sized", 7 * 40, 40, 7},
		{"full buffer", 64 << 10, 48, (64 << 10) / 48},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := new(MemoryMap)
			m.size, m.descSize = tt.size, tt.descSize
			assert.Equal(t, tt.want, m.Len())
		})
	}
}

func TestIsRAM(t *testing.T) {
	tests := []struct {
		typ  uint32
		name string
		ram  bool
	}{
		{ReservedMemoryType, "reserved", false},
		{LoaderCode, "loader code", true},
		{LoaderData, "loader data", true},
		{BootServicesCode, "boot services code", true},
		{BootServicesData, "boot services data", true},
		{RuntimeServicesCode, "runtime services code", true},
		{RuntimeServicesData, "runtime services data", true},
		{ConventionalMemory, "conventional", true},
		{UnusableMemory, "unusable", false},
		{ACPIReclaimMemory, "ACPI reclaim", true},
		{ACPIMemoryNVS, "ACPI NVS", true},
		{MemoryMappedIO, "MMIO", false},
		{MemoryMappedIOPortSpace, "MMIO port space", false},
		{PalCode, "PAL code", false},
		{PersistentMemory, "persistent", false},
		{UnacceptedMemory, "unaccepted", false},
		{16, "past the last type", false},
		{0x7000_0000, "OEM", false},
		{0x8000_0000, "OS-defined", false},
	}
	for i, tt := range tests {
		if i < 16 {
			require.Equal(t, uint32(i), tt.typ, "the table lists types 0-15 in order")
		}
		t.Run(tt.name, func(t *testing.T) {
			d := MemoryDescriptor{Type: tt.typ}
			assert.Equal(t, tt.ram, d.IsRAM())
		})
	}
}

func TestMemoryMapTotals(t *testing.T) {
	tests := []struct {
		name           string
		descs          []testDesc
		ram, free, top uint64
	}{
		{"empty map", nil, 0, 0, 0},
		{
			name: "typical PC",
			descs: []testDesc{
				{BootServicesCode, 0x0, 0, 1, 0},
				{ConventionalMemory, 0x1000, 0, 0x9f, 0},
				{ReservedMemoryType, 0xa0000, 0, 0x60, 0},
				{LoaderCode, 0x10_0000, 0, 0x100, 0},
				{LoaderData, 0x20_0000, 0, 0x200, 0},
				{ConventionalMemory, 0x40_0000, 0, 0x7000, 0},
				{BootServicesData, 0x740_0000, 0, 0x10, 0},
				{RuntimeServicesCode, 0x741_0000, 0, 0x20, 0},
				{RuntimeServicesData, 0x743_0000, 0, 0x30, 0},
				{ACPIReclaimMemory, 0x746_0000, 0, 0x8, 0},
				{ACPIMemoryNVS, 0x746_8000, 0, 0x4, 0},
				{UnusableMemory, 0x746_c000, 0, 0x4, 0},
				{MemoryMappedIO, 0xb000_0000, 0, 0x10000, 0},
				{ConventionalMemory, 0x1_0000_0000, 0, 0x40000, 0},
				{PersistentMemory, 0x2_0000_0000, 0, 0x1000, 0},
				{MemoryMappedIO, 0xfd_0000_0000, 0, 0x10, 0}, // highest end, not RAM
			},
			ram:  (1 + 0x9f + 0x100 + 0x200 + 0x7000 + 0x10 + 0x20 + 0x30 + 0x8 + 0x4 + 0x40000) << 12,
			free: (0x9f + 0x7000 + 0x40000) << 12,
			top:  0xfd_0000_0000 + 0x10<<12,
		},
		{
			name: "top from a range listed before lower ones",
			descs: []testDesc{
				{ConventionalMemory, 0x8000_0000, 0, 0x100, 0},
				{ConventionalMemory, 0x1000, 0, 0x10, 0},
			},
			ram:  0x110 << 12,
			free: 0x110 << 12,
			top:  0x8010_0000,
		},
		{
			name:  "no RAM at all",
			descs: []testDesc{{MemoryMappedIO, 0xe000_0000, 0, 0x100, 0}, {ReservedMemoryType, 0, 0, 1, 0}},
			ram:   0, free: 0, top: 0xe010_0000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := new(MemoryMap)
			fillMap(t, m, 48, tt.descs)
			ram, free, top := m.Totals()
			assert.Equal(t, tt.ram, ram, "ram")
			assert.Equal(t, tt.free, free, "free")
			assert.Equal(t, tt.top, top, "top")
			assert.LessOrEqual(t, free, ram)
		})
	}
}

func TestMemoryMapTotalsIgnoresTrailingPartialDescriptor(t *testing.T) {
	m := new(MemoryMap)
	fillMap(t, m, 48, []testDesc{
		{ConventionalMemory, 0x1000, 0, 1, 0},
		{ConventionalMemory, 0x10_0000, 0, 0x100, 0},
	})
	m.size = 48 + 40 // the second descriptor is cut short
	ram, free, top := m.Totals()
	assert.Equal(t, uint64(0x1000), ram)
	assert.Equal(t, uint64(0x1000), free)
	assert.Equal(t, uint64(0x2000), top)
}
