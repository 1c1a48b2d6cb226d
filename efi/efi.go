// Package efi is ptilab's side of the UEFI firmware interface: the context
// the firmware handed over at the image entry point, the gate through which
// every firmware call passes, and the boot services ptilab uses (memory
// map, page allocation, text output, files on the boot volume, time, reset).
//
// References are to the UEFI Specification, version 2.10 ("UEFI 2.10").
//
// Boot services stay alive for the whole run (ptilab never calls
// ExitBootServices). The firmware owns its timer interrupt and runs its
// handler on whatever stack it interrupts, so the kernel keeps interrupts
// masked and calls the firmware only through Call, which switches to the
// firmware's stack, GDT, IDT and CR3 and lets the firmware enable
// interrupts inside the call (UEFI 2.10, 2.3.4: boot services are called
// in the firmware's environment: identity-mapped memory, its own stack).
//
// Every pointer handed to the firmware must therefore be identity-mapped:
// the image itself (the firmware loaded and relocated it at its physical
// address) and memory the firmware allocated. Go heap memory is not: data to
// and from the firmware passes through the bounce buffer (Bounce).
//
// Nothing here allocates or writes a heap pointer: it runs in kernel mode.
package efi

import (
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
)

// Status is an EFI_STATUS (UEFI 2.10, Appendix D).
type Status uint64

const errorBit = 1 << 63

// Status codes (UEFI 2.10, Appendix D, Table D-3).
const (
	Success          Status = 0
	LoadError        Status = errorBit | 1
	InvalidParameter Status = errorBit | 2
	Unsupported      Status = errorBit | 3
	BufferTooSmall   Status = errorBit | 5
	NotReady         Status = errorBit | 6
	DeviceError      Status = errorBit | 7
	WriteProtected   Status = errorBit | 8
	OutOfResources   Status = errorBit | 9
	VolumeFull       Status = errorBit | 11
	NotFound         Status = errorBit | 14
	AccessDenied     Status = errorBit | 15
	Aborted          Status = errorBit | 21
)

// Error reports whether s is an error status.
func (s Status) Error() bool { return s&errorBit != 0 }

var statusNames = [...]string{
	1: "load error", 2: "invalid parameter", 3: "unsupported",
	4: "bad buffer size", 5: "buffer too small", 6: "not ready",
	7: "device error", 8: "write protected", 9: "out of resources",
	10: "volume corrupted", 11: "volume full", 12: "no media",
	13: "media changed", 14: "not found", 15: "access denied",
	16: "no response", 17: "no mapping", 18: "timeout", 19: "not started",
	20: "already started", 21: "aborted",
}

// warningNames are the warning statuses (UEFI 2.10, Appendix D, Table D-4).
var warningNames = [...]string{
	0: "success", 1: "warning: unknown glyph", 2: "warning: delete failure",
	3: "warning: write failure", 4: "warning: buffer too small",
	5: "warning: stale data", 6: "warning: file system",
	7: "warning: reset required",
}

// String names the status as the specification does, in lower case.
func (s Status) String() string {
	c := uint64(s &^ errorBit)
	names := warningNames[:]
	if s.Error() {
		names = statusNames[:]
	}
	if c < uint64(len(names)) && names[c] != "" {
		return names[c]
	}
	return "unknown status"
}

// GUID is an EFI_GUID (UEFI 2.10, Appendix A) in its in-memory layout.
type GUID struct {
	Data1 uint32
	Data2 uint16
	Data3 uint16
	Data4 [8]byte
}

