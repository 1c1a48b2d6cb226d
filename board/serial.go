package board

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/usbarmory/tamago/soc/intel/uart"
)

// The serial console: COM1 and COM2 (the 16550s at I/O ports 0x3f8 and
// 0x2f8) when they exist, the 16550-compatible UARTs on PCI (pci.go:
// Intel AMT's serial-over-LAN, PCI and PCIe serial cards) and the UART
// the firmware's ACPI SPCR table names (spcr.go), which many machines
// without a legacy COM1 have: at another I/O port or memory-mapped. Every
// write goes to each port found, byte by byte to all ports in turn, so
// that the ports send at the same time and a write takes as long as the
// slowest port needs, not the sum; every wait on a port is bounded, so a
// UART that never drains cannot hang the console: a port that keeps its
// transmitter full for txSpins reads is given up.

// Port is a 16550-compatible UART (PC16550D data sheet): its registers at
// an I/O port or memory-mapped at an identity-mapped physical address,
// Stride bytes apart and accessed Width bytes wide (memory-mapped ports
// only; I/O ports are byte-wide and byte-spaced).
type Port struct {
	MMIO   bool
	Base   uint64
	Stride uint8  // bytes between registers: 1, 2 or 4
	Width  uint8  // access width in bytes: 1, 2 or 4
	Baud   uint32 // bits per second set at init; 0: as the firmware left it
	Clock  uint32 // input clock in Hz, 0: the PC's 1.8432 MHz
	SPCR   bool   // named by the ACPI SPCR table
	// SPCRBaud is the baud rate the SPCR table names for a UART whose
	// divisor is left as the firmware set it (Baud 0: no input clock
	// known; ParseSPCR), 0 otherwise.
	SPCRBaud uint32
	COM      uint8       // 1 or 2: probed at COM1's or COM2's address; 0 otherwise
	PCI      PCIFunction // the PCI function it is on (PCI.VendorID 0: none)

	pciCommand uint16 // the command register as the firmware left it, when ptilab turned decode on
	pciEnabled uint16 // the decode bits ptilab turned on (restorePCI turns them off)
	stuck      bool   // its transmitter never drained: given up
	off        bool   // its decode turned off again at the end: not written
}

// 16550 registers and bits beyond those tamago's driver names (PC16550D
// data sheet).
const (
	uartDLL   = 0 // divisor latch, low byte (with LCR.DLAB)
	uartDLM   = 1 // divisor latch, high byte (with LCR.DLAB)
	uartSCR   = 7 // scratch register
	lsrTEMT   = 6 // LSR: transmitter empty (holding and shift registers)
	lcrDLAB   = 0x80
	lcr8N1    = 0x03
	fcrInit   = 0xc7 // enable and clear the FIFOs, 14-byte trigger
	mcrDTRRTS = 1<<uart.MCR_DTR | 1<<uart.MCR_RTS | 1<<uart.MCR_INTEN

	// pcUARTClock is the PC UARTs' input clock: 1.8432 MHz, 16 times
	// 115200 baud.
	pcUARTClock = 1843200
)

// COM1 and COM2 are the first two PC serial ports, 115200 8N1 (COM2 is
// where BMCs often put their serial-over-LAN).
var (
	COM1 = Port{Base: 0x3f8, Stride: 1, Width: 1, Baud: 115200, COM: 1}
	COM2 = Port{Base: 0x2f8, Stride: 1, Width: 1, Baud: 115200, COM: 2}
)

// ports are the serial consoles found (InitSerial, InitSPCR): room for
// COM1, COM2, the SPCR's UART and a few PCI ones, each costing every
// console byte an LSR read and a THR write.
var (
	ports  [6]Port
	nports int
)

func (p *Port) in(reg uint64) uint8 {
	a := p.Base + reg*uint64(p.Stride)
	if !p.MMIO {
		return amd64.In8(uint16(a))
	}
	switch p.Width {
	case 4:
		return uint8(amd64.MMIORead32(uintptr(a)))
	case 2:
		return uint8(amd64.MMIORead16(uintptr(a)))
	}
	return amd64.MMIORead8(uintptr(a))
}

func (p *Port) out(reg uint64, v uint8) {
	a := p.Base + reg*uint64(p.Stride)
	if !p.MMIO {
		amd64.Out8(uint16(a), v)
		return
	}
	switch p.Width {
	case 4:
		amd64.MMIOWrite32(uintptr(a), uint32(v))
	case 2:
		amd64.MMIOWrite16(uintptr(a), uint16(v))
	default:
		amd64.MMIOWrite8(uintptr(a), v)
	}
}

// present reports whether a 16550 answers at p: its scratch register
// holds what is written to it (a missing I/O port reads 0xff).
func (p *Port) present() bool {
	for _, v := range [...]uint8{0x5a, 0xa5} {
		p.out(uartSCR, v)
		if p.in(uartSCR) != v {
			return false
		}
	}
	return true
}

