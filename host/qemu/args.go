// Package qemu boots a UEFI image under QEMU with OVMF firmware and
// collects what it prints on the first serial port (COM1).
//
// The image ends the run by writing a byte v to I/O port 0xf4, where an
// isa-debug-exit device makes QEMU exit with status (v<<1)|1. Its serial
// output carries machine-readable lines "PTILAB {json}" (one per result)
// and a final "PTILAB-END {json}" line with at least a "status" field.
package qemu

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ptilab/ptilab/contract"
)

// DefaultMemory is the guest RAM size used when Options.Memory is empty.
const DefaultMemory = "256M"

// PlanFile is the name, at the root of the boot volume, of the file that
// receives Options.Plan.
const PlanFile = "ptilab.plan"

// bootPath is where the image goes on the boot volume: the removable-media
// default loader path for x86-64 (UEFI specification, 3.5.1.1).
const bootPath = "EFI/BOOT/BOOTX64.EFI"

// Options describes one QEMU run.
type Options struct {
	// Image is the path of the PE32+ EFI application to boot; it is copied
	// to EFI/BOOT/BOOTX64.EFI on the boot volume: a raw disk image with
	// the USB stick's layout (package usbimage: GPT, a FAT32 ESP) made for
	// the run, the first drive on q35's AHCI controller.
	Image string
	// Memory is the guest RAM size in QEMU -m syntax (e.g. "256M", "1G");
	// empty means DefaultMemory.
	Memory string
	// CPU is the QEMU -cpu model (e.g. "Nehalem", "IvyBridge",
	// "Skylake-Client", "max"); empty means QEMU's default, or "host"
	// with KVM.
	CPU string
	// KVM adds -accel kvm (and -cpu host when CPU is empty). It cannot be
	// combined with Icount.
	KVM bool
	// Icount adds -icount shift=0: TCG executes one instruction per virtual
	// nanosecond, making guest time deterministic.
	Icount bool
	// SMP is the number of virtual CPUs; 0 means QEMU's default (1).
	SMP int
	// Plan, when non-nil, is written verbatim to PlanFile at the root of the
	// boot volume.
	Plan []byte
	// Disk, when set, is a raw disk image (ptilab usb's) booted instead
	// of a boot volume made from Image, Plan and Files (which are then
	// ignored), written to in place.
	Disk string
	// ResultsDir, when set, receives a copy of the results files the run
	// left on the boot volume Run made (ptilab-results/*.log; the
	// directory is created if needed).
	ResultsDir string
	// DiskReadOnly attaches Disk read-only, as a USB stick with its
	// write-protect switch on (usb-storage on an xHCI controller: QEMU
	// refuses a read-only AHCI disk).
	DiskReadOnly bool
	// NoSerial gives the guest no serial port (-serial none): the run's
	// record is then only on the display and in its results file.
	NoSerial bool
	// PCISerial gives the guest a PCI UART (QEMU's pci-serial, 1b36:0002,
	// a 16550 behind I/O BAR 0) as its only serial port, in place of
	// q35's ISA COM1 (-serial none, which q35 then leaves out): the run's
	// serial output is what the guest writes to the PCI UART. OVMF
	// mirrors its console onto COM1 alone, so with no COM1 only the
	// image writes it.
	PCISerial bool
	// NoHPET leaves the HPET out of the machine (-machine q35,hpet=off,
	// QEMU 7.0 and later, as the older -no-hpet): no HPET
	// device at 0FED00000H and no ACPI HPET table. q35 has one by default.
	NoHPET bool
	// Files are extra files for the boot volume, keyed by slash-separated
	// path relative to its root. They may not escape the root or replace
	// the image or the plan file.
	Files map[string][]byte
	// Timeout bounds the whole run, firmware start-up included; it must be
	// positive. When it expires QEMU's process group is killed and
	// Result.TimedOut is set.
	Timeout time.Duration
	// LogPath, when set, receives a raw copy of the serial output as it
	// arrives (the file is created or truncated).
	LogPath string
	// Echo, when set, receives a live raw copy of the serial output (e.g.
	// os.Stdout, possibly wrapped in PlainWriter). Write errors on Echo are
	// ignored so that they cannot stall the guest.
	Echo io.Writer
	// ExtraArgs are appended to the QEMU command line.
	ExtraArgs []string
	// Monitor, when set, is the path of a Unix socket on which QEMU
	// serves its human monitor (a server socket that does not wait for a
	// client):
	// DialMonitor connects to it, to send commands such as "nmi" during
	// the run. Empty means no monitor.
	Monitor string
	// SerialIn, when set, is what the guest reads from its serial port
	// (QEMU's standard input, -serial stdio): keys for the firmware's
	// serial terminal, which its console input reads. Nil: none.
	SerialIn io.Reader
	// UBoot boots under U-Boot's x86-64 UEFI instead of OVMF (Debian's
	// u-boot-qemu: its u-boot.rom as -bios, FindUBoot), on QEMU's i440FX
	// machine, the board U-Boot's qemu-x86_64 build is configured for (on
	// q35 it leaves the ICH9's ACPI I/O decode off, and with it the ACPI
	// PM timer its FADT names), with the boot disk on an AHCI controller,
	// where U-Boot's boot script finds EFI/BOOT/BOOTX64.EFI. Not with
	// DiskReadOnly (no USB controller is scanned) nor KVM.
	UBoot bool
	// StopAt, when set, ends the run once the serial output matches it:
	// QEMU is killed and the Result says Stopped. For runs that do not end
	// QEMU themselves (an image that returns to the firmware).
	StopAt *regexp.Regexp
}