// Protocol and table GUIDs (UEFI 2.10, sections named).
var (
	LoadedImageProtocolGUID      = GUID{0x5b1b31a1, 0x9562, 0x11d2, [8]byte{0x8e, 0x3f, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b}} // 9.1
	DevicePathProtocolGUID       = GUID{0x09576e91, 0x6d3f, 0x11d2, [8]byte{0x8e, 0x39, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b}} // 10.2
	SimpleTextOutProtocolGUID    = GUID{0x387477c2, 0x69c7, 0x11d2, [8]byte{0x8e, 0x39, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b}} // 12.4
	SimpleFileSystemProtocolGUID = GUID{0x964e5b22, 0x6459, 0x11d2, [8]byte{0x8e, 0x39, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b}} // 13.4
	FileInfoGUID                 = GUID{0x09576e92, 0x6d3f, 0x11d2, [8]byte{0x8e, 0x39, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b}} // 13.5.16
	ACPI20TableGUID              = GUID{0x8868e871, 0xe4f1, 0x11d3, [8]byte{0xbc, 0x22, 0x00, 0x80, 0xc7, 0x3c, 0x88, 0x81}} // 4.6.1
	ACPI10TableGUID              = GUID{0xeb9d2d30, 0x2d88, 0x11d3, [8]byte{0x9a, 0x16, 0x00, 0x90, 0x27, 0x3f, 0xc1, 0x4d}} // 4.6.1
)

// Offsets in EFI_SYSTEM_TABLE (UEFI 2.10, 4.3.1).
const (
	stFirmwareVendor   = 24
	stFirmwareRevision = 32
	stConIn            = 48
	stConOut           = 64
	stRuntimeServices  = 88
	stBootServices     = 96
	stNumberOfTables   = 104
	stConfigTable      = 112
)

// Offsets of the functions in EFI_BOOT_SERVICES (UEFI 2.10, 4.4.1).
const (
	bsAllocatePages      = 40
	bsFreePages          = 48
	bsGetMemoryMap       = 56
	bsAllocatePool       = 64
	bsFreePool           = 72
	bsHandleProtocol     = 152
	bsSetWatchdogTimer   = 256
	bsLocateHandleBuffer = 312
)

// Offsets of the functions in EFI_RUNTIME_SERVICES (UEFI 2.10, 4.5.1).
const (
	rtGetTime     = 24
	rtResetSystem = 104
)

// firmwareInfo is what the firmware handed over at the image entry point,
// and the image's place in memory.
type firmwareInfo struct {
	ImageHandle     uint64 // EFI_HANDLE of this image (RCX at entry)
	SystemTable     uint64 // EFI_SYSTEM_TABLE * (RDX at entry)
	BootServices    uint64
	RuntimeServices uint64
	ConIn           uint64 // EFI_SIMPLE_TEXT_INPUT_PROTOCOL * (0: none)
	ConOut          uint64
	ImageBase       uint64 // where the firmware loaded the image (LOADED_IMAGE.ImageBase)
	ImageSize       uint64 // bytes (LOADED_IMAGE.ImageSize)
	DeviceHandle    uint64 // the boot volume's handle (LOADED_IMAGE.DeviceHandle)
	Revision        uint32 // firmware revision (EFI_SYSTEM_TABLE.FirmwareRevision)
	vendor          [64]byte
}

// Firmware is filled by the entry code and Init.
var Firmware firmwareInfo

// Vendor returns the firmware vendor string (EFI_SYSTEM_TABLE.FirmwareVendor,
// converted from UCS-2; characters outside ASCII become '?').
func Vendor() string { return amd64.CString(Firmware.vendor[:]) }

// Pointer returns a pointer to the identity-mapped address pa: ptilab's
// one way to reach physical memory (the firmware's page tables and then
// goos's map physical memory at its own address; goos also maps the
// kernel's other mappings, which Pointer reaches too). It is written this
// way so that vet's unsafeptr check, which cannot know that pa is a
// physical address in the identity map, does not flag each use.
func Pointer(pa uint64) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&pa))
}

// Read64 reads the 8 bytes at the identity-mapped address pa.
func Read64(pa uint64) uint64 { return *(*uint64)(Pointer(pa)) }

// Read32 reads the 4 bytes at the identity-mapped address pa.
func Read32(pa uint64) uint32 { return *(*uint32)(Pointer(pa)) }

// Read16 reads the 2 bytes at the identity-mapped address pa.
func Read16(pa uint64) uint16 { return *(*uint16)(Pointer(pa)) }

// Read8 reads the byte at the identity-mapped address pa.
func Read8(pa uint64) uint8 { return *(*uint8)(Pointer(pa)) }

// Bytes returns the n bytes at the identity-mapped address pa.
func Bytes(pa uint64, n int) []byte {
	return unsafe.Slice((*byte)(Pointer(pa)), n)
}

