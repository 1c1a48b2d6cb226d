package board

import "github.com/ptilab/ptilab/efi"

// The Serial Port Console Redirection table (ACPI signature "SPCR";
// Microsoft, "Serial Port Console Redirection Table", revisions 1 to 4;
// Linux drivers/acpi/spcr.c reads it the same way): the UART the firmware
// redirects its console to. Offsets in the table:
const (
	spcrLength        = 4  // table length (ACPI header)
	spcrRevision      = 8  // ACPI header revision
	spcrInterfaceType = 36 // the port subtype of the DBG2 table's serial types
	spcrBase          = 40 // Generic Address Structure of the registers (ACPI 6.5, 5.2.3.2)
	spcrBaudRate      = 58 // 0 as configured, 3 9600, 4 19200, 6 57600, 7 115200
	spcrClock         = 76 // revision 3 and later: UART input clock in Hz, 0 unknown
	spcrPreciseBaud   = 80 // revision 4 and later: the baud rate itself, 0 see spcrBaudRate
	spcrMinLength     = 80 // revisions 1 and 2
)

// Interface types that are 16550-compatible (Microsoft, "Debug Port
// Table 2", serial port subtypes).
const (
	spcr16550       = 0x00 // fully 16550-compatible
	spcr16550Subset = 0x01 // 16550 subset compatible with DBGP revision 1
	spcr16550GAS    = 0x12 // 16550-compatible, parameters in the Generic Address Structure
)

// Generic Address Structure address spaces (ACPI 6.5, 5.2.3.2).
const (
	gasMemory = 0
	gasIO     = 1
)

// ParseSPCR reads an SPCR table (t: the whole table, as its length field
// gives it) and returns the UART it names, or why the console cannot use
// it: not an SPCR table, too short, not 16550-compatible (a PL011, say),
// redirection off (base 0), an address space other than memory or I/O, a
// memory-mapped port above 4 GiB (the kernel maps physical memory up to
// 4 GiB, and RAM above), or an unknown baud rate code. Access width:
// memory-mapped registers are spaced and accessed as wide as the
// structure's access size says (1 byte when undefined), as Linux's "mmio",
// "mmio16", "mmio32".
//
// The baud rate is set (Port.Baud) only where the divisor for it is
// known: from the table's input clock (revision 3 and later), or, with no
// clock given (revision 1 or 2, or a clock of 0), for a UART in I/O space,
// which on a PC is clocked at 1.8432 MHz (the Super I/O and chipset COM
// ports, BMC and AMT serial-over-LAN UARTs: the PC/AT's divisor 1 for
// 115200 baud, Linux's BASE_BAUD for every I/O-port 8250). A
// memory-mapped UART without a clock keeps the divisor the firmware set
// (Baud 0; SPCRBaud says what the table names): such UARTs (Intel's LPSS
// UARTs, say, at 100 or 120 MHz) seldom run at 1.8432 MHz, and a divisor
// computed for it would garble the firmware's working console.
func ParseSPCR(t []byte) (p Port, why string) {
	switch {
	case len(t) < spcrMinLength:
		return p, "table too short"
	case string(t[:4]) != "SPCR":
		return p, "not an SPCR table"
	}
	if n := le32(t[spcrLength:]); n < spcrMinLength {
		return p, "bad table length"
	} else if uint64(n) < uint64(len(t)) {
		t = t[:n]
	}
	switch t[spcrInterfaceType] {
	case spcr16550, spcr16550Subset, spcr16550GAS:
	default:
		return p, "not a 16550-compatible UART"
	}
	g := t[spcrBase : spcrBase+12]
	space, access, base := g[0], g[3], le64(g[4:])
	if base == 0 {
		return p, "console redirection off (base address 0)"
	}
	switch space {
	case gasIO:
		if base > 0xfff8 {
			return p, "I/O port out of range"
		}
		p = Port{Base: base, Stride: 1, Width: 1}
	case gasMemory:
		if base >= 4<<30 {
			return p, "memory-mapped above 4 GiB"
		}
		w := uint8(1)
		switch access {
		case 2:
			w = 2
		case 3:
			w = 4
		}
		p = Port{MMIO: true, Base: base, Stride: w, Width: w}
	default:
		return p, "registers neither in memory nor in I/O space"
	}
	switch t[spcrBaudRate] {
	case 0:
	case 3:
		p.Baud = 9600
	case 4:
		p.Baud = 19200
	case 6:
		p.Baud = 57600
	case 7:
		p.Baud = 115200
	default:
		return Port{}, "unknown baud rate code"
	}
	rev := t[spcrRevision]
	if rev >= 3 && len(t) >= spcrClock+4 {
		p.Clock = le32(t[spcrClock:])
	}
	if rev >= 4 && len(t) >= spcrPreciseBaud+4 {
		if b := le32(t[spcrPreciseBaud:]); b != 0 {
			p.Baud = b
		}
	}
	if p.MMIO && p.Clock == 0 {
		p.Baud, p.SPCRBaud = 0, p.Baud
	}
	p.SPCR = true
	return p, ""
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func le64(b []byte) uint64 { return uint64(le32(b)) | uint64(le32(b[4:]))<<32 }

// spcrMaxLength bounds the bytes of an SPCR table read (revision 4 adds a
// namespace string after the 88 bytes of fields).
const spcrMaxLength = 512

// InitSPCR looks for the ACPI SPCR table and, when it names a usable
// 16550 that answers, adds it to the serial consoles with its baud rate
// (COM1 itself, when that is what it names). It returns the port and why
// it was not used: "no SPCR table", ParseSPCR's reasons, or "no UART
// answers there" (its scratch register does not keep what is written).
func InitSPCR() (Port, string) {
	a := findACPITable([4]byte{'S', 'P', 'C', 'R'})
	if a == 0 {
		return Port{}, "no SPCR table"
	}
	n := min(efi.Read32(a+spcrLength), spcrMaxLength)
	p, why := ParseSPCR(efi.Bytes(a, int(n)))
	if why != "" {
		return p, why
	}
	if !p.present() {
		return p, "no UART answers there"
	}
	addPort(p)
	return p, ""
}
