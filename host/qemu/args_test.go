package qemu

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testPaths = Paths{QEMU: "/q", Code: "/fw/CODE.fd", Vars: "/tmp/x/VARS.fd", ESP: "/tmp/x/esp.img"}

func TestArgsDefault(t *testing.T) {
	want := []string{
		"-machine", "q35", "-m", "256M", "-display", "none", "-nic", "none", "-no-reboot", "-monitor", "none",
		"-drive", "if=pflash,format=raw,readonly=on,file=/fw/CODE.fd",
		"-drive", "if=pflash,format=raw,file=/tmp/x/VARS.fd",
		"-drive", "format=raw,file=/tmp/x/esp.img",
		"-device", "isa-debug-exit,iobase=0xf4,iosize=1",
		"-serial", "stdio",
	}
	assert.Equal(t, want, Args(Options{Image: "a.efi"}, testPaths))
}

// around returns the argument following flag in args, or "" if absent.
func around(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func TestArgsOptions(t *testing.T) {
	args := Args(Options{Memory: "1G", CPU: "Skylake-Client", Icount: true, SMP: 4, ExtraArgs: []string{"-d", "int"}}, testPaths)
	assert.Equal(t, "1G", around(args, "-m"))
	assert.Equal(t, "Skylake-Client", around(args, "-cpu"))
	assert.Equal(t, "shift=0", around(args, "-icount"))
	assert.Equal(t, "4", around(args, "-smp"))
	assert.NotContains(t, args, "-accel")
	assert.Equal(t, []string{"-d", "int"}, args[len(args)-2:], "extra args last")

	args = Args(Options{KVM: true}, testPaths)
	assert.Equal(t, "kvm", around(args, "-accel"))
	assert.Equal(t, "host", around(args, "-cpu"), "KVM defaults to the host CPU")
	assert.NotContains(t, args, "-icount")
	assert.NotContains(t, args, "-smp")

	args = Args(Options{KVM: true, CPU: "Nehalem"}, testPaths)
	assert.Equal(t, "Nehalem", around(args, "-cpu"))
	assert.NotContains(t, Args(Options{}, testPaths), "-cpu", "TCG default CPU")
}

func TestArgsMonitor(t *testing.T) {
	args := Args(Options{Monitor: "/tmp/TestX=y,z/mon"}, testPaths)
	assert.Equal(t, "socket,id=monitor,path=/tmp/TestX=y,,z/mon,server=on,wait=off", around(args, "-chardev"))
	assert.Equal(t, "chardev=monitor,mode=readline", around(args, "-mon"))
	assert.NotContains(t, args, "-monitor")
	assert.Equal(t, "none", around(Args(Options{}, testPaths), "-monitor"))
}

func TestArgsCombinedFirmwareAndCommas(t *testing.T) {
	args := Args(Options{}, Paths{Code: "/usr/share/ovmf/OVMF.fd", ESP: "/tmp/a,b/esp.img"})
	assert.Equal(t, "/usr/share/ovmf/OVMF.fd", around(args, "-bios"))
	assert.NotContains(t, strings.Join(args, " "), "pflash")
	assert.Contains(t, args, "format=raw,file=/tmp/a,,b/esp.img", "commas doubled in option values")
}

// The boot disk is read-write on q35's AHCI, read-only as a USB stick;
// -serial none without a serial port.
func TestArgsDisk(t *testing.T) {
	args := Args(Options{}, testPaths)
	assert.NotContains(t, args, "usb-storage,drive=stick")

	args = Args(Options{Disk: "/d/s.img", DiskReadOnly: true, NoSerial: true}, testPaths)
	assert.Contains(t, args, "if=none,id=stick,format=raw,readonly=on,file=/tmp/x/esp.img")
	assert.Contains(t, args, "usb-storage,drive=stick")
	assert.Contains(t, args, "qemu-xhci")
	assert.NotContains(t, args, "format=raw,file=/tmp/x/esp.img")
	assert.Equal(t, "none", around(args, "-serial"))
}

// UBoot: U-Boot's ROM as -bios (Run puts it in Paths.Code, without
// Vars), the i440FX machine, the disk on an AHCI controller.
func TestArgsUBoot(t *testing.T) {
	args := Args(Options{UBoot: true}, Paths{Code: "/u/u-boot.rom", ESP: "/tmp/x/esp.img"})
	assert.Equal(t, "pc", around(args, "-machine"))
	assert.Equal(t, "/u/u-boot.rom", around(args, "-bios"))
	assert.Contains(t, args, "if=none,id=disk,format=raw,file=/tmp/x/esp.img")
	assert.Contains(t, args, "ahci,id=ahci")
	assert.Contains(t, args, "ide-hd,drive=disk,bus=ahci.0")
	assert.NotContains(t, args, "format=raw,file=/tmp/x/esp.img", "the disk only on the AHCI controller")
	assert.NotContains(t, strings.Join(args, " "), "pflash")
	assert.Equal(t, "q35", around(Args(Options{}, testPaths), "-machine"))
}

func TestFindUBoot(t *testing.T) {
	rom := t.TempDir() + "/u-boot.rom"
	t.Setenv("UBOOT_ROM", rom)
	_, err := FindUBoot()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "apt-get install u-boot-qemu")
	require.NoError(t, os.WriteFile(rom, []byte("rom"), 0o644))
	got, err := FindUBoot()
	require.NoError(t, err)
	assert.Equal(t, rom, got)
}

// PCISerial: no ISA serial port, a pci-serial on the standard output.
func TestArgsPCISerial(t *testing.T) {
	args := Args(Options{PCISerial: true}, testPaths)
	assert.Equal(t, "none", around(args, "-serial"))
	assert.Equal(t, "stdio,id=pciserial", around(args, "-chardev"))
	assert.Contains(t, args, "pci-serial,chardev=pciserial")
	assert.NotContains(t, strings.Join(Args(Options{}, testPaths), " "), "pci-serial")
}

// NoHPET: q35 without its HPET (and so without the ACPI HPET table).
func TestArgsNoHPET(t *testing.T) {
	assert.Equal(t, "q35,hpet=off", around(Args(Options{NoHPET: true}, testPaths), "-machine"))
	assert.Equal(t, "q35", around(Args(Options{}, testPaths), "-machine"))
}

func TestOptionsValidate(t *testing.T) {
	ok := Options{Image: "a.efi", Timeout: time.Second}
	require.NoError(t, ok.validate())
	tests := []struct {
		name   string
		modify func(*Options)
		want   string
	}{
		{"no image", func(o *Options) { o.Image = "" }, "no image"},
		{"no timeout", func(o *Options) { o.Timeout = 0 }, "timeout must be positive"},
		{"kvm icount", func(o *Options) { o.KVM, o.Icount = true, true }, "cannot be combined with KVM"},
		{"negative smp", func(o *Options) { o.SMP = -1 }, "SMP must not be negative"},
		{"no serial and pci serial", func(o *Options) { o.NoSerial, o.PCISerial = true, true }, "exclude each other"},
		{"read-only without disk", func(o *Options) { o.DiskReadOnly = true }, "needs a disk image"},
		{"u-boot with a read-only disk", func(o *Options) { o.UBoot, o.Disk, o.DiskReadOnly = true, "d.img", true }, "U-Boot boots from an AHCI disk"},
		{"u-boot with kvm", func(o *Options) { o.UBoot, o.KVM = true, true }, "U-Boot boots from an AHCI disk"},
		{"results of a given disk", func(o *Options) { o.Disk, o.ResultsDir = "d.img", "out" }, "ResultsDir is for the boot volume Run makes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.modify(&o)
			err := o.validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
