package board

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/efi"
)

// ACPI power-management timer (ACPI 6.5, 4.8.3.3): a free-running counter
// at 3.579545 MHz, 24 or 32 bits wide, at the I/O port the FADT gives.
const PMTimerHz = 3579545

var pmTimer struct {
	port uint16
	bits uint
}

// FindPMTimer locates the ACPI PM timer through the RSDP the firmware
// publishes (UEFI 2.10, 4.6.1), the XSDT or RSDT, and the FADT (ACPI 6.5,
// 5.2.9: PM_TMR_BLK at offset 76, FLAGS.TMR_VAL_EXT at offset 112 bit 8,
// X_PM_TMR_BLK at offset 208). It returns the port, 0 when there is none.
func FindPMTimer() uint16 {
	fadt := findACPITable([4]byte{'F', 'A', 'C', 'P'})
	if fadt == 0 {
		return 0
	}
	length := efi.Read32(fadt + 4)
	port := uint64(efi.Read32(fadt + 76))
	if length >= 220 && efi.Read8(fadt+208) == 1 { // X_PM_TMR_BLK in system I/O space
		if x := efi.Read64(fadt + 212); x != 0 {
			port = x
		}
	}
	if port == 0 || port > 0xffff {
		return 0
	}
	pmTimer.port = uint16(port)
	pmTimer.bits = 24
	if efi.Read32(fadt+112)&(1<<8) != 0 {
		pmTimer.bits = 32
	}
	return pmTimer.port
}

// PMTimer reads the ACPI PM timer.
func PMTimer() uint64 {
	v := uint64(amd64.In32(pmTimer.port))
	if pmTimer.bits == 24 {
		v &= 0xffffff
	}
	return v
}

// PMTimerBits returns the width of the PM timer counter, 0 when there is
// none.
func PMTimerBits() uint { return pmTimer.bits }

// findACPITable returns the address of the ACPI table with signature sig,
// or 0.
func findACPITable(sig [4]byte) uint64 { return findACPITableN(sig, 0) }

// findDSDT returns the address of the DSDT, which the FADT names (ACPI
// 6.5, 5.2.9: DSDT at offset 40, X_DSDT at offset 140 when the FADT is
// that long and it is non-zero), or 0.
func findDSDT() uint64 {
	fadt := findACPITable([4]byte{'F', 'A', 'C', 'P'})
	if fadt == 0 {
		return 0
	}
	dsdt := uint64(efi.Read32(fadt + 40))
	if efi.Read32(fadt+4) >= 148 {
		if x := efi.Read64(fadt + 140); x != 0 {
			dsdt = x
		}
	}
	if dsdt == 0 || [4]byte(efi.Bytes(dsdt, 4)) != [4]byte{'D', 'S', 'D', 'T'} {
		return 0
	}
	return dsdt
}

// findACPITableN returns the address of the n-th (from 0) ACPI table with
// signature sig in the XSDT or RSDT, or 0.
func findACPITableN(sig [4]byte, nth int) uint64 {
	rsdp := efi.ConfigTable(&efi.ACPI20TableGUID)
	if rsdp == 0 {
		rsdp = efi.ConfigTable(&efi.ACPI10TableGUID)
	}
	if rsdp == 0 || string(efi.Bytes(rsdp, 8)) != "RSD PTR " {
		return 0
	}
	entry, sdt := uint64(4), uint64(efi.Read32(rsdp+16)) // RSDT: 32-bit entries
	if efi.Read8(rsdp+15) >= 2 && efi.Read64(rsdp+24) != 0 {
		entry, sdt = 8, efi.Read64(rsdp+24) // XSDT: 64-bit entries
	}
	if sdt == 0 {
		return 0
	}
	n := (uint64(efi.Read32(sdt+4)) - 36) / entry
	for i := uint64(0); i < n; i++ {
		var t uint64
		if entry == 8 {
			t = efi.Read64(sdt + 36 + 8*i)
		} else {
			t = uint64(efi.Read32(sdt + 36 + 4*i))
		}
		if t != 0 && [4]byte(efi.Bytes(t, 4)) == sig {
			if nth == 0 {
				return t
			}
			nth--
		}
	}
	return 0
}

// The 8254 PIT (Intel 82C54 data sheet): channel 2, gated through port
// 0x61, counts down at 1.193182 MHz.
const (
	PITHz      = 1193182
	pitCh2     = 0x42
	pitCommand = 0x43
	pitGate    = 0x61
)

// PIT returns PIT channel 2 as a one-shot for Calibrator.AgainstPIT.
func PIT() PIT8254 {
	return PIT8254{Start: pitStart, Out2: pitOut2, Hz: PITHz}
}

// pitStart loads count into channel 2 in mode 0 (interrupt on terminal
// count: OUT2 low until the count reaches 0), its gate high and the
// speaker off, as Linux's pit_calibrate_tsc does.
func pitStart(count uint16) {
	amd64.Out8(pitGate, amd64.In8(pitGate)&^0x02|0x01)
	// Channel 2, lobyte/hibyte, mode 0, binary.
	amd64.Out8(pitCommand, 0xb0)
	amd64.Out8(pitCh2, uint8(count))
	amd64.Out8(pitCh2, uint8(count>>8))
}

// pitOut2 reads OUT2 (port 61H bit 5).
func pitOut2() bool { return amd64.In8(pitGate)&0x20 != 0 }

// PMCounter returns the ACPI PM timer as a reference counter; FindPMTimer
// must have found it.
func PMCounter() RefCounter {
	return RefCounter{Read: PMTimer, Hz: PMTimerHz, Bits: pmTimer.bits}
}
