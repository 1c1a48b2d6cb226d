package board

import (
	"bufio"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixture reads a table from testdata: iasl's "Raw Table Data" lines
// ("0000: 53 50 43 52 ..."), '#' comments. Its checksum must hold (ACPI
// 6.5, 5.2.6: all bytes sum to 0), which checks the transcription.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	var out []byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		_, data, ok := strings.Cut(line, ":")
		require.True(t, ok, "line %q", line)
		b, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(data), " ", ""))
		require.NoError(t, err, "line %q", line)
		out = append(out, b...)
	}
	require.NoError(t, sc.Err())
	sum := byte(0)
	for _, b := range out {
		sum += b
	}
	require.Zero(t, sum, "%s: checksum", name)
	require.Equal(t, int(le32(out[spcrLength:])), len(out), "%s: length field", name)
	return out
}

func TestParseSPCR(t *testing.T) {
	for _, tt := range []struct {
		file string
		want Port
		why  string
	}{
		{"spcr-hyperv-gen2.txt", Port{Base: 0x3f8, Stride: 1, Width: 1, Baud: 115200, SPCR: true}, ""},
		// Memory-mapped without an input clock: the firmware's divisor stays.
		{"spcr-qemu-riscv64-virt-rev2.txt", Port{MMIO: true, Base: 0x10000000, Stride: 1, Width: 1, SPCRBaud: 115200, SPCR: true}, ""},
		{"spcr-qemu-riscv64-virt-rev4.txt", Port{MMIO: true, Base: 0x10000000, Stride: 1, Width: 1, SPCRBaud: 115200, SPCR: true}, ""},
		{"spcr-ampere-altra.txt", Port{}, "not a 16550-compatible UART"},
		{"spcr-qemu-aarch64-virt.txt", Port{}, "not a 16550-compatible UART"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			p, why := ParseSPCR(fixture(t, tt.file))
			assert.Equal(t, tt.why, why)
			if tt.why == "" {
				assert.Equal(t, tt.want, p)
			}
		})
	}
}

