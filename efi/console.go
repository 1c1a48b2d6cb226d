package efi

import "unicode/utf8"

// Text output (UEFI 2.10, 12.4 Simple Text Output Protocol).

// Offsets in EFI_SIMPLE_TEXT_OUTPUT_PROTOCOL.
const (
	textReset        = 0
	textOutputString = 8
	textClearScreen  = 48
)

// Device-path node types (UEFI 2.10, 10.3.1) and the UART node (10.3.5.8).
const (
	dpHardware       = 1
	dpHardwareVendor = 4
	dpMessaging      = 3
	dpMessagingUART  = 14
	dpEnd            = 0x7f
	dpEndEntire      = 0xff // end of the whole path; 0x01 ends one instance
)

// LocateHandleBuffer search type ByProtocol (UEFI 2.10, 7.3.15).
const byProtocol = 2

// screens are the text outputs that draw on a display: every Simple Text
// Output instance with a device path that has no UART node. The console
// splitter behind ConOut (no device path) is skipped, and so is the serial
// terminal, so that each line reaches COM1 exactly once: the kernel writes
// COM1 itself. So is a text output whose device path is one hardware
// vendor node: U-Boot's one console, on its root node (VenHw with U-Boot's
// GUID), which writes wherever U-Boot's stdout goes, its serial port
// included.
var (
	screens  [4]uint64
	nscreens int
)

// FindScreens locates the display text outputs and clears them. It returns
// how many it found.
func FindScreens() int {
	var count, handles uint64
	s := BootService(bsLocateHandleBuffer, byProtocol, addr(&SimpleTextOutProtocolGUID), 0, addrOf(&count), addrOf(&handles))
	if s.Error() {
		return 0
	}
	for i := uint64(0); i < count && nscreens < len(screens); i++ {
		h := Read64(handles + 8*i)
		dp, s := HandleProtocol(h, &DevicePathProtocolGUID)
		if s.Error() || hasUART(dp) || vendorOnly(dp) {
			continue
		}
		out, s := HandleProtocol(h, &SimpleTextOutProtocolGUID)
		if s.Error() {
			continue
		}
		screens[nscreens] = out
		nscreens++
		Protocol(out, textClearScreen)
	}
	BootService(bsFreePool, handles)
	return nscreens
}

// hasUART reports whether the device path at dp has a UART node, in any of
// its instances.
func hasUART(dp uint64) bool {
	for n := 0; n < 64; n++ {
		typ, sub := Read8(dp), Read8(dp+1)
		if typ == dpEnd && sub == dpEndEntire {
			return false
		}
		if typ == dpMessaging && sub == dpMessagingUART {
			return true
		}
		l := uint64(Read16(dp + 2))
		if l < 4 {
			return false
		}
		dp += l
	}
	return false
}

// Screens returns how many display text outputs WriteScreens writes to.
func Screens() int { return nscreens }

// WriteScreens draws p (UTF-8; characters outside UCS-2 become '?') on every
// display text output, turning "\n" into "\r\n".
func WriteScreens(p []byte) {
	if nscreens == 0 {
		return
	}
	base, buf := Bounce()
	for len(p) > 0 {
		n := 0 // bytes of buf filled, UCS-2
		for len(p) > 0 && n+8 <= len(buf) {
			r, size := utf8.DecodeRune(p)
			p = p[size:]
			if r == '\n' {
				buf[n], buf[n+1] = '\r', 0
				n += 2
			}
			if r > 0xffff {
				r = '?'
			}
			buf[n], buf[n+1] = byte(r), byte(r>>8)
			n += 2
		}
		buf[n], buf[n+1] = 0, 0
		for i := 0; i < nscreens; i++ {
			Protocol(screens[i], textOutputString, base)
		}
	}
}

// vendorOnly reports whether the device path at dp is a single hardware
// vendor node (UEFI 2.10, 10.3.2.4), as U-Boot's root node, which carries
// its console.
func vendorOnly(dp uint64) bool {
	if Read8(dp) != dpHardware || Read8(dp+1) != dpHardwareVendor {
		return false
	}
	l := uint64(Read16(dp + 2))
	return l >= 4 && Read8(dp+l) == dpEnd && Read8(dp+l+1) == dpEndEntire
}
