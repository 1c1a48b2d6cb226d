package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/board"
)

// The machine record's serial_ports: where each port is, its baud rate
// and how it was found.
func TestSerialPorts(t *testing.T) {
	assert.Equal(t, []string{
		"io 0x3f8 115200 baud (com1)",
		"io 0x2f8 115200 baud (com2) (spcr)",
		"io 0xc000 115200 baud (pci 00:03.0 1b36:0002)",
		"mmio 0xfe032000/4 firmware's baud (spcr names 115200) (spcr)",
		"mmio 0xfe000000/1 firmware's baud (pci 02:00.1 1c00:3253)",
	}, serialPorts([]board.Port{
		board.COM1,
		func() board.Port { p := board.COM2; p.SPCR = true; return p }(),
		{Base: 0xc000, Stride: 1, Width: 1, Baud: 115200, PCI: board.PCIFunction{Device: 3, VendorID: 0x1b36, DeviceID: 0x0002, ProgIF: 2}},
		{MMIO: true, Base: 0xfe032000, Stride: 4, Width: 4, SPCRBaud: 115200, SPCR: true},
		{MMIO: true, Base: 0xfe000000, Stride: 1, Width: 1, PCI: board.PCIFunction{Bus: 2, Function: 1, VendorID: 0x1c00, DeviceID: 0x3253, ProgIF: 2}},
	}))
}