// validate checks the options that Args cannot express.
func (o *Options) validate() error {
	switch {
	case o.Image == "" && o.Disk == "":
		return errors.New("qemu: no image given")
	case o.DiskReadOnly && o.Disk == "":
		return errors.New("qemu: a read-only disk needs a disk image")
	case o.ResultsDir != "" && o.Disk != "":
		return errors.New("qemu: the results of a given disk image are on it: ResultsDir is for the boot volume Run makes")
	case o.Timeout <= 0:
		return fmt.Errorf("qemu: timeout must be positive, got %v", o.Timeout)
	case o.KVM && o.Icount:
		return errors.New("qemu: -icount needs TCG and cannot be combined with KVM")
	case o.NoSerial && o.PCISerial:
		return errors.New("qemu: NoSerial and PCISerial exclude each other")
	case o.UBoot && (o.DiskReadOnly || o.KVM):
		return errors.New("qemu: U-Boot boots from an AHCI disk under TCG: not with a read-only (USB) disk nor KVM")
	case o.SMP < 0:
		return fmt.Errorf("qemu: SMP must not be negative, got %d", o.SMP)
	}
	return nil
}

// Args returns the QEMU arguments (without the program name) for opts,
// using the firmware and boot-volume paths in paths. It is a pure function:
// it neither checks nor touches the files it names.
func Args(opts Options, paths Paths) []string {
	mem := opts.Memory
	if mem == "" {
		mem = DefaultMemory
	}
	machine := "q35"
	if opts.UBoot {
		machine = "pc"
	}
	if opts.NoHPET {
		machine += ",hpet=off"
	}
	args := []string{
		"-machine", machine,
		"-m", mem,
		"-display", "none",
		"-nic", "none",
		"-no-reboot",
	}
	args = append(args, monitorArgs(opts.Monitor)...)
	if opts.KVM {
		args = append(args, "-accel", "kvm")
	}
	switch {
	case opts.CPU != "":
		args = append(args, "-cpu", opts.CPU)
	case opts.KVM:
		args = append(args, "-cpu", "host")
	}
	if opts.SMP > 0 {
		args = append(args, "-smp", strconv.Itoa(opts.SMP))
	}
	if opts.Icount {
		// The fw_cfg file tells the image, which labels its figures as
		// instruction counts.
		args = append(args, "-icount", "shift=0", "-fw_cfg", "name="+contract.FwCfgIcount+",string=1")
	}
	if paths.Vars == "" {
		args = append(args, "-bios", paths.Code)
	} else {
		args = append(args,
			"-drive", "if=pflash,format=raw,readonly=on,file="+optValue(paths.Code),
			"-drive", "if=pflash,format=raw,file="+optValue(paths.Vars))
	}
	switch {
	case opts.DiskReadOnly:
		args = append(args,
			"-drive", "if=none,id=stick,format=raw,readonly=on,file="+optValue(paths.ESP),
			"-device", "qemu-xhci", "-device", "usb-storage,drive=stick")
	case opts.UBoot:
		args = append(args,
			"-drive", "if=none,id=disk,format=raw,file="+optValue(paths.ESP),
			"-device", "ahci,id=ahci", "-device", "ide-hd,drive=disk,bus=ahci.0")
	default:
		args = append(args, "-drive", "format=raw,file="+optValue(paths.ESP))
	}
	serial := "stdio"
	if opts.NoSerial || opts.PCISerial {
		serial = "none"
	}
	args = append(args,
		"-device", fmt.Sprintf("isa-debug-exit,iobase=%#x,iosize=1", contract.DebugExitPort),
		"-serial", serial)
	if opts.PCISerial {
		args = append(args, "-chardev", "stdio,id=pciserial", "-device", "pci-serial,chardev=pciserial")
	}
	return append(args, opts.ExtraArgs...)
}

// monitorArgs are the arguments of a human monitor served on a Unix
// socket at path, or of no monitor when path is empty. The socket is a
// -chardev with the path as an option value, where only commas need
// escaping: the shorter "-monitor unix:PATH,..." cannot name a path with
// an "=" in it (QEMU parses it as an option).
func monitorArgs(path string) []string {
	if path == "" {
		return []string{"-monitor", "none"}
	}
	return []string{
		"-chardev", "socket,id=monitor,path=" + optValue(path) + ",server=on,wait=off",
		"-mon", "chardev=monitor,mode=readline",
	}
}

// optValue escapes a value for a QEMU comma-separated option list, where a
// literal comma is written twice.
func optValue(s string) string {
	return strings.ReplaceAll(s, ",", ",,")
}
