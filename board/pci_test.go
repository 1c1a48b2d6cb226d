package board

import (
	"encoding/binary"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// header is a type 0 configuration header for ParsePCIUART.
type header struct {
	vendor, device     uint16
	command            uint16
	class, sub, progIF uint8
	headerType         uint8
	bars               [pciBARs]uint32
}

func (h header) bytes() []byte {
	b := make([]byte, pciHeaderLen)
	binary.LittleEndian.PutUint16(b[pciVendorID:], h.vendor)
	binary.LittleEndian.PutUint16(b[pciDeviceID:], h.device)
	binary.LittleEndian.PutUint16(b[pciCommand:], h.command)
	binary.LittleEndian.PutUint16(b[pciCommand+2:], 0x0010) // status: capabilities list
	b[pciProgIF], b[pciSubclass], b[pciClass] = h.progIF, h.sub, h.class
	b[pciHeaderType] = h.headerType
	for i, v := range h.bars {
		binary.LittleEndian.PutUint32(b[pciBAR0+4*i:], v)
	}
	return b
}

// uartHeader is a 16550-compatible serial controller with decode on and
// the given BARs.
func uartHeader(vendor, device uint16, bars ...uint32) header {
	h := header{vendor: vendor, device: device, command: pciCommandIO | pciCommandMemory, class: 0x07, sub: 0x00, progIF: 0x02}
	copy(h.bars[:], bars)
	return h
}

func withHeader(h header, f func(*header)) header {
	f(&h)
	return h
}

func TestParsePCIUART(t *testing.T) {
	qemu := uartHeader(0x1b36, 0x0002, 0xc001) // QEMU's pci-serial: I/O BAR 0 at 0xc000
	qemuPort := Port{Base: 0xc000, Stride: 1, Width: 1, Baud: 115200, PCI: PCIFunction{VendorID: 0x1b36, DeviceID: 0x0002, ProgIF: 2}}
	// Intel AMT serial-over-LAN (7-series KT): I/O BAR 0, memory BAR 1.
	amt := uartHeader(0x8086, 0x1e3d, 0xf0e1, 0xf7e3a000)
	mmio := uartHeader(0x1c00, 0x3253, 0xfe000000)
	mmioPort := Port{MMIO: true, Base: 0xfe000000, Stride: 1, Width: 1, PCI: PCIFunction{VendorID: 0x1c00, DeviceID: 0x3253, ProgIF: 2}}
	for _, tt := range []struct {
		name   string
		h      header
		want   Port
		enable uint16
		why    string
	}{
		{"qemu pci-serial", qemu, qemuPort, 0, ""},
		{"I/O decode off: turned on", withHeader(qemu, func(h *header) { h.command = 0 }), qemuPort, pciCommandIO, ""},
		{"only memory decode on", withHeader(qemu, func(h *header) { h.command = pciCommandMemory }), qemuPort, pciCommandIO, ""},
		{"AMT SOL: the I/O BAR", amt, Port{Base: 0xf0e0, Stride: 1, Width: 1, Baud: 115200, PCI: PCIFunction{VendorID: 0x8086, DeviceID: 0x1e3d, ProgIF: 2}}, 0, ""},
		{"the only I/O BAR, not BAR 0", uartHeader(0x125b, 0x9100, 0xfe001000, 0xe001),
			Port{Base: 0xe000, Stride: 1, Width: 1, Baud: 115200, PCI: PCIFunction{VendorID: 0x125b, DeviceID: 0x9100, ProgIF: 2, BAR: 1}}, 0, ""},
		{"two memory BARs: BAR 0", uartHeader(0x1c00, 0x3253, 0xfe000000, 0xfe001000, 0xe001),
			mmioPort, 0, ""},
		{"two I/O BARs: BAR 0", uartHeader(0x9710, 0x9835, 0xe001, 0xe101),
			Port{Base: 0xe000, Stride: 1, Width: 1, Baud: 115200, PCI: PCIFunction{VendorID: 0x9710, DeviceID: 0x9835, ProgIF: 2}}, 0, ""},
		{"memory BAR 0: the firmware's divisor", mmio, mmioPort, 0, ""},
		{"memory decode off: turned on", withHeader(mmio, func(h *header) { h.command = pciCommandIO }), mmioPort, pciCommandMemory, ""},
		{"64-bit memory BAR below 4 GiB", uartHeader(0x1c00, 0x3253, 0xfe000004, 0), mmioPort, 0, ""},
		{"memory BAR at the top of 4 GiB", uartHeader(0x1c00, 0x3253, 0xfffffff0),
			withPort(mmioPort, func(p *Port) { p.Base = 0xfffffff0 }), 0, ""},
		{"64-bit memory BAR above 4 GiB", uartHeader(0x1c00, 0x3253, 0x00000004, 0x4), Port{}, 0, "memory BAR above 4 GiB, which the kernel does not map"},
		{"64-bit and an I/O BAR after it", uartHeader(0x1c00, 0x3253, 0x00000004, 0x4, 0xe001),
			Port{Base: 0xe000, Stride: 1, Width: 1, Baud: 115200, PCI: PCIFunction{VendorID: 0x1c00, DeviceID: 0x3253, ProgIF: 2, BAR: 2}}, 0, ""},
		{"prefetchable", uartHeader(0x1c00, 0x3253, 0xfe000008), Port{}, 0, "prefetchable memory BAR: not a UART's registers"},
		{"reserved memory type", uartHeader(0x1c00, 0x3253, 0xfe000002), Port{}, 0, "memory BAR of a reserved type"},
		{"memory BAR not assigned", uartHeader(0x1c00, 0x3253, 0x00000004, 0), Port{}, 0, "memory BAR not assigned (address 0)"},
		{"I/O BAR not assigned", uartHeader(0x1b36, 0x0002, 0x1), Port{}, 0, "I/O BAR not assigned (address 0)"},
		{"no BAR", uartHeader(0x1b36, 0x0002), Port{}, 0, "BAR 0 reads 0: not implemented or not assigned"},
		{"I/O BAR at the top of I/O space", uartHeader(0x1b36, 0x0002, 0xfff9),
			withPort(qemuPort, func(p *Port) { p.Base = 0xfff8 }), 0, ""},
		{"I/O BAR beyond 64 KiB", uartHeader(0x1b36, 0x0002, 0xfffd), Port{}, 0, "I/O BAR beyond the 64 KiB I/O space"},
		{"32-bit I/O BAR beyond 64 KiB", uartHeader(0x1b36, 0x0002, 0x10001), Port{}, 0, "I/O BAR beyond the 64 KiB I/O space"},
		{"legacy address, decode on", uartHeader(0x1b36, 0x0002, 0x3f9),
			withPort(qemuPort, func(p *Port) { p.Base = 0x3f8 }), 0, ""},
		{"legacy address, decode off", withHeader(uartHeader(0x1b36, 0x0002, 0x3f9), func(h *header) { h.command = 0 }),
			Port{}, 0, "I/O decode off and the BAR in the ISA range below 1000h: not turned on"},
		{"memory below 1 MiB, decode off", withHeader(uartHeader(0x1c00, 0x3253, 0xd0000), func(h *header) { h.command = 0 }),
			Port{}, 0, "memory decode off and the BAR below 1 MiB: not turned on"},
		{"16450", withHeader(qemu, func(h *header) { h.progIF = 0x01 }), withPort(qemuPort, func(p *Port) { p.PCI.ProgIF = 1 }), 0, ""},
		{"generic XT (8250)", withHeader(qemu, func(h *header) { h.progIF = 0x00 }), withPort(qemuPort, func(p *Port) { p.PCI.ProgIF = 0 }), 0, ""},
		{"16950", withHeader(qemu, func(h *header) { h.progIF = 0x06 }), withPort(qemuPort, func(p *Port) { p.PCI.ProgIF = 6 }), 0, ""},
		{"programming interface 07h", withHeader(qemu, func(h *header) { h.progIF = 0x07 }), Port{}, 0, "programming interface above 06h: not of the 8250 family"},
		{"multi-function device", withHeader(qemu, func(h *header) { h.headerType = 0x80 }), qemuPort, 0, ""},
		{"bridge header", withHeader(qemu, func(h *header) { h.headerType = 0x01 }), Port{}, 0, "not a type 0 configuration header"},
		{"parallel port", withHeader(qemu, func(h *header) { h.sub = 0x01 }), Port{}, 0, "not a serial controller (class 07h, subclass 00h)"},
		{"multiport serial", withHeader(qemu, func(h *header) { h.sub = 0x02 }), Port{}, 0, "not a serial controller (class 07h, subclass 00h)"},
		{"modem", withHeader(qemu, func(h *header) { h.sub = 0x03 }), Port{}, 0, "not a serial controller (class 07h, subclass 00h)"},
		{"network controller", withHeader(qemu, func(h *header) { h.class = 0x02 }), Port{}, 0, "not a serial controller (class 07h, subclass 00h)"},
		{"no function", withHeader(qemu, func(h *header) { h.vendor, h.device = 0xffff, 0xffff }), Port{}, 0, "no function there"},
		{"vendor 0", withHeader(qemu, func(h *header) { h.vendor = 0 }), Port{}, 0, "no function there"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, enable, why := ParsePCIUART(tt.h.bytes())
			assert.Equal(t, tt.why, why.String())
			if tt.why == "" {
				assert.Equal(t, PCIUsable, why)
				assert.Equal(t, tt.want, p)
				assert.Equal(t, tt.enable, enable, "command bits to set")
			} else {
				assert.Zero(t, enable, "nothing turned on for a UART not used")
			}
		})
	}
}

