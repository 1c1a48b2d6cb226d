package efi

// Text input (UEFI 2.10, 12.3 Simple Text Input Protocol): the console's
// keyboards, which on a PC include the serial terminal where the firmware
// has one (OVMF: its ConIn splitter has the PS/2 keyboard and COM1).

// Offsets in EFI_SIMPLE_TEXT_INPUT_PROTOCOL (UEFI 2.10, 12.3.1).
const (
	inReadKeyStroke = 8
)

// Offset of EFI_BOOT_SERVICES.Stall (UEFI 2.10, 4.4.1).
const bsStall = 248

// Key is an EFI_INPUT_KEY (UEFI 2.10, 12.3.3): a scan code (0 for a
// printable key) and a UCS-2 character (0 for a scan code).
type Key struct {
	ScanCode    uint16
	UnicodeChar uint16
}

// ReadKey returns the next keystroke of the console input
// (EFI_SYSTEM_TABLE.ConIn, ReadKeyStroke), or false when none is
// waiting (EFI_NOT_READY) or the firmware has no console input.
func ReadKey() (Key, bool) {
	if Firmware.ConIn == 0 {
		return Key{}, false
	}
	var k Key
	s := Protocol(Firmware.ConIn, inReadKeyStroke, addr(&k))
	return k, s == Success
}

// HasConsoleInput reports whether the firmware has a console input
// (EFI_SYSTEM_TABLE.ConIn) to read keys from.
func HasConsoleInput() bool { return Firmware.ConIn != 0 }

// Stall waits us microseconds in the firmware (UEFI 2.10, 7.5.2 Stall),
// its timer interrupt enabled.
func Stall(us uint64) Status { return BootService(bsStall, us) }