// Variations of a real table: each field ParseSPCR reads.
func TestParseSPCRFields(t *testing.T) {
	base := fixture(t, "spcr-hyperv-gen2.txt")
	rev4 := fixture(t, "spcr-qemu-riscv64-virt-rev4.txt")
	edit := func(tab []byte, f func(b []byte)) []byte {
		b := append([]byte{}, tab...)
		f(b)
		return b
	}
	for _, tt := range []struct {
		name string
		tab  []byte
		want Port
		why  string
	}{
		{"short", base[:79], Port{}, "table too short"},
		{"signature", edit(base, func(b []byte) { copy(b, "DBG2") }), Port{}, "not an SPCR table"},
		{"length", edit(base, func(b []byte) { b[spcrLength] = 40 }), Port{}, "bad table length"},
		{"subset", edit(base, func(b []byte) { b[spcrInterfaceType] = 1 }), Port{Base: 0x3f8, Stride: 1, Width: 1, Baud: 115200, SPCR: true}, ""},
		{"off", edit(base, func(b []byte) { clear(b[spcrBase+4 : spcrBase+12]) }), Port{}, "console redirection off (base address 0)"},
		{"COM2 9600", edit(base, func(b []byte) { b[spcrBase+5] = 2; b[spcrBaudRate] = 3 }), Port{Base: 0x2f8, Stride: 1, Width: 1, Baud: 9600, SPCR: true}, ""},
		{"as configured", edit(base, func(b []byte) { b[spcrBaudRate] = 0 }), Port{Base: 0x3f8, Stride: 1, Width: 1, SPCR: true}, ""},
		{"bad baud", edit(base, func(b []byte) { b[spcrBaudRate] = 5 }), Port{}, "unknown baud rate code"},
		{"PCI config space", edit(base, func(b []byte) { b[spcrBase] = 2 }), Port{}, "registers neither in memory nor in I/O space"},
		{"mmio32", edit(rev4, func(b []byte) { b[spcrBase+3] = 3; b[spcrBase+7] = 0xfe }), Port{MMIO: true, Base: 0xfe000000, Stride: 4, Width: 4, SPCRBaud: 115200, SPCR: true}, ""},
		{"mmio above 4 GiB", edit(rev4, func(b []byte) { b[spcrBase+8] = 1 }), Port{}, "memory-mapped above 4 GiB"},
		{"precise baud and clock", edit(rev4, func(b []byte) {
			copy(b[spcrClock:], []byte{0x00, 0x1b, 0xb7, 0x00})       // 12 MHz
			copy(b[spcrPreciseBaud:], []byte{0x00, 0x08, 0x07, 0x00}) // 460800
		}), Port{MMIO: true, Base: 0x10000000, Stride: 1, Width: 1, Baud: 460800, Clock: 12000000, SPCR: true}, ""},
		{"mmio clock", edit(rev4, func(b []byte) {
			copy(b[spcrClock:], []byte{0x00, 0x1b, 0xb7, 0x00}) // 12 MHz
		}), Port{MMIO: true, Base: 0x10000000, Stride: 1, Width: 1, Baud: 115200, Clock: 12000000, SPCR: true}, ""},
		{"mmio precise baud, no clock", edit(rev4, func(b []byte) {
			copy(b[spcrPreciseBaud:], []byte{0x00, 0x08, 0x07, 0x00}) // 460800
		}), Port{MMIO: true, Base: 0x10000000, Stride: 1, Width: 1, SPCRBaud: 460800, SPCR: true}, ""},
		{"mmio clock field before revision 3", edit(rev4, func(b []byte) {
			b[spcrRevision] = 2
			copy(b[spcrClock:], []byte{0x00, 0x1b, 0xb7, 0x00}) // ignored: not a field of revision 2
		}), Port{MMIO: true, Base: 0x10000000, Stride: 1, Width: 1, SPCRBaud: 115200, SPCR: true}, ""},
		{"mmio as configured", edit(rev4, func(b []byte) { b[spcrBaudRate] = 0 }), Port{MMIO: true, Base: 0x10000000, Stride: 1, Width: 1, SPCR: true}, ""},
		// An I/O port without a clock (revision 2) runs at the PC's 1.8432
		// MHz: its baud rate is set; with a clock, from the clock.
		{"io clock", edit(rev4, func(b []byte) {
			b[spcrBase] = gasIO
			copy(b[spcrBase+4:spcrBase+12], []byte{0xf8, 0x02, 0, 0, 0, 0, 0, 0})
			copy(b[spcrClock:], []byte{0x00, 0x1b, 0xb7, 0x00}) // 12 MHz
		}), Port{Base: 0x2f8, Stride: 1, Width: 1, Baud: 115200, Clock: 12000000, SPCR: true}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, why := ParseSPCR(tt.tab)
			assert.Equal(t, tt.why, why)
			if tt.why == "" {
				assert.Equal(t, tt.want, p)
			}
		})
	}
}

func TestDivisor(t *testing.T) {
	assert.Equal(t, uint16(1), Divisor(0, 115200))
	assert.Equal(t, uint16(12), Divisor(0, 9600))
	assert.Equal(t, uint16(0), Divisor(0, 0), "0: leave the divisor alone")
	assert.Equal(t, uint16(2), Divisor(14745600, 460800), "rounded to the nearest")
	assert.Equal(t, uint16(1), Divisor(1843200, 1000000), "at least 1")
}

// A memory-mapped port in host memory: registers 4 bytes apart.
type fakeUART [8]uint32

func (f *fakeUART) port() Port {
	return Port{MMIO: true, Base: uint64(uintptr(unsafe.Pointer(f))), Stride: 4, Width: 4, Baud: 9600}
}

// A transmitter that never drains is waited on a bounded number of
// reads, then given up: later writes return at once.
func TestTxBounded(t *testing.T) {
	f := &fakes[0]
	*f = fakeUART{}
	p := f.port()
	require.True(t, p.present(), "the scratch register keeps what is written")
	p.init()
	assert.Equal(t, uint32(12), f[uartDLL], "divisor for 9600 baud")
	assert.Equal(t, uint32(lcr8N1), f[3])

	f[5] = 0 // LSR: THRE never set
	f[0] = 0
	p.tx('x')
	assert.True(t, p.Stuck())
	assert.Zero(t, f[0], "nothing written to THR")
	p.tx('y')
	p.drain()

	g := &fakes[1]
	*g = fakeUART{}
	q := g.port()
	g[5] = 1<<5 | 1<<lsrTEMT
	q.tx('z')
	assert.False(t, q.Stuck())
	assert.Equal(t, uint32('z'), g[0])
}
