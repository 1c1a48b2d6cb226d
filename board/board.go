// Package board knows the machines ptilab runs on: a generic UEFI PC
// (its serial console: COM1, COM2, the 16550-compatible UARTs on PCI and
// the UART the ACPI SPCR table names; the
// ACPI PM timer, the HPET and the PIT for clock calibration, ending by a
// return to the firmware or a power-off through the UEFI runtime services),
// QEMU (detected through its fw_cfg device; ends through the
// isa-debug-exit device, so that QEMU exits with the run's status) and
// Bochs (detected through its PCI host bridge; ends by a power-off).
//
// Everything here is safe in kernel mode: no allocation, no heap pointer
// writes.
package board

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/efi"
)

// Kind is the machine ptilab detected.
type Kind uint8

const (
	PC    Kind = iota // a generic UEFI PC
	QEMU              // QEMU (fw_cfg present)
	Bochs             // Bochs (see Detect)
)

func (k Kind) String() string {
	switch k {
	case QEMU:
		return "qemu"
	case Bochs:
		return "bochs"
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

// Detect decides what ptilab runs on; amd64.DetectFeatures must have run.
//
// QEMU: the fw_cfg signature "QEMU" (QEMU docs/specs/fw_cfg.rst), present
// on every QEMU x86 machine, TCG or KVM. Port 0x510 is probed only where
// fw_cfg can be (FwCfgPossible): on a real PC it may lie in a chipset's
// I/O block (the GPIO block of many Ivy Bridge boards), where a write is
// not harmless.
//
// Bochs: no hypervisor bit (CPUID.01H:ECX[31]), no fw_cfg device in its
// ACPI tables (Bochs 2.7 has no fw_cfg; the 3.1 line has a QEMU-compatible
// one, iodev/fw_cfg.cc, signature "QEMU" included, which FwCfgPossible
// therefore never lets Detect probe: its DSDT, iodev/acpi_dsdt_aml.h,
// names no "QEMU0002"), and at PCI 00:00.0 the host bridge of a chipset
// Bochs emulates (bochsrc "pci: chipset=" i430fx, i440fx or i440bx;
// iodev/pci.cc): Intel 82437FX
// (8086:122D), 82441FX (8086:1237) or 82443BX (8086:7190; 7192 without
// AGP), read through PCI configuration mechanism #1 (PCI Local Bus 3.0,
// 3.2.2.3.2). These are the Pentium, Pentium Pro and Pentium II/III
// chipsets of 1995 to 1999 (Intel's 430FX, 440FX and 440BX PCIset
// datasheets), for 32-bit processors only: a machine that runs an x86-64
// UEFI application and reports one is emulated or virtualized, never a real
// PC. Bochs sets no hypervisor bit and its CPU models carry real
// processors' brand strings, so the chipset is what gives it away. The
// hypervisor bit tells Bochs from the hardware virtual machines that
// present the same chipsets (QEMU's "pc" machine is caught by fw_cfg first;
// VirtualBox's default machine is a 440FX and VMware's a 440BX, and both
// set the bit unless configured to hide it).
func Detect() Kind {
	switch {
	case FwCfgPossible(amd64.Features.Hypervisor, amd64.Features.HypervisorVendor(), acpiListsFwCfg()) &&
		fwCfgSignature() == [4]byte{'Q', 'E', 'M', 'U'}:
		Machine = QEMU
	case !amd64.Features.Hypervisor && pre64Chipset(HostBridge()):
		Machine = Bochs
	default:
		Machine = PC
	}
	return Machine
}

// FwCfgHID is the _HID of QEMU's fw_cfg device in its ACPI tables (QEMU
// docs/specs/fw_cfg.rst, "ACPI Interface"; hw/nvram/fw_cfg-acpi.c).
const FwCfgHID = "QEMU0002"

// FwCfgPossible reports whether fw_cfg may be probed: when the CPU says a
// hypervisor is present (hypervisor, CPUID.01H:ECX[31], with a non-empty
// leaf 40000000H signature, vendor) or when the ACPI tables list a fw_cfg
// device (acpiFwCfg: the DSDT or an SSDT holds FwCfgHID). QEMU's TCG sets
// the hypervisor bit and signs "TCGTCGTCGTCG"; KVM signs "KVMKVMKVM".
func FwCfgPossible(hypervisor bool, vendor string, acpiFwCfg bool) bool {
	return hypervisor && vendor != "" || acpiFwCfg
}

// acpiListsFwCfg reports whether the DSDT or an SSDT names FwCfgHID.
func acpiListsFwCfg() bool {
	if dsdt := findDSDT(); dsdt != 0 && amlHasString(efi.Bytes(dsdt, int(efi.Read32(dsdt+4))), FwCfgHID) {
		return true
	}
	for i := 0; ; i++ {
		t := findACPITableN([4]byte{'S', 'S', 'D', 'T'}, i)
		if t == 0 {
			return false
		}
		if amlHasString(efi.Bytes(t, int(efi.Read32(t+4))), FwCfgHID) {
			return true
		}
	}
}

// amlHasString reports whether the ACPI table aml (header included) holds
// the AML string s: a StringPrefix byte (0DH), s, and its NUL (ACPI 6.5,
// 20.2.3), as a _HID such as "QEMU0002" is encoded.
func amlHasString(aml []byte, s string) bool {
	n := len(s) + 2
	for i := 0; i+n <= len(aml); i++ {
		if aml[i] == 0x0d && aml[i+n-1] == 0 && string(aml[i+1:i+n-1]) == s {
			return true
		}
	}
	return false
}

func fwCfgSignature() (sig [4]byte) {
	amd64.Out16(fwCfgSelector, 0)
	for i := range sig {
		sig[i] = amd64.In8(fwCfgData)
	}
	return sig
}

// HostBridge returns the vendor ID (low 16 bits) and device ID (high 16
// bits) of PCI device 00:00.0, the host bridge on PCs, read through
// configuration mechanism #1 (pci.go); 0xffffffff when there is none.
// CONFIG_ADDRESS is restored afterwards.
func HostBridge() uint32 {
	saved := amd64.In32(pciConfigAddress)
	id := pciRead32(0, 0, 0, pciVendorID)
	amd64.Out32(pciConfigAddress, saved)
	return id
}

// pre64Chipset reports whether id (HostBridge's) is a host bridge of a
// chipset made for 32-bit processors only that Bochs emulates.
func pre64Chipset(id uint32) bool {
	switch id {
	case 0x122d_8086, // 82437FX, 430FX (Triton): Pentium
		0x1237_8086,              // 82441FX, 440FX (Natoma): Pentium Pro, Pentium II
		0x7190_8086, 0x7192_8086: // 82443BX, 440BX: Pentium II, Pentium III
		return true
	}
	return false
}

// Emulator names the emulator ptilab runs under, whose TSC figures are
// not the hardware's: "qemu-tcg" (QEMU's TCG, CPUID 40000000H signature
// "TCGTCGTCGTCG"), "bochs", or "" (a PC, or a hardware virtual machine
// such as QEMU with KVM). Detect must have run.
func Emulator() string {
	switch {
	case Machine == Bochs:
		return "bochs"
	case Machine == QEMU && amd64.Features.HypervisorVendor() == "TCGTCGTCGTCG":
		return "qemu-tcg"
	}
	return ""
}

// How a run ends on a PC.
type EndAction uint8

const (
	EndAuto     EndAction = iota // QEMU: debug exit; Bochs: power off; PC: as EndKey
	EndReturn                    // return to the firmware (boot menu or shell) with EFI_SUCCESS
	EndPowerOff                  // power off (UEFI ResetSystem, EfiResetShutdown)
	EndReset                     // cold reset
	// EndKey waits for a key (or a timeout) with the last lines on the
	// screen, then returns to the firmware: the kernel waits (goos), End
	// returns as with EndReturn.
	EndKey
)

// WaitsForKey reports whether a run ending with action waits for a key
// before it ends: EndKey everywhere, EndAuto on a PC (where the firmware
// would otherwise clear the screen, or boot the next boot option, at
// once).
func (action EndAction) WaitsForKey() bool {
	return action == EndKey || action == EndAuto && Machine == PC
}

// End ends the run with status (0 = success, at most 111) and does not
// return. Under QEMU with action EndAuto the debug-exit device ends QEMU
// with ((status+contract.DebugExitBase)<<1)|1 (the runner configures the
// device at contract.DebugExitPort and undoes the base); where that device is missing, with
// another action, and on a PC, action decides. Under Bochs, which has no
// such device, EndAuto powers off (Bochs then exits; the status is in the
// PTILAB-END line). First the serial ports send their last bytes and the
// PCI UARTs whose decode ptilab turned on get their command registers
// back as the firmware left them (restorePCI).
func End(status uint8, action EndAction) {
	DrainSerial()
	restorePCI(pciMechanism1{})
	if Machine == QEMU && (action == EndAuto) {
		amd64.Out8(contract.DebugExitPort, status+contract.DebugExitBase)
		// No debug-exit device: QEMU is still running. Power off.
		action = EndPowerOff
	}
	if Machine == Bochs && action == EndAuto {
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
	dropGlobalPages()
	checkGlobalProbe()
	// Success whatever the run's status, which PTILAB-END and the results
	// file carry: a boot manager takes an error from a boot option for a
	// failed boot and starts the next option of BootOrder, the disk's OS
	// as a rule, where success makes an interactive one show its menu
	// (UEFI 2.10, 3.1.1).
	efi.Exit(efi.Success)
	amd64.Halt()
}

// dropGlobalPages clears CR4.PGE before the return to the firmware: the
// change flushes every TLB entry, global ones included (SDM Vol. 3A,
// 4.10.4.1), and with PGE clear no new entry is global, so none of a run's
// global entries (the entry area's, whose frames efi.Exit frees, and the
// kernel text's) survives into the firmware or the next loader. The gate
// then loads the firmware's CR4, which sets PGE again if the firmware had
// it: a second flush.
func dropGlobalPages() {
	amd64.SetCR4(amd64.CR4() &^ amd64.CR4_PGE)
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

// Icount reports whether the TSC counts instructions: under QEMU started
// with -icount by ptilab's runner (which passes the fw_cfg file
// contract.FwCfgIcount), and always under Bochs, whose TSC is its count of
// emulated instructions (cpu/proc_ctrl.cc, 2.7 and 3.1 alike: get_TSC
// from bx_pc_system.time_ticks(), one tick per instruction with
// "clock: sync=none").
func Icount() bool {
	if Machine == Bochs {
		return true
	}
	var b [8]byte
	return QEMUFile(contract.FwCfgIcount, b[:]) > 0
}