// Divisor returns the baud-rate divisor of a 16550 with input clock clock
// (Hz, 0 for the PC's 1.8432 MHz) for baud bits per second: clock / (16 *
// baud), rounded to the nearest, at least 1 (PC16550D data sheet,
// "Programmable Baud Generator"); 0 when baud is 0.
func Divisor(clock, baud uint32) uint16 {
	if baud == 0 {
		return 0
	}
	if clock == 0 {
		clock = pcUARTClock
	}
	d := (uint64(clock) + 8*uint64(baud)) / (16 * uint64(baud))
	return uint16(min(max(d, 1), 0xffff))
}

// init programs p for 8N1 at its baud rate (its divisor left alone when
// Baud is 0), enables the FIFOs, masks its interrupts and raises DTR and
// RTS.
func (p *Port) init() {
	p.out(uart.IER, 0)
	if d := Divisor(p.Clock, p.Baud); d != 0 {
		p.out(uart.LCR, lcrDLAB)
		p.out(uartDLL, uint8(d))
		p.out(uartDLM, uint8(d>>8))
	}
	p.out(uart.LCR, lcr8N1)
	p.out(uart.FCR, fcrInit)
	p.out(uart.MCR, mcrDTRRTS)
}

// txSpins bounds the wait for room in a port's transmitter: far more LSR
// reads than a full 16-byte FIFO takes to go out at 9600 baud (17 ms) on
// any machine, and under a second even at a microsecond per read.
const txSpins = 1 << 20

// tx sends c, after waiting at most txSpins reads for the transmitter
// holding register to empty (LSR.THRE); a port that never empties is
// given up.
func (p *Port) tx(c byte) {
	if p.stuck || p.off {
		return
	}
	for i := 0; p.in(uart.LSR)&(1<<uart.LSR_THRE) == 0; i++ {
		if i == txSpins {
			p.stuck = true
			return
		}
	}
	p.out(uart.THR, c)
}

// drain waits, at most txSpins reads, until p has sent its last byte
// (LSR.TEMT).
func (p *Port) drain() {
	for i := 0; !p.stuck && !p.off && i < txSpins && p.in(uart.LSR)&(1<<lsrTEMT) == 0; i++ {
	}
}

// portAt returns the console with p's registers, or nil.
func portAt(p *Port) *Port {
	for i := 0; i < nports; i++ {
		if q := &ports[i]; q.MMIO == p.MMIO && q.Base == p.Base {
			return q
		}
	}
	return nil
}

// addPort programs p and adds it to the consoles, unless it is already
// one (the same registers) or there is no room: then the existing one
// takes p's SPCR mark, its PCI identity and its baud rate, if it has one.
func addPort(p Port) {
	if q := portAt(&p); q != nil {
		q.SPCR = q.SPCR || p.SPCR
		if q.SPCRBaud == 0 {
			q.SPCRBaud = p.SPCRBaud
		}
		if q.PCI.VendorID == 0 {
			q.PCI = p.PCI
		}
		if p.Baud != 0 {
			q.Baud, q.Clock = p.Baud, p.Clock
			q.init()
		}
		return
	}
	if nports == len(ports) {
		return
	}
	p.init()
	ports[nports] = p
	nports++
}

// InitSerial finds the serial consoles that need no firmware table: COM1
// and COM2, probed through their scratch registers and, where present,
// programmed for 115200 baud 8N1 (the firmware may not have), and the
// 16550-compatible UARTs on PCI (scanPCI; PCISerial says what it found).
// It reports whether COM1 exists; without any port (and without an SPCR
// one) serial writes are dropped.
func InitSerial() bool {
	com1 := false
	for _, p := range [...]Port{COM1, COM2} {
		if p.present() {
			addPort(p)
			com1 = com1 || p.COM == 1
		}
	}
	initPCISerial()
	return com1
}

// SerialPresent reports whether the console has a serial port.
func SerialPresent() bool { return nports > 0 }

// SerialPorts returns the serial consoles (COM1 first when present) and
// whether each was given up.
func SerialPorts() []Port { return ports[:nports] }

// Stuck reports whether the port was given up: its transmitter never
// drained.
func (p *Port) Stuck() bool { return p.stuck }

// WriteSerial writes b to every serial console, turning "\n" into
// "\r\n": each byte to every port in turn, so that while the CPU waits
// for room in one port's transmitter the others send.
func WriteSerial(b []byte) {
	for _, c := range b {
		if c == '\n' {
			txAll('\r')
		}
		txAll(c)
	}
}

// txAll sends c to every serial console.
func txAll(c byte) {
	for i := 0; i < nports; i++ {
		ports[i].tx(c)
	}
}

// DrainSerial waits until every serial console has sent its last byte
// (LSR.TEMT, PC16550D data sheet), each at most txSpins reads: a power-off
// or reset right after the last write would lose what the FIFO still holds
// (under Bochs, which times its UART, the PTILAB-END line's newline).
func DrainSerial() {
	for i := 0; i < nports; i++ {
		ports[i].drain()
	}
}
