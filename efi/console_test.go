package efi

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dpNode returns a device-path node (UEFI 2.10, 10.2): type, subtype, a
// 16-bit length that covers the header, and the body; length is the value
// written in the header, the node's real size is 4+len(body).
func dpNode(typ, sub byte, length uint16, body int) []byte {
	b := make([]byte, 4+body)
	b[0], b[1] = typ, sub
	binary.LittleEndian.PutUint16(b[2:], length)
	for i := 4; i < len(b); i++ {
		b[i] = 0xcc
	}
	return b
}

var (
	nodeACPI     = dpNode(2, 1, 12, 8)   // PciRoot(0)
	nodePCI      = dpNode(1, 1, 6, 2)    // Pci(0x1f,0x0)
	nodeSerial   = dpNode(2, 1, 12, 8)   // Serial(0) (ACPI PNP0501)
	nodeUART     = dpNode(3, 14, 19, 15) // Uart(115200,8,N,1)
	nodeTerminal = dpNode(3, 10, 20, 16) // VenVt100
	nodeMAC      = dpNode(3, 11, 37, 33) // MAC: messaging, not a UART
	nodeAcpiAdr  = dpNode(2, 3, 8, 4)    // AcpiAdr (display)
	nodeUARTType = dpNode(1, 14, 4, 0)   // hardware node with UART's subtype
	nodeEnd      = dpNode(0x7f, 0xff, 4, 0)
	nodeEndInst  = dpNode(0x7f, 0x01, 4, 0) // end of one instance, more follow
)

func path(nodes ...[]byte) []byte {
	var b []byte
	for _, n := range nodes {
		b = append(b, n...)
	}
	// Guard bytes: a reader that runs past the path finds a UART node.
	return heapBytes(append(b, nodeUART...))
}

func TestHasUART(t *testing.T) {
	tests := []struct {
		name string
		dp   []byte
		want bool
	}{
		{"serial console, UART in the middle", path(nodeACPI, nodePCI, nodeSerial, nodeUART, nodeTerminal, nodeEnd), true},
		{"UART first", path(nodeUART, nodeEnd), true},
		{"UART in the second instance", path(nodeACPI, nodeAcpiAdr, nodeEndInst, nodeACPI, nodeSerial, nodeUART, nodeEnd), true},
		{"two instances, no UART", path(nodeACPI, nodeAcpiAdr, nodeEndInst, nodeACPI, nodePCI, nodeEnd), false},
		{"UART last before end", path(nodeACPI, nodePCI, nodeUART, nodeEnd), true},
		{"display, no UART", path(nodeACPI, nodePCI, nodeAcpiAdr, nodeEnd), false},
		{"network, messaging but not UART", path(nodeACPI, nodePCI, nodeMAC, nodeEnd), false},
		{"UART subtype in another type", path(nodeUARTType, nodeEnd), false},
		{"empty path", path(nodeEnd), false},
		{"malformed length 0", path(nodeACPI, dpNode(1, 1, 0, 0)), false},
		{"malformed length 3", path(nodeACPI, dpNode(1, 1, 3, 0)), false},
		// Length 2: a reader that hopped 2 bytes would land on a node
		// {2, 0, len 4} and then on the UART.
		{"malformed length 2", path(nodeACPI, []byte{1, 1, 2, 0, 4, 0}, nodeUART, nodeEnd), false},
		{"UART node with a bad length still counts", path(nodeACPI, dpNode(3, 14, 0, 0)), true},
		{"63 nodes then UART", path(append(bytes.Repeat(dpNode(1, 1, 4, 0), 63), nodeUART...)), true},
		{"64 nodes without end", path(bytes.Repeat(dpNode(1, 1, 4, 0), 64)), false},
		{"100 nodes without end", path(bytes.Repeat(dpNode(1, 1, 4, 0), 100)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, hasUART(hostAddr(tt.dp)))
			runtime.KeepAlive(tt.dp)
		})
	}
}