func withPort(p Port, f func(*Port)) Port {
	f(&p)
	return p
}

func TestParsePCIUARTShort(t *testing.T) {
	_, _, why := ParsePCIUART(uartHeader(0x1b36, 0x0002, 0xc001).bytes()[:pciHeaderLen-1])
	assert.Equal(t, PCIShort, why)
}

func TestPCIAddress(t *testing.T) {
	assert.Equal(t, uint32(0x80000000), pciAddress(0, 0, 0, 0))
	assert.Equal(t, uint32(0x8000f808), pciAddress(0, 31, 0, 0x0b), "device 31, the class dword")
	assert.Equal(t, uint32(0x80ffb304), pciAddress(0xff, 0x16, 3, pciCommand), "AMT's 00:16.3 on bus 255")
}

// fakeConfig is configuration space for scanPCI: the headers of the
// functions present; every other read finds nothing (all ones).
type fakeConfig map[[3]uint8]*[pciHeaderLen]byte

func (c fakeConfig) add(bus, dev, fn uint8, h header) {
	var b [pciHeaderLen]byte
	copy(b[:], h.bytes())
	c[[3]uint8{bus, dev, fn}] = &b
}

func (c fakeConfig) read32(bus, dev, fn, reg uint8) uint32 {
	if h := c[[3]uint8{bus, dev, fn}]; h != nil && int(reg) < len(h) {
		return le32(h[reg&^3:])
	}
	return 0xffffffff
}

