package board

import "github.com/ptilab/ptilab/amd64"

// PCI configuration space through configuration mechanism #1 (PCI Local
// Bus 3.0, 3.2.2.3.2): the address (enable bit 31, bus, device, function,
// register) goes to CONFIG_ADDRESS, the dword comes from CONFIG_DATA (a
// narrower access at CONFIG_DATA plus the register's byte offset reads or
// writes only those bytes). It reaches the first 256 bytes of every
// function on buses 0 to 255, all a PC's 16550s need; the ACPI MCFG
// table's ECAM would add the extended space, which they do not use.
const (
	pciConfigAddress = 0xcf8
	pciConfigData    = 0xcfc
	pciEnable        = 1 << 31
)

// The type 0 configuration header (PCI Local Bus 3.0, 6.1, Figure 6-1),
// offsets in bytes.
const (
	pciVendorID   = 0x00
	pciDeviceID   = 0x02
	pciCommand    = 0x04
	pciProgIF     = 0x09 // programming interface
	pciSubclass   = 0x0a
	pciClass      = 0x0b
	pciHeaderType = 0x0e // bits 6:0 the layout (0: a device), bit 7 multi-function
	pciBAR0       = 0x10 // six base address registers, 4 bytes each
	pciHeaderLen  = 0x40 // the header: what ParsePCIUART reads

	pciHeaderLayout  = 0x7f
	pciMultiFunction = 0x80
	pciBARs          = 6
)

// Command register bits (PCI Local Bus 3.0, 6.2.2).
const (
	pciCommandIO     = 1 << 0 // I/O space decode
	pciCommandMemory = 1 << 1 // memory space decode
)

// Base address register bits (PCI Local Bus 3.0, 6.2.5.1): bit 0 set for
// I/O space (address in bits 31:2); for memory, bits 2:1 the type (00b
// 32-bit, 10b 64-bit with the next BAR the upper half, 01b and 11b
// reserved), bit 3 prefetchable, the address in bits 31:4.
const (
	barIO, barPrefetch            = 0x1, 0x8
	barType, barType32, barType64 = 0x6, 0x0, 0x4 // bits 2:1, and its values 00b and 10b
)

// The class code of a serial controller (PCI Code and ID Assignment
// Specification 1.x, class 07h "simple communication controllers",
// subclass 00h "serial controller"), whose programming interfaces 00h to
// 06h are the 8250 family: generic XT-compatible (8250), 16450, 16550,
// 16650, 16750, 16850 and 16950-compatible. All share the 8250's
// registers, which are all ptilab uses (16450 and 8250 have no FIFO: the
// FIFO control write goes nowhere). Subclass 02h (multiport) and 03h
// (modems) are left alone: where their UARTs sit is vendor-specific, and
// Linux's generic rule (drivers/tty/serial/8250/8250_pci.c,
// serial_pci_guess_board) does not guess multiport boards either.
const (
	pciClassCommunication = 0x07
	pciSubclassSerial     = 0x00
	pciProgIF16950        = 0x06
)

// PCIFunction identifies a PCI function and the UART it holds: its
// address, IDs, programming interface and the BAR ptilab took the UART's
// registers from.
type PCIFunction struct {
	Bus, Device, Function uint8
	VendorID, DeviceID    uint16
	ProgIF                uint8
	BAR                   uint8
}

// pciBAR is one base address register, decoded.
type pciBAR struct {
	raw      uint32 // as read; 0 for a BAR not implemented (or an unassigned 32-bit one)
	io       bool   // I/O space
	mem64    bool   // a 64-bit memory BAR: the next BAR is its upper half
	reserved bool   // a memory BAR of a reserved type (or 64-bit in the last BAR's place)
	prefetch bool   // prefetchable memory
	addr     uint64
}

// readBAR decodes BAR i of the configuration header cfg.
func readBAR(cfg []byte, i int) (b pciBAR) {
	b.raw = le32(cfg[pciBAR0+4*i:])
	if b.raw&barIO != 0 {
		b.io, b.addr = true, uint64(b.raw&^3)
		return b
	}
	b.addr = uint64(b.raw &^ 0xf)
	b.prefetch = b.raw&barPrefetch != 0
	switch b.raw & barType {
	case barType32:
	case barType64:
		if i+1 == pciBARs { // no upper half: malformed
			b.reserved = true
			break
		}
		b.mem64 = true
		b.addr |= uint64(le32(cfg[pciBAR0+4*(i+1):])) << 32
	default:
		b.reserved = true
	}
	return b
}

// PCIWhy is why a PCI function is not a serial console (ParsePCIUART,
// the scan): a number, so that the scan's findings hold no pointers
// (kernel code writes no heap pointers); String says it in words.
type PCIWhy uint8

