// Package board knows the machines ptilab runs on: a generic UEFI PC
// (COM1, the ACPI PM timer and the PIT for clock calibration, ending by a
// return to the firmware or a power-off through the UEFI runtime services)
// and QEMU (detected through its fw_cfg device; ends through the
// isa-debug-exit device, so that QEMU exits with the run's status).
//
// Everything here is safe in kernel mode: no allocation, no heap pointer
// writes.
package board

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/internal/contract"
	"github.com/usbarmory/tamago/soc/intel/uart"
)

// Kind is the machine ptilab detected.
type Kind uint8

const (
	PC   Kind = iota // a generic UEFI PC
	QEMU             // QEMU (fw_cfg present)
)

func (k Kind) String() string {
	if k == QEMU {
		return "qemu"
	}
	return "pc"
}

// Machine is the detected board, set by Detect.
var Machine Kind

// QEMU's fw_cfg interface on x86 (QEMU docs/specs/fw_cfg.rst): a 16-bit
// selector port and an 8-bit data port; selector 0 reads the signature.
const (
	fwCfgSelector = 0x510
	fwCfgData     = 0x511
)

// QEMU's isa-debug-exit device as ptilab's runner configures it
// (contract.DebugExitPort): writing v makes QEMU exit with status
// (v<<1)|1. ptilab writes its status plus contract.DebugExitBase, so that
// QEMU's own failures (exit status 1) never read as a status; the host's
// runner (internal/qemu) undoes it.
const (
	debugExitPort = contract.DebugExitPort
	DebugExitBase = contract.DebugExitBase
)

// Detect decides whether ptilab runs under QEMU by reading the fw_cfg
// signature "QEMU".
func Detect() Kind {
	amd64.Out16(fwCfgSelector, 0)
	var sig [4]byte
	for i := range sig {
		sig[i] = amd64.In8(fwCfgData)
	}
	if sig == [4]byte{'Q', 'E', 'M', 'U'} {
		Machine = QEMU
	} else {
		Machine = PC
	}
	return Machine
}

// COM1 is the first 16550 UART (I/O port 0x3f8), the serial console.
var COM1 = uart.UART{Index: 1, Base: 0x3f8}

var serialPresent bool

// 16550 registers beyond those tamago's driver names (PC16550D data sheet).
const (
	uartDLL = 0 // divisor latch, low byte (with LCR.DLAB)
	uartDLM = 1 // divisor latch, high byte (with LCR.DLAB)
	uartSCR = 7 // scratch register
	lcrDLAB = 0x80
	lcr8N1  = 0x03
	fcrInit = 0xc7 // enable and clear the FIFOs, 14-byte trigger
)

// InitSerial probes COM1 through its scratch register and, if present,
// programs it for 115200 baud 8N1 (the firmware may not have) and enables
// it. It reports whether COM1 exists; without one, serial writes are
// dropped (a missing UART reads 0xff, and must not be waited on).
func InitSerial() bool {
	base := COM1.Base
	amd64.Out8(base+uartSCR, 0x5a)
	if amd64.In8(base+uartSCR) != 0x5a {
		return false
	}
	amd64.Out8(base+uartSCR, 0xa5)
	if amd64.In8(base+uartSCR) != 0xa5 {
		return false
	}
	amd64.Out8(base+uart.IER, 0)
	amd64.Out8(base+uart.LCR, lcrDLAB)
	amd64.Out8(base+uartDLL, 1) // 115200 / 1
	amd64.Out8(base+uartDLM, 0)
	amd64.Out8(base+uart.LCR, lcr8N1)
	amd64.Out8(base+uart.FCR, fcrInit)
	COM1.Init()
	serialPresent = true
	return true
}

// SerialPresent reports whether COM1 was found.
func SerialPresent() bool { return serialPresent }

// WriteSerial writes p to COM1, turning "\n" into "\r\n".
func WriteSerial(p []byte) {
	if !serialPresent {
		return
	}
	for _, c := range p {
		if c == '\n' {
			COM1.Tx('\r')
		}
		COM1.Tx(c)
	}
}

// How a run ends on a PC.
type EndAction uint8

const (
	EndAuto     EndAction = iota // QEMU: debug exit; PC: return to the firmware
	EndReturn                    // return to the firmware (boot menu or shell)
	EndPowerOff                  // power off (UEFI ResetSystem, EfiResetShutdown)
	EndReset                     // cold reset
)

// End ends the run with status (0 = success, at most 111) and does not
// return. Under QEMU with action EndAuto the debug-exit device ends QEMU
// with ((status+DebugExitBase)<<1)|1; where that device is missing, with
// another action, and on a PC, action decides.
func End(status uint8, action EndAction) {
	if Machine == QEMU && (action == EndAuto) {
		amd64.Out8(debugExitPort, status+DebugExitBase)
		// No debug-exit device: QEMU is still running. Power off.
		action = EndPowerOff
	}
	fs := efi.Success
	if status != 0 {
		fs = efi.Aborted
	}
	switch action {
	case EndPowerOff:
		efi.ResetSystem(efi.ResetShutdown, fs)
	case EndReset:
		efi.ResetSystem(efi.ResetCold, fs)
	}
	efi.Exit(fs)
	amd64.Halt()
}

// fw_cfg's file directory (QEMU docs/specs/fw_cfg.rst): selector 0x19
// reads a big-endian count and entries of 64 bytes: size (BE32), selector
// (BE16), reserved (16 bits), name (56 bytes, NUL-padded).
const fwCfgFileDir = 0x19

// QEMUFile reads the fw_cfg file name (QEMU's -fw_cfg name=...,string=...)
// into buf and returns its length, or -1 when there is none (or not
// QEMU).
func QEMUFile(name string, buf []byte) int {
	if Machine != QEMU {
		return -1
	}
	be32 := func() uint32 {
		var v uint32
		for i := 0; i < 4; i++ {
			v = v<<8 | uint32(amd64.In8(fwCfgData))
		}
		return v
	}
	amd64.Out16(fwCfgSelector, fwCfgFileDir)
	n := be32()
	for i := uint32(0); i < n; i++ {
		size := be32()
		sel := uint16(amd64.In8(fwCfgData))<<8 | uint16(amd64.In8(fwCfgData))
		amd64.In8(fwCfgData)
		amd64.In8(fwCfgData)
		var fname [56]byte
		for j := range fname {
			fname[j] = amd64.In8(fwCfgData)
		}
		if !nameIs(fname[:], name) {
			continue
		}
		amd64.Out16(fwCfgSelector, sel)
		k := min(int(size), len(buf))
		for j := 0; j < k; j++ {
			buf[j] = amd64.In8(fwCfgData)
		}
		return k
	}
	return -1
}

// nameIs reports whether the NUL-padded name in b is s.
func nameIs(b []byte, s string) bool {
	return len(s) <= len(b) && string(b[:len(s)]) == s && (len(s) == len(b) || b[len(s)] == 0)
}

// Icount reports whether ptilab's QEMU runner started QEMU with -icount,
// under which the TSC counts instructions (it passes the fw_cfg file
// contract.FwCfgIcount).
func Icount() bool {
	var b [8]byte
	return QEMUFile(contract.FwCfgIcount, b[:]) > 0
}
