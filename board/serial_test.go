package board

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakes are the fake UARTs of these tests, in a global: Port.Base is a
// uintptr, which the stack's growth would not update.
var fakes [2]fakeUART

// useConsoles makes ps the serial consoles for the test, and restores
// the real ones afterwards.
func useConsoles(t *testing.T, ps ...Port) {
	saved, savedN := ports, nports
	t.Cleanup(func() { ports, nports = saved, savedN })
	nports = 0
	for _, p := range ps {
		addPort(p)
	}
	require.Equal(t, len(ps), nports)
}

// A port that never drains is given up after a bounded wait, and the
// others go on getting every byte.
func TestWriteSerialStuckPort(t *testing.T) {
	stuck, ok := &fakes[0], &fakes[1]
	*stuck, *ok = fakeUART{}, fakeUART{}
	ok[5] = 1<<5 | 1<<lsrTEMT // LSR: THRE and TEMT
	a, b := stuck.port(), ok.port()
	useConsoles(t, a, b)
	WriteSerial([]byte("x\n"))
	assert.True(t, ports[0].Stuck())
	assert.False(t, ports[1].Stuck())
	assert.Equal(t, uint32('\n'), ok[0], "the last byte, after its CR")
	stuck[0] = 0
	WriteSerial([]byte("y"))
	assert.Zero(t, stuck[0], "a port given up is not written")
	assert.Equal(t, uint32('y'), ok[0])
	DrainSerial()
}

// A port found twice (COM1 also named by the SPCR table, or a PCI UART's
// BAR) is one console: the second finding adds its marks.
func TestAddPortMerges(t *testing.T) {
	f := &fakes[0]
	*f = fakeUART{}
	p := f.port()
	p.COM = 1
	useConsoles(t, p)
	q := f.port()
	q.Baud, q.SPCR = 0, true
	q.PCI = PCIFunction{Bus: 0, Device: 0x16, Function: 3, VendorID: 0x8086, DeviceID: 0x1e3d, ProgIF: 2}
	addPort(q)
	require.Equal(t, 1, nports)
	got := ports[0]
	assert.True(t, got.SPCR)
	assert.Equal(t, uint8(1), got.COM)
	assert.Equal(t, q.PCI, got.PCI)
	assert.Equal(t, uint32(9600), got.Baud, "a finding without a baud rate leaves it")
}
