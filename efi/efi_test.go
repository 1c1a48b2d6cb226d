package efi

import (
	"encoding/binary"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// hostAddr returns the address of b's first byte: on the host the
// "identity map" that Read8/Read16/Read64 use is plain host memory. b must
// be on the heap (see heapBytes): a stack that grows moves, and an address
// kept as an integer would then point at the old copy.
func hostAddr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// pinned keeps the buffers of heapBytes reachable, which also makes them
// escape to the heap.
var pinned [][]byte

// heapBytes returns a heap-allocated copy of b.
func heapBytes(b []byte) []byte {
	h := make([]byte, len(b))
	copy(h, b)
	pinned = append(pinned, h)
	return h
}

// TestStatusNames: every error of UEFI 2.10, Appendix D, Table D-3 is the
// high bit | its code, an error, and has its name, whether or not a
// constant names it; EFI_SUCCESS is 0 and not one.
func TestStatusNames(t *testing.T) {
	assert.Equal(t, uint64(0), uint64(Success), "value")
	assert.False(t, Success.Error(), "Error()")
	assert.Equal(t, "success", Success.String())
	tests := []struct {
		code     uint64
		name     string
		constant Status // 0: none
	}{
		{1, "load error", LoadError},
		{2, "invalid parameter", InvalidParameter},
		{3, "unsupported", Unsupported},
		{4, "bad buffer size", 0},
		{5, "buffer too small", BufferTooSmall},
		{6, "not ready", NotReady},
		{7, "device error", DeviceError},
		{8, "write protected", WriteProtected},
		{9, "out of resources", OutOfResources},
		{10, "volume corrupted", 0},
		{11, "volume full", VolumeFull},
		{12, "no media", 0},
		{13, "media changed", 0},
		{14, "not found", NotFound},
		{15, "access denied", AccessDenied},
		{16, "no response", 0},
		{17, "no mapping", 0},
		{18, "timeout", 0},
		{19, "not started", 0},
		{20, "already started", 0},
		{21, "aborted", Aborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Status(1<<63 | tt.code)
			if tt.constant != 0 {
				assert.Equal(t, uint64(s), uint64(tt.constant), "value")
			}
			assert.True(t, s.Error(), "Error()")
			assert.Equal(t, tt.name, s.String(), "code %d", tt.code)
		})
	}
}

func TestStatusUnknown(t *testing.T) {
	for _, s := range []Status{1<<63 | 22, 1<<63 | 32, 1<<63 | 0x7fff, 1<<63 | 1<<62, ^Status(0)} {
		assert.True(t, s.Error(), "%#x", uint64(s))
		assert.Equal(t, "unknown status", s.String(), "%#x", uint64(s))
	}
	for _, s := range []Status{22, 1 << 40} {
		assert.False(t, s.Error(), "%#x", uint64(s))
		assert.Equal(t, "unknown status", s.String(), "%#x", uint64(s))
	}
}

// String must honour the error bit. Warning codes (UEFI 2.10, Appendix D,
// Table D-4: EFI_WARN_UNKNOWN_GLYPH = 1 ... EFI_WARN_RESET_REQUIRED = 7)
// have no high bit and are not errors, so they must not be named as the
// error with the same low bits; and the high bit alone (an error status
// with code 0) is not "success".
func TestStatusStringHonoursErrorBit(t *testing.T) {
	for code := uint64(1); code <= 7; code++ {
		w := Status(code)
		assert.False(t, w.Error(), "warning %d is not an error", code)
		assert.NotEqual(t, Status(1<<63|code).String(), w.String(),
			"warning %d is named like the error %#x", code, uint64(1<<63|code))
	}
	e := Status(1 << 63)
	assert.True(t, e.Error())
	assert.NotEqual(t, "success", e.String(), "an error status named success")
}

func TestReadHelpers(t *testing.T) {
	b := heapBytes(make([]byte, 16))
	binary.LittleEndian.PutUint64(b[0:], 0x0807060504030201)
	binary.LittleEndian.PutUint64(b[8:], 0x100f0e0d0c0b0a09)
	a := hostAddr(b)
	assert.Equal(t, uint8(0x01), Read8(a))
	assert.Equal(t, uint8(0x02), Read8(a+1))
	assert.Equal(t, uint16(0x0302), Read16(a+1))
	assert.Equal(t, uint32(0x06050403), Read32(a+2))
	assert.Equal(t, uint64(0x0c0b0a0908070605), Read64(a+4))
	assert.Equal(t, b[3:9], Bytes(a+3, 6))
	runtime.KeepAlive(b)
}