func TestVendorOnly(t *testing.T) {
	venHw := dpNode(1, 4, 20, 16) // VenHw(GUID): U-Boot's root node
	tests := []struct {
		name string
		dp   []byte
		want bool
	}{
		{"U-Boot's console: VenHw alone", path(venHw, nodeEnd), true},
		{"VenHw then more", path(venHw, nodePCI, nodeEnd), false},
		{"VenHw then another instance", path(venHw, nodeEndInst, nodeACPI, nodeEnd), false},
		{"display", path(nodeACPI, nodePCI, nodeAcpiAdr, nodeEnd), false},
		{"messaging vendor node, not hardware", path(dpNode(3, 10, 20, 16), nodeEnd), false},
		{"empty path", path(nodeEnd), false},
		{"VenHw with a bad length", path(dpNode(1, 4, 0, 16), nodeEnd), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, vendorOnly(hostAddr(tt.dp)))
			runtime.KeepAlive(tt.dp)
		})
	}
}

// setBounce points the bounce buffer at a Go byte slice of n bytes filled
// with 0xee, and restores the old one when the test ends.
func setBounce(t *testing.T, n int) []byte {
	t.Helper()
	saved := bounce
	buf := heapBytes(bytes.Repeat([]byte{0xee}, n))
	bounce.base, bounce.size = hostAddr(buf), uint64(n)
	t.Cleanup(func() {
		bounce = saved
		runtime.KeepAlive(buf)
	})
	return buf
}

func TestBounce(t *testing.T) {
	buf := setBounce(t, 64)
	base, b := Bounce()
	assert.Equal(t, hostAddr(buf), base)
	require.Len(t, b, 64)
	b[5] = 1
	assert.Equal(t, byte(1), buf[5], "Bounce returns the buffer itself")
}

// ucs2 returns s as little-endian UCS-2 bytes, NUL-terminated.
func ucs2(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return append(b, 0, 0)
}

// TestUCS2Path converts each path in a bounce buffer of 256 bytes and in
// one that it exactly fits, its characters and the NUL.
func TestUCS2Path(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // as UCS-2 after conversion
	}{
		{"plain", "ptilab.plan", "ptilab.plan"},
		{"slashes", "/EFI/BOOT/BOOTX64.EFI", `\EFI\BOOT\BOOTX64.EFI`},
		{"backslash kept", `a\b/c`, `a\b\c`},
		{"empty", "", ""},
		{"one character", "a", "a"},
		{"seven characters", "abcdefg", "abcdefg"},
		{"Latin-1", "café/naïve", `café\naïve`},
		{"BMP", "€→日本", "€→日本"},
		{"multibyte counted as one character", "日本語", "日本語"},
		{"above U+FFFF", "a😀b𝄞", "a?b?"},
		{"invalid UTF-8", "a\xffb", "a\ufffdb"},
	}
	for _, tt := range tests {
		want := ucs2(tt.want)
		for _, size := range []int{256, len(want)} {
			t.Run(fmt.Sprintf("%s/%d bytes", tt.name, size), func(t *testing.T) {
				buf := setBounce(t, size)
				addr, ok := ucs2Path([]byte(tt.in))
				require.True(t, ok)
				assert.Equal(t, hostAddr(buf), addr, "returns the bounce buffer's address")
				assert.Equal(t, want, buf[:len(want)])
				// Nothing past the NUL is written.
				assert.Equal(t, bytes.Repeat([]byte{0xee}, len(buf)-len(want)), buf[len(want):])
			})
		}
	}
}

// TestUCS2PathTooLong: a path whose characters and NUL do not fit the
// bounce buffer is refused.
func TestUCS2PathTooLong(t *testing.T) {
	tests := []struct {
		name string
		size int
		path string
	}{
		{"one character too many", 16, "abcdefgh"},
		{"one character, no room for NUL", 3, "a"},
		{"long path", 256, strings.Repeat("x/", 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setBounce(t, tt.size)
			addr, ok := ucs2Path([]byte(tt.path))
			assert.False(t, ok)
			assert.Zero(t, addr)
		})
	}
}

func TestWriteScreensWithoutScreens(t *testing.T) {
	savedN, savedS := nscreens, screens
	t.Cleanup(func() { nscreens, screens = savedN, savedS })
	nscreens = 0
	screens = [4]uint64{0x1000, 0x2000, 0x3000, 0x4000} // never called

	buf := setBounce(t, 64)
	WriteScreens([]byte("hello, world\n"))
	WriteScreens(nil)
	assert.Equal(t, bytes.Repeat([]byte{0xee}, 64), buf, "bounce buffer untouched")
	assert.Equal(t, 0, Screens())

	// Not even the bounce buffer is looked at: with none set up it still
	// returns.
	bounce.base, bounce.size = 0, 0
	assert.NotPanics(t, func() { WriteScreens([]byte("x")) })
}
