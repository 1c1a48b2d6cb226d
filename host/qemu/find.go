package qemu

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ptilab/ptilab/host/hosttool"
)

// installHint ends every "missing tool" error.
const installHint = "run `make deps` or `sudo apt-get install qemu-system-x86 ovmf`"

// Paths names the host files a QEMU run uses.
type Paths struct {
	// QEMU is the qemu-system-x86_64 executable.
	QEMU string
	// Code is the OVMF code flash image, mapped read-only. When Vars is
	// empty it is a combined code+variables image loaded with -bios.
	Code string
	// Vars is the OVMF variable store. Find returns the pristine template;
	// Run passes Args a private writable copy.
	Vars string
	// ESP is the raw disk image the guest boots from: one Run makes, or
	// Options.Disk. Find leaves it empty; Run fills it in.
	ESP string
}

// firmware is one candidate OVMF installation; vars is empty for a combined
// image.
type firmware struct{ code, vars string }

// defaultFirmware lists the OVMF locations Find tries, in order.
var defaultFirmware = []firmware{
	{"/usr/share/OVMF/OVMF_CODE_4M.fd", "/usr/share/OVMF/OVMF_VARS_4M.fd"},
	{"/usr/share/OVMF/OVMF_CODE.fd", "/usr/share/OVMF/OVMF_VARS.fd"},
	{"/usr/share/ovmf/OVMF.fd", ""},
	{"/usr/share/qemu/OVMF.fd", ""},
}

// Find locates qemu-system-x86_64 and the OVMF firmware.
//
// QEMU is $QEMU when set (a path, or a name looked up in PATH), else
// qemu-system-x86_64 from PATH. The firmware is $OVMF_CODE (with $OVMF_VARS,
// or alone as a combined image) when set, else the first complete entry of:
// /usr/share/OVMF/{OVMF_CODE_4M.fd,OVMF_VARS_4M.fd},
// /usr/share/OVMF/{OVMF_CODE.fd,OVMF_VARS.fd}, /usr/share/ovmf/OVMF.fd,
// /usr/share/qemu/OVMF.fd.
//
// A missing piece is an error whose message is one line naming what is
// missing and how to install it.
func Find() (Paths, error) {
	qemu, err := findQEMU()
	if err != nil {
		return Paths{}, err
	}
	code, vars, err := findFirmware(defaultFirmware)
	if err != nil {
		return Paths{}, err
	}
	return Paths{QEMU: qemu, Code: code, Vars: vars}, nil
}

func findQEMU() (string, error) {
	path, err := hosttool.Find("QEMU", "qemu-system-x86_64")
	if err != nil {
		return "", fmt.Errorf("qemu: %v: %s", err, installHint)
	}
	return path, nil
}

// findFirmware applies the $OVMF_CODE/$OVMF_VARS overrides, then tries
// candidates in order.
func findFirmware(candidates []firmware) (code, vars string, err error) {
	envCode, envVars := os.Getenv("OVMF_CODE"), os.Getenv("OVMF_VARS")
	switch {
	case envCode == "" && envVars != "":
		return "", "", errors.New("qemu: $OVMF_VARS is set but $OVMF_CODE is not: set both, or neither to use the installed OVMF")
	case envCode != "":
		for _, f := range []struct{ env, path string }{{"OVMF_CODE", envCode}, {"OVMF_VARS", envVars}} {
			if f.path != "" && !isFile(f.path) {
				return "", "", fmt.Errorf("qemu: $%s (%s) not found: %s", f.env, f.path, installHint)
			}
		}
		return envCode, envVars, nil
	}
	var tried []string
	for _, c := range candidates {
		if isFile(c.code) && (c.vars == "" || isFile(c.vars)) {
			return c.code, c.vars, nil
		}
		tried = append(tried, c.code)
	}
	return "", "", fmt.Errorf("qemu: OVMF firmware not found (tried %s; or set $OVMF_CODE and $OVMF_VARS): %s", strings.Join(tried, ", "), installHint)
}

// isFile reports whether path names an existing regular file (after
// following symlinks).
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// uBootROM is where Debian's u-boot-qemu puts U-Boot's x86-64 ROM.
const uBootROM = "/usr/lib/u-boot/qemu-x86_64/u-boot.rom"

// FindUBoot locates U-Boot's x86-64 ROM for Options.UBoot: $UBOOT_ROM when
// set, else Debian's u-boot-qemu's. A missing ROM is an error that says
// how to install it.
func FindUBoot() (string, error) {
	rom := uBootROM
	if env := os.Getenv("UBOOT_ROM"); env != "" {
		rom = env
	}
	if !isFile(rom) {
		return "", fmt.Errorf("qemu: U-Boot's x86-64 ROM %s not found: run `make deps` or `sudo apt-get install u-boot-qemu` (or set $UBOOT_ROM)", rom)
	}
	return rom, nil
}