func addr[T any](p *T) uint64 { return uint64(uintptr(unsafe.Pointer(p))) }

// Init reads the system table and the loaded-image protocol and disarms
// the boot manager's watchdog (UEFI 2.10, 7.5.1 SetWatchdogTimer: a boot
// option is started with a 5-minute watchdog that would reset the machine
// during a long run).
func Init() Status {
	st := Firmware.SystemTable
	Firmware.BootServices = Read64(st + stBootServices)
	Firmware.RuntimeServices = Read64(st + stRuntimeServices)
	Firmware.ConIn = Read64(st + stConIn)
	Firmware.ConOut = Read64(st + stConOut)
	Firmware.Revision = Read32(st + stFirmwareRevision)
	if v := Read64(st + stFirmwareVendor); v != 0 {
		for i := 0; i < len(Firmware.vendor)-1; i++ {
			c := Read16(v + uint64(2*i))
			if c == 0 {
				break
			}
			if c >= 0x80 {
				c = '?'
			}
			Firmware.vendor[i] = byte(c)
		}
	}
	if s := BootService(bsSetWatchdogTimer, 0, 0, 0, 0); s.Error() {
		return s
	}
	var li uint64
	if s := BootService(bsHandleProtocol, Firmware.ImageHandle, addr(&LoadedImageProtocolGUID), addr(&li)); s.Error() {
		return s
	}
	Firmware.DeviceHandle = Read64(li + 24)
	Firmware.ImageBase = Read64(li + 64)
	Firmware.ImageSize = Read64(li + 72)
	return Success
}

// BootService calls the boot service at offset off in EFI_BOOT_SERVICES.
func BootService(off uint64, args ...uint64) Status {
	return Status(Call(Read64(Firmware.BootServices+off), args...))
}

// RuntimeService calls the runtime service at offset off in
// EFI_RUNTIME_SERVICES.
func RuntimeService(off uint64, args ...uint64) Status {
	return Status(Call(Read64(Firmware.RuntimeServices+off), args...))
}

// Protocol calls the function at offset off in the protocol interface this,
// passing this as the first argument, as every protocol function takes it.
func Protocol(this, off uint64, args ...uint64) Status {
	var a [maxArgs]uint64
	a[0] = this
	n := copy(a[1:], args)
	return Status(Call(Read64(this+off), a[:n+1]...))
}

// HandleProtocol returns the interface of protocol guid on handle (UEFI
// 2.10, 7.3.7).
func HandleProtocol(handle uint64, guid *GUID) (uint64, Status) {
	var iface uint64
	s := BootService(bsHandleProtocol, handle, addr(guid), addr(&iface))
	return iface, s
}

// ConfigTable returns the address of the configuration table with the given
// GUID (UEFI 2.10, 4.6), or 0.
func ConfigTable(guid *GUID) uint64 {
	st := Firmware.SystemTable
	n := Read64(st + stNumberOfTables)
	t := Read64(st + stConfigTable)
	for i := uint64(0); i < n; i++ {
		e := t + i*24
		if *(*GUID)(Pointer(e)) == *guid {
			return Read64(e + 16)
		}
	}
	return 0
}

// Time is EFI_TIME (UEFI 2.10, 8.3.1).
type Time struct {
	Year       uint16
	Month      uint8
	Day        uint8
	Hour       uint8
	Minute     uint8
	Second     uint8
	_          uint8
	Nanosecond uint32
	TimeZone   int16 // minutes from UTC; 2047 = unspecified (local time)
	Daylight   uint8
	_          uint8
}

// GetTime reads the real-time clock through the runtime service (UEFI 2.10,
// 8.3.1).
func GetTime() (Time, Status) {
	var t Time
	s := RuntimeService(rtGetTime, addr(&t), 0)
	return t, s
}

// Reset types (UEFI 2.10, 8.5.1).
const (
	ResetCold     = 0
	ResetWarm     = 1
	ResetShutdown = 2
)

// ResetSystem resets or powers off the machine (UEFI 2.10, 8.5.1); it
// returns only if the firmware fails to.
func ResetSystem(kind uint64, status Status) {
	RuntimeService(rtResetSystem, kind, uint64(status), 0, 0)
}