const (
	PCIUsable          PCIWhy = iota // a serial console
	PCIShort                         // configuration header too short
	PCINoFunction                    // no function there
	PCINotSerial                     // not a serial controller (class 07h, subclass 00h)
	PCIProgIF                        // programming interface above 06h: not of the 8250 family
	PCIHeaderType                    // not a type 0 configuration header
	PCINoBAR                         // BAR 0 reads 0: not implemented or not assigned
	PCIIOUnassigned                  // I/O BAR not assigned (address 0)
	PCIIOBeyond64K                   // I/O BAR beyond the 64 KiB I/O space
	PCIMemReserved                   // memory BAR of a reserved type
	PCIMemPrefetchable               // prefetchable memory BAR: not a UART's registers
	PCIMemUnassigned                 // memory BAR not assigned (address 0)
	PCIMemAbove4G                    // memory BAR above 4 GiB, which the kernel does not map
	PCIIOLegacyOff                   // I/O decode off and the BAR in the ISA range below 1000h: not turned on
	PCIMemLegacyOff                  // memory decode off and the BAR below 1 MiB: not turned on
	PCITaken                         // decode off, and another console answers at its address: not turned on
	PCINoRoom                        // no room left among the console's serial ports
	PCINoUART                        // no UART answers there
)

var pciWhy = [...]string{
	PCIUsable:          "",
	PCIShort:           "configuration header too short",
	PCINoFunction:      "no function there",
	PCINotSerial:       "not a serial controller (class 07h, subclass 00h)",
	PCIProgIF:          "programming interface above 06h: not of the 8250 family",
	PCIHeaderType:      "not a type 0 configuration header",
	PCINoBAR:           "BAR 0 reads 0: not implemented or not assigned",
	PCIIOUnassigned:    "I/O BAR not assigned (address 0)",
	PCIIOBeyond64K:     "I/O BAR beyond the 64 KiB I/O space",
	PCIMemReserved:     "memory BAR of a reserved type",
	PCIMemPrefetchable: "prefetchable memory BAR: not a UART's registers",
	PCIMemUnassigned:   "memory BAR not assigned (address 0)",
	PCIMemAbove4G:      "memory BAR above 4 GiB, which the kernel does not map",
	PCIIOLegacyOff:     "I/O decode off and the BAR in the ISA range below 1000h: not turned on",
	PCIMemLegacyOff:    "memory decode off and the BAR below 1 MiB: not turned on",
	PCITaken:           "decode off, and another console answers at its address: not turned on",
	PCINoRoom:          "no room left among the console's serial ports",
	PCINoUART:          "no UART answers there",
}

// String says w in words ("" for PCIUsable).
func (w PCIWhy) String() string {
	if int(w) < len(pciWhy) {
		return pciWhy[w]
	}
	return "unknown reason"
}