func TestVendor(t *testing.T) {
	saved := Firmware
	t.Cleanup(func() { Firmware = saved })

	Firmware.vendor = [64]byte{}
	assert.Empty(t, Vendor())
	copy(Firmware.vendor[:], "EDK II")
	assert.Equal(t, "EDK II", Vendor())
	for i := range Firmware.vendor {
		Firmware.vendor[i] = 'x'
	}
	assert.Len(t, Vendor(), 64)
}

// ConfigTable walks the system table's configuration-table array (UEFI
// 2.10, 4.6): 24-byte entries of GUID and pointer.
func TestConfigTable(t *testing.T) {
	saved := Firmware
	t.Cleanup(func() { Firmware = saved })

	entries := heapBytes(make([]byte, 3*24))
	guids := []GUID{ACPI10TableGUID, SimpleFileSystemProtocolGUID, ACPI20TableGUID}
	for i, g := range guids {
		*(*GUID)(unsafe.Pointer(&entries[24*i])) = g
		binary.LittleEndian.PutUint64(entries[24*i+16:], 0x1000*uint64(i+1))
	}
	st := heapBytes(make([]byte, 128))
	binary.LittleEndian.PutUint64(st[stNumberOfTables:], uint64(len(guids)))
	binary.LittleEndian.PutUint64(st[stConfigTable:], hostAddr(entries))
	Firmware.SystemTable = hostAddr(st)

	assert.Equal(t, uint64(0x1000), ConfigTable(&ACPI10TableGUID))
	assert.Equal(t, uint64(0x3000), ConfigTable(&ACPI20TableGUID))
	assert.Equal(t, uint64(0x2000), ConfigTable(&SimpleFileSystemProtocolGUID))
	assert.Zero(t, ConfigTable(&LoadedImageProtocolGUID))

	// Entries past NumberOfTables are not looked at.
	binary.LittleEndian.PutUint64(st[stNumberOfTables:], 2)
	assert.Zero(t, ConfigTable(&ACPI20TableGUID))
	runtime.KeepAlive(st)
	runtime.KeepAlive(entries)
}

func TestGUIDLayout(t *testing.T) {
	assert.Equal(t, uintptr(16), unsafe.Sizeof(GUID{}))
	// EFI_ACPI_20_TABLE_GUID 8868e871-e4f1-11d3-bc22-0080c73c8881 in memory.
	g := ACPI20TableGUID
	b := unsafe.Slice((*byte)(unsafe.Pointer(&g)), 16)
	assert.Equal(t, []byte{0x71, 0xe8, 0x68, 0x88, 0xf1, 0xe4, 0xd3, 0x11, 0xbc, 0x22, 0x00, 0x80, 0xc7, 0x3c, 0x88, 0x81}, b)
}

// TestLayouts holds the firmware's structures as declared here to their
// sizes and field offsets in UEFI 2.10.
func TestLayouts(t *testing.T) {
	var tm Time
	var d MemoryDescriptor
	tests := []struct {
		what      string
		got, want uintptr
	}{
		// EFI_TIME (8.3.1): 16 bytes.
		{"EFI_TIME size", unsafe.Sizeof(tm), 16},
		{"EFI_TIME.Nanosecond", unsafe.Offsetof(tm.Nanosecond), 8},
		{"EFI_TIME.TimeZone", unsafe.Offsetof(tm.TimeZone), 12},
		{"EFI_TIME.Daylight", unsafe.Offsetof(tm.Daylight), 14},
		// EFI_MEMORY_DESCRIPTOR (7.2.3): 40 bytes.
		{"EFI_MEMORY_DESCRIPTOR size", unsafe.Sizeof(d), 40},
		{"EFI_MEMORY_DESCRIPTOR.PhysicalStart", unsafe.Offsetof(d.PhysicalStart), 8},
		{"EFI_MEMORY_DESCRIPTOR.VirtualStart", unsafe.Offsetof(d.VirtualStart), 16},
		{"EFI_MEMORY_DESCRIPTOR.NumberOfPages", unsafe.Offsetof(d.NumberOfPages), 24},
		{"EFI_MEMORY_DESCRIPTOR.Attribute", unsafe.Offsetof(d.Attribute), 32},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.got, tt.what)
	}
}
