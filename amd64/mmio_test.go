package amd64

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// The MMIO accessors touch exactly the bytes of their width.
func TestMMIO(t *testing.T) {
	var b [8]byte
	a := uintptr(unsafe.Pointer(&b[0]))
	MMIOWrite32(a, 0x11223344)
	MMIOWrite16(a+4, 0x5566)
	MMIOWrite8(a+6, 0x77)
	assert.Equal(t, [8]byte{0x44, 0x33, 0x22, 0x11, 0x66, 0x55, 0x77, 0}, b)
	assert.Equal(t, uint32(0x11223344), MMIORead32(a))
	assert.Equal(t, uint16(0x5566), MMIORead16(a+4))
	assert.Equal(t, uint8(0x77), MMIORead8(a+6))
	assert.Equal(t, uint8(0), MMIORead8(a+7))
}