// ParsePCIUART decides whether the PCI function whose configuration
// header is cfg (its first 64 bytes, as read, little-endian) is a
// 16550-compatible UART the console can use, and where its registers are.
// It returns the port (I/O port or memory-mapped, byte-wide and
// byte-spaced registers as Linux's generic PCI 8250 has them, and
// p.PCI's IDs, programming interface and BAR, filled in as far as they
// were read also when the port is not usable; the caller fills in the
// function's address), the command-register bits that must be set for the BAR to
// decode (pciCommandIO or pciCommandMemory; 0 when it does), or why not:
// no function there, not a serial controller of the 8250 family (class
// 07h, subclass 00h, programming interface 00h to 06h), not a type 0
// header, or a BAR the console cannot use.
//
// The BAR is Linux's choice for a serial controller it has no quirk for
// (drivers/tty/serial/8250/8250_pci.c: serial_pci_guess_board's first
// rule, else pbn_default): the only I/O BAR when there is exactly one and
// at most one memory BAR (Intel's AMT serial-over-LAN UART, 8086:1E3D
// and 8086:A13D, has its I/O BAR 0 and a memory BAR 1; QEMU's pci-serial
// an I/O BAR 0), else BAR 0. Not usable: a BAR not assigned (address 0);
// an I/O BAR beyond the 64 KiB I/O space; a memory BAR above 4 GiB (the
// kernel identity-maps physical memory below 4 GiB, MMIO included, and
// only RAM above), of a reserved type, or prefetchable (a UART's registers
// are not: reading them has side effects, and the firmware may map
// prefetchable windows write-combining).
//
// A UART in I/O space gets 115200 baud for the PC's 1.8432 MHz clock
// (Linux's base_baud for these, and what the AMT UART and the common PCI
// and PCIe serial cards present); one in memory space keeps the divisor
// the firmware set, whose clock is not known (as ParseSPCR does).
//
// A BAR whose decode the firmware left off (the command register's I/O or
// memory space bit clear: nothing obliges a firmware to enable a device
// it has no driver for, though OVMF does) is turned on, as Linux's
// pci_enable_device does for a driver: the firmware assigned the address
// from its bridges' windows, so no other device decodes it. Not in the
// ISA ranges (I/O below 1000h, memory below 1 MiB), where a legacy device
// may answer at the same address. Bus mastering stays off and the UART's
// interrupts masked (IER 0: ptilab polls); the run's end restores the
// command register (restorePCI).
func ParsePCIUART(cfg []byte) (p Port, enable uint16, why PCIWhy) {
	if len(cfg) < pciHeaderLen {
		return p, 0, PCIShort
	}
	vendor, device := le16(cfg[pciVendorID:]), le16(cfg[pciDeviceID:])
	if vendor == 0xffff || vendor == 0 {
		return p, 0, PCINoFunction
	}
	p.PCI = PCIFunction{VendorID: vendor, DeviceID: device, ProgIF: cfg[pciProgIF]}
	switch {
	case cfg[pciClass] != pciClassCommunication || cfg[pciSubclass] != pciSubclassSerial:
		return p, 0, PCINotSerial
	case cfg[pciProgIF] > pciProgIF16950:
		return p, 0, PCIProgIF
	case cfg[pciHeaderType]&pciHeaderLayout != 0:
		return p, 0, PCIHeaderType
	}
	var bars [pciBARs]pciBAR
	nio, nmem, firstIO := 0, 0, -1
	for i := 0; i < pciBARs; i++ {
		b := readBAR(cfg, i)
		bars[i] = b
		switch {
		case b.io:
			nio++
			if firstIO < 0 {
				firstIO = i
			}
		case b.raw != 0:
			nmem++
			if b.mem64 {
				i++
			}
		}
	}
	use := 0
	if nio == 1 && nmem <= 1 {
		use = firstIO
	}
	b := bars[use]
	cmd := le16(cfg[pciCommand:])
	p.Base, p.Stride, p.Width, p.PCI.BAR = b.addr, 1, 1, uint8(use)
	switch {
	case b.raw == 0:
		return p, 0, PCINoBAR
	case b.io && b.addr == 0:
		return p, 0, PCIIOUnassigned
	case b.io && b.addr+8 > 1<<16:
		return p, 0, PCIIOBeyond64K
	case b.io:
		p.Baud = 115200
		if cmd&pciCommandIO == 0 {
			enable = pciCommandIO
		}
	case b.reserved:
		return p, 0, PCIMemReserved
	case b.prefetch:
		return p, 0, PCIMemPrefetchable
	case b.addr == 0:
		return p, 0, PCIMemUnassigned
	case b.addr+8 > 4<<30:
		return p, 0, PCIMemAbove4G
	default:
		p.MMIO = true
		if cmd&pciCommandMemory == 0 {
			enable = pciCommandMemory
		}
	}
	switch {
	case enable == pciCommandIO && b.addr < 0x1000:
		return p, 0, PCIIOLegacyOff
	case enable == pciCommandMemory && b.addr < 1<<20:
		return p, 0, PCIMemLegacyOff
	}
	return p, enable, PCIUsable
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }

// pciAddress is CONFIG_ADDRESS for the dword at register reg of the
// function bus:dev.fn.
func pciAddress(bus, dev, fn, reg uint8) uint32 {
	return pciEnable | uint32(bus)<<16 | uint32(dev&31)<<11 | uint32(fn&7)<<8 | uint32(reg&^3)
}

// pciRead32 reads the dword at register reg (4-byte aligned) through
// mechanism #1.
func pciRead32(bus, dev, fn, reg uint8) uint32 {
	amd64.Out32(pciConfigAddress, pciAddress(bus, dev, fn, reg))
	return amd64.In32(pciConfigData)
}

// pciConfig reads and writes configuration space: pciMechanism1 in the
// image, a fake in host tests.
type pciConfig interface {
	read32(bus, dev, fn, reg uint8) uint32 // the dword at reg (4-byte aligned)
	// write16 writes the 16-bit register at reg (2-byte aligned) alone:
	// a dword write to the command register would also write the status
	// register beside it, whose error bits a 1 clears.
	write16(bus, dev, fn, reg uint8, v uint16)
}

// pciMechanism1 is configuration space through mechanism #1.
type pciMechanism1 struct{}

func (pciMechanism1) read32(bus, dev, fn, reg uint8) uint32 { return pciRead32(bus, dev, fn, reg) }

func (pciMechanism1) write16(bus, dev, fn, reg uint8, v uint16) {
	amd64.Out32(pciConfigAddress, pciAddress(bus, dev, fn, reg))
	amd64.Out16(pciConfigData+uint16(reg&2), v)
}

// pciAbsent reports whether a vendor and device ID dword read means no
// function: all ones (no device answered, PCI Local Bus 3.0, 6.2.1) or
// zero (some bridges), as Linux's pci_bus_generic_read_dev_vendor_id.
func pciAbsent(id uint32) bool {
	v := uint16(id)
	return v == 0xffff || v == 0
}