func (c fakeConfig) write16(bus, dev, fn, reg uint8, v uint16) {
	binary.LittleEndian.PutUint16(c[[3]uint8{bus, dev, fn}][reg:], v)
}

func (c fakeConfig) command(bus, dev, fn uint8) uint16 {
	return le16(c[[3]uint8{bus, dev, fn}][pciCommand:])
}

// lowUART is a fake memory-mapped UART with byte-wide registers below
// 4 GiB (MAP_32BIT: the first 2 GiB), where a memory BAR the console
// uses must lie.
func lowUART(t *testing.T) []byte {
	b, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_32BIT)
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Munmap(b) })
	require.GreaterOrEqual(t, uintptr(unsafe.Pointer(&b[0])), uintptr(1<<20))
	return b[:8]
}

// The scan over a machine's functions: functions 1 to 7 only of a
// multi-function device, every bus, the serial controllers recorded in
// bus order with why each is not used; a BAR whose decode the firmware
// left off turned on for the run and off again at the end (restorePCI),
// the port then no longer written.
func TestScanPCI(t *testing.T) {
	u := lowUART(t)
	u[5] = 1<<5 | 1<<lsrTEMT // LSR: THRE and TEMT
	base := uint32(uintptr(unsafe.Pointer(&u[0])))
	savedPorts, savedN, savedUARTs, savedNU := ports, nports, pciUARTs, npciUARTs
	t.Cleanup(func() { ports, nports, pciUARTs, npciUARTs = savedPorts, savedN, savedUARTs, savedNU })
	nports, npciUARTs = 0, 0

	c := fakeConfig{}
	c.add(0, 0, 0, header{vendor: 0x8086, device: 0x0150, class: 0x06})
	// A single-function device that answers at every function number,
	// as some do: its functions 1 to 7 are not looked at.
	c.add(0, 1, 0, header{vendor: 0x8086, device: 0x1502, class: 0x02})
	c.add(0, 1, 3, uartHeader(0x8086, 0x1502, 0xfe100000))
	// AMT: HECI at 00:16.0, its serial-over-LAN UART at 00:16.3 (here
	// memory-mapped, at the fake), decode off.
	c.add(0, 0x16, 0, header{vendor: 0x8086, device: 0x1e3a, class: 0x07, sub: 0x80, headerType: 0x80})
	c.add(0, 0x16, 3, withHeader(uartHeader(0x8086, 0x1e3d, base), func(h *header) { h.headerType, h.command = 0x80, 0 }))
	c.add(0x80, 0, 0, withHeader(uartHeader(0x1c00, 0x3253, 0xe001), func(h *header) { h.progIF = 0x07 }))
	c.add(0xff, 0x1f, 7, withHeader(uartHeader(0x1c00, 0x3253, 0x4, 0), func(h *header) { h.headerType = 0x80 }))
	c.add(0xff, 0x1f, 0, header{vendor: 0x1c00, device: 0x3250, class: 0x08, headerType: 0x80})

	scanPCI(c)
	found := PCISerial()
	require.Len(t, found, 3)
	amt := PCIFunction{Bus: 0, Device: 0x16, Function: 3, VendorID: 0x8086, DeviceID: 0x1e3d, ProgIF: 2}
	assert.Equal(t, amt, found[0].Port.PCI)
	assert.Equal(t, PCIUsable, found[0].Why)
	assert.Equal(t, PCIProgIF, found[1].Why)
	assert.Equal(t, PCIFunction{Bus: 0x80, VendorID: 0x1c00, DeviceID: 0x3253, ProgIF: 7}, found[1].Port.PCI)
	assert.Equal(t, PCIMemUnassigned, found[2].Why)
	assert.Equal(t, uint8(7), found[2].Port.PCI.Function)

	require.Equal(t, 1, nports)
	p := &ports[0]
	assert.Equal(t, amt, p.PCI)
	assert.True(t, p.MMIO)
	assert.Equal(t, uint64(base), p.Base)
	assert.True(t, p.DecodeTurnedOn())
	assert.Equal(t, uint16(pciCommandMemory), c.command(0, 0x16, 3), "memory decode turned on")
	WriteSerial([]byte("a"))
	assert.Equal(t, byte('a'), u[0])

	restorePCI(c)
	assert.Zero(t, c.command(0, 0x16, 3), "the firmware's command register back")
	assert.False(t, p.DecodeTurnedOn())
	WriteSerial([]byte("b"))
	assert.Equal(t, byte('a'), u[0], "not written once its decode is off")
}

// Every reason has its words.
func TestPCIWhyString(t *testing.T) {
	assert.Empty(t, PCIUsable.String())
	for w := PCIShort; w <= PCINoUART; w++ {
		assert.NotEmpty(t, w.String(), "reason %d", w)
	}
	assert.Equal(t, "unknown reason", (PCINoUART + 1).String())
}
