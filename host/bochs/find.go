package bochs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ptilab/ptilab/host/hosttool"
)

// InstallHint ends every "missing tool" error: Debian's packages for a
// Bochs run (bochs-sdl for the display library, vgabios for the VGA ROM,
// ovmf for the firmware).
const InstallHint = "run `make deps` or `sudo apt-get install bochs bochs-sdl bochsbios vgabios ovmf`"

// Paths names the host files a Bochs run uses.
type Paths struct {
	// Bochs is the bochs executable (Debian's /usr/bin/bochs wraps
	// bochs-bin -q).
	Bochs string
	// Code and Vars are the 2 MiB OVMF build's code and variable store,
	// concatenated (Vars first) into the ROM image (see ROM).
	Code, Vars string
	// VGABIOS is the VGA option ROM Bochs's VGA card needs.
	VGABIOS string
}

// firmware lists the OVMF builds that fit Bochs 2.7's 2 MiB ROM limit:
// Debian's ovmf package ships OVMF_CODE.fd (1920 KiB) and OVMF_VARS.fd
// (128 KiB) beside the 4 MiB builds, which Bochs refuses ("ROM image too
// large").
var firmware = [][2]string{
	{"/usr/share/OVMF/OVMF_CODE.fd", "/usr/share/OVMF/OVMF_VARS.fd"},
}

// vgaROMs lists the VGA BIOS locations tried: Debian's vgabios package,
// and the name Bochs's own installation uses.
var vgaROMs = []string{"/usr/share/vgabios/vgabios.bin", "/usr/share/bochs/VGABIOS-lgpl-latest"}

// pluginDirs are where Bochs builds with plugins keep them; the display
// library Run uses (sdl2) is the plugin libbx_sdl2_gui.
var pluginDirs = []string{"/usr/lib/x86_64-linux-gnu/bochs/plugins", "/usr/lib64/bochs/plugins", "/usr/lib/bochs/plugins", "/usr/local/lib/bochs/plugins"}

// Find locates Bochs, its SDL2 display plugin, the VGA BIOS and the 2 MiB
// OVMF. Bochs is $BOCHS when set (a path, or a name looked up in PATH),
// else bochs from PATH; the firmware is $BOCHS_OVMF_CODE (with
// $BOCHS_OVMF_VARS, or alone) when set, else /usr/share/OVMF/OVMF_CODE.fd
// and OVMF_VARS.fd (QEMU's $OVMF_CODE usually names a 4 MiB build, which
// Bochs cannot load). A missing piece is an error whose message is one
// line naming what is missing and the package to install.
func Find() (Paths, error) {
	var p Paths
	bochs, err := hosttool.Find("BOCHS", "bochs")
	if err != nil {
		return Paths{}, fmt.Errorf("bochs: %v (package bochs): %s", err, InstallHint)
	}
	p.Bochs = bochs
	if err := findPlugin(pluginDirs); err != nil {
		return Paths{}, err
	}
	for _, v := range vgaROMs {
		if isFile(v) {
			p.VGABIOS = v
			break
		}
	}
	if p.VGABIOS == "" {
		return Paths{}, fmt.Errorf("bochs: no VGA BIOS (tried %s; package vgabios): %s", strings.Join(vgaROMs, ", "), InstallHint)
	}
	if code := os.Getenv("BOCHS_OVMF_CODE"); code != "" {
		p.Code, p.Vars = code, os.Getenv("BOCHS_OVMF_VARS")
		for _, f := range []string{p.Code, p.Vars} {
			if f != "" && !isFile(f) {
				return Paths{}, fmt.Errorf("bochs: %s not found (from $BOCHS_OVMF_CODE/$BOCHS_OVMF_VARS): %s", f, InstallHint)
			}
		}
		return p, nil
	}
	for _, f := range firmware {
		if isFile(f[0]) && isFile(f[1]) {
			p.Code, p.Vars = f[0], f[1]
			return p, nil
		}
	}
	return Paths{}, fmt.Errorf("bochs: the 2 MiB OVMF (%s and %s; package ovmf) not found: %s", firmware[0][0], firmware[0][1], InstallHint)
}

// findPlugin checks, where a plugin directory of Bochs exists, that the
// SDL2 display plugin is in it (Debian's bochs-sdl): without it Bochs
// stops with "display library 'sdl2' not available".
func findPlugin(dirs []string) error {
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		if m, _ := filepath.Glob(filepath.Join(d, "libbx_sdl2_gui.so*")); len(m) > 0 {
			return nil
		}
		return fmt.Errorf("bochs: the SDL2 display plugin is not in %s (package bochs-sdl): %s", d, InstallHint)
	}
	return nil // a build without plugins, or elsewhere: Bochs says what is missing
}

// isFile reports whether path names an existing regular file (after
// following symlinks).
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