// PCIUART is a serial controller the PCI scan found: the port it offers
// and why the console does not use it (PCIUsable when it does).
type PCIUART struct {
	Port Port
	Why  PCIWhy
}

// maxPCIUARTs bounds the serial controllers the scan reports; the console
// uses at most as many as the ports array has room for.
const maxPCIUARTs = 8

var (
	pciUARTs  [maxPCIUARTs]PCIUART
	npciUARTs int
)

// PCISerial returns the 16550-compatible serial controllers the PCI scan
// found (InitSerial), used or not, in bus order.
func PCISerial() []PCIUART { return pciUARTs[:npciUARTs] }

// initPCISerial scans PCI through mechanism #1 (scanPCI) and restores
// CONFIG_ADDRESS afterwards.
func initPCISerial() {
	saved := amd64.In32(pciConfigAddress)
	scanPCI(pciMechanism1{})
	amd64.Out32(pciConfigAddress, saved)
}

// scanPCI looks at every function of buses 0 to 255 (functions 1 to 7
// only of multi-function devices, PCI Local Bus 3.0, 6.2.1) for serial
// controllers of the 8250 family and adds those ParsePCIUART and a
// scratch-register probe accept to the consoles. It costs 2 configuration
// reads for each of the 8192 device numbers and a few more per function
// found: milliseconds on a PC.
func scanPCI(c pciConfig) {
	for bus := 0; bus < 256; bus++ {
		for dev := uint8(0); dev < 32; dev++ {
			if pciAbsent(c.read32(uint8(bus), dev, 0, pciVendorID)) {
				continue
			}
			nfn := uint8(1)
			if c.read32(uint8(bus), dev, 0, pciHeaderType&^3)>>16&pciMultiFunction != 0 {
				nfn = 8
			}
			for fn := uint8(0); fn < nfn; fn++ {
				if fn > 0 && pciAbsent(c.read32(uint8(bus), dev, fn, pciVendorID)) {
					continue
				}
				if class := c.read32(uint8(bus), dev, fn, pciProgIF&^3); class>>16 != pciClassCommunication<<8|pciSubclassSerial {
					continue
				}
				pciUART(c, uint8(bus), dev, fn)
			}
		}
	}
}

// pciUART reads the serial controller at bus:dev.fn, adds it to the
// consoles when it can be one, and records what was found.
func pciUART(c pciConfig, bus, dev, fn uint8) {
	var cfg [pciHeaderLen]byte
	for r := 0; r < pciHeaderLen; r += 4 {
		v := c.read32(bus, dev, fn, uint8(r))
		cfg[r], cfg[r+1], cfg[r+2], cfg[r+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	p, enable, why := ParsePCIUART(cfg[:])
	p.PCI.Bus, p.PCI.Device, p.PCI.Function = bus, dev, fn
	if why == PCIUsable {
		why = usePCIUART(c, &p, enable, le16(cfg[pciCommand:]))
	}
	if npciUARTs < len(pciUARTs) {
		pciUARTs[npciUARTs] = PCIUART{p, why}
		npciUARTs++
	}
}

// usePCIUART turns on p's decode (the command-register bits enable, cmd
// the register as read) when it is off, checks that a 16550 answers and
// adds p to the consoles; it returns why not, its command register then
// restored.
func usePCIUART(c pciConfig, p *Port, enable, cmd uint16) PCIWhy {
	switch q := portAt(p); {
	case q != nil && enable != 0:
		return PCITaken
	case q == nil && nports == len(ports):
		return PCINoRoom
	}
	f := &p.PCI
	if enable != 0 {
		c.write16(f.Bus, f.Device, f.Function, pciCommand, cmd|enable)
		p.pciCommand, p.pciEnabled = cmd, enable
	}
	if !p.present() {
		if enable != 0 {
			c.write16(f.Bus, f.Device, f.Function, pciCommand, cmd)
			p.pciEnabled = 0
		}
		return PCINoUART
	}
	addPort(*p)
	return PCIUsable
}

// DecodeTurnedOn reports whether ptilab turned on the decode of p's PCI
// BAR, which the firmware had left off.
func (p *Port) DecodeTurnedOn() bool { return p.pciEnabled != 0 }

// restorePCI turns off again the decode ptilab turned on (scanPCI), each
// port's command register back to what the firmware left, and stops
// writing to those ports.
func restorePCI(c pciConfig) {
	for i := 0; i < nports; i++ {
		if p := &ports[i]; p.pciEnabled != 0 {
			f := &p.PCI
			c.write16(f.Bus, f.Device, f.Function, pciCommand, p.pciCommand)
			p.pciEnabled, p.off = 0, true
		}
	}
}
