package bochs

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ptilab/ptilab/host/hosttool"
)

// InstallHint ends every "missing tool" error: how to get the pinned
// Bochs (host/bochs/build.sh, through make) and the firmware.
const InstallHint = "run `make deps bochs-build` (the pinned Bochs, built into your cache), or set BOCHS=/usr/bin/bochs for Debian's Bochs 2.7 (packages bochs bochs-sdl bochsbios vgabios ovmf)"

// pinnedEnv is host/bochs/pinned.env: the Bochs commit build.sh builds.
//
//go:embed pinned.env
var pinnedEnv string

// PinnedCommit is the Bochs commit ptilab runs by default (pinned.env's
// BOCHS_COMMIT, 40 hex digits).
var PinnedCommit = pinnedValue("BOCHS_COMMIT")

// pinnedValue returns pinned.env's value of key, or "" without one.
func pinnedValue(key string) string {
	sc := bufio.NewScanner(strings.NewReader(pinnedEnv))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && k == key {
			return v
		}
	}
	return ""
}

// PinnedDir returns where build.sh installs the pinned Bochs:
// $XDG_CACHE_HOME/ptilab/bochs-<first 12 digits of PinnedCommit>, with
// ~/.cache for an unset XDG_CACHE_HOME (os.UserCacheDir).
func PinnedDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("bochs: no cache directory for the pinned Bochs: %w", err)
	}
	return filepath.Join(cache, "ptilab", "bochs-"+PinnedCommit[:12]), nil
}

// Build describes a Bochs executable: which Bochs it is and what its
// bochsrc and command line may use.
type Build struct {
	// Path is the executable (Debian's /usr/bin/bochs is a script that
	// runs bochs-bin -q).
	Path string
	// Version is the version of its banner, "Bochs x86 Emulator 3.0.devel"
	// giving "3.0.devel" (the pinned 3.1-line tree still says 3.0.devel).
	Version string
	// Commit is PinnedCommit for the pinned build (Path in PinnedDir,
	// whose "pinned" stamp names the commit), "" for any other.
	Commit string
	// Debugger: built with Bochs's debugger (its --help lists -rc), which
	// stops before the first instruction and must be told to continue.
	Debugger bool
}

// Legacy reports whether b is a Bochs 2.x, such as Debian bookworm's 2.7:
// its display library is SDL2 (Debian builds no "nogui") with sound and
// speaker devices to quiet, and it loads ROM images of 2 MiB at most.
// Later builds run headless with "nogui" and no sound devices, as
// build.sh configures them.
func (b Build) Legacy() bool { return strings.HasPrefix(b.Version, "2.") }

// String names the build as ptilab records it: "bochs 3.0.devel
// 783b58fd6d9b" for the pinned one, "bochs 2.7 /usr/bin/bochs" for
// another.
func (b Build) String() string {
	if b.Commit != "" {
		return "bochs " + b.Version + " " + b.Commit[:12]
	}
	return "bochs " + b.Version + " " + b.Path
}

// Paths names the host files a Bochs run uses.
type Paths struct {
	// Bochs is the executable and what it is.
	Bochs Build
	// Code and Vars are the 2 MiB OVMF build's code and variable store,
	// concatenated (Vars first) into the ROM image (see ROM).
	Code, Vars string
	// VGABIOS is the VGA option ROM Bochs's VGA card needs.
	VGABIOS string
}

// firmware lists the OVMF builds that fit Bochs's ROM: Debian's ovmf
// package ships OVMF_CODE.fd (1920 KiB) and OVMF_VARS.fd (128 KiB) beside
// the 4 MiB builds, which Bochs 2.7 refuses ("ROM image too large").
var firmware = [][2]string{
	{"/usr/share/OVMF/OVMF_CODE.fd", "/usr/share/OVMF/OVMF_VARS.fd"},
}

// vgaROMs lists the VGA BIOS locations tried after the build's own
// (share/bochs/VGABIOS-lgpl-latest.bin beside its bin/): Debian's vgabios
// package, and the name Bochs 2.7's installation uses.
var vgaROMs = []string{"/usr/share/vgabios/vgabios.bin", "/usr/share/bochs/VGABIOS-lgpl-latest"}

// pluginDirs are where Bochs 2.7 builds with plugins keep them; the display
// library Run uses with them (sdl2) is the plugin libbx_sdl2_gui.
var pluginDirs = []string{"/usr/lib/x86_64-linux-gnu/bochs/plugins", "/usr/lib64/bochs/plugins", "/usr/lib/bochs/plugins", "/usr/local/lib/bochs/plugins"}

// Find locates Bochs, the VGA BIOS and the 2 MiB OVMF. Bochs is exe when
// given, else $BOCHS when set (a path, or a name looked up in PATH), else
// the pinned build in PinnedDir; the firmware is $BOCHS_OVMF_CODE (with
// $BOCHS_OVMF_VARS, or alone) when set, else /usr/share/OVMF/OVMF_CODE.fd
// and OVMF_VARS.fd (QEMU's $OVMF_CODE usually names a 4 MiB build, which
// Bochs 2.7 cannot load). A missing piece is an error whose message is one
// line naming what is missing and how to get it.
func Find(exe string) (Paths, error) {
	var p Paths
	b, err := findBochs(exe)
	if err != nil {
		return Paths{}, err
	}
	p.Bochs = b
	if b.Legacy() {
		if err := findPlugin(pluginDirs); err != nil {
			return Paths{}, err
		}
	}
	roms := append([]string{filepath.Join(filepath.Dir(filepath.Dir(b.Path)), "share", "bochs", "VGABIOS-lgpl-latest.bin")}, vgaROMs...)
	for _, v := range roms {
		if isFile(v) {
			p.VGABIOS = v
			break
		}
	}
	if p.VGABIOS == "" {
		return Paths{}, fmt.Errorf("bochs: no VGA BIOS (tried %s): %s", strings.Join(roms, ", "), InstallHint)
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

// findBochs returns the Bochs Find uses and what it is (see Probe).
func findBochs(exe string) (Build, error) {
	if exe != "" {
		path, err := exec.LookPath(exe)
		if err != nil {
			return Build{}, fmt.Errorf("bochs: %s not found: %s", exe, InstallHint)
		}
		return Probe(path)
	}
	if os.Getenv("BOCHS") != "" {
		path, err := hosttool.Find("BOCHS", "bochs")
		if err != nil {
			return Build{}, fmt.Errorf("bochs: %v: %s", err, InstallHint)
		}
		return Probe(path)
	}
	dir, err := PinnedDir()
	if err != nil {
		return Build{}, err
	}
	path := filepath.Join(dir, "bin", "bochs")
	if !isFile(path) {
		return Build{}, fmt.Errorf("bochs: the pinned Bochs (%s) is not built in %s: %s", PinnedCommit[:12], dir, InstallHint)
	}
	return Probe(path)
}

// probeTimeout bounds Probe's run of bochs --help.
const probeTimeout = 30 * time.Second

// banner matches the version line Bochs prints on exit.
var banner = regexp.MustCompile(`Bochs x86 Emulator (\S+)`)

// Probe runs path --help and returns what it is: the version from its
// banner, its debugger from the -rc option its usage lists, and
// PinnedCommit when its directory's "pinned" stamp (written by build.sh)
// names that commit. The error says when it does not run or prints no
// banner.
func Probe(path string) (Build, error) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--help").CombinedOutput()
	m := banner.FindSubmatch(out)
	if m == nil {
		if err == nil {
			err = errors.New("no version banner")
		}
		return Build{}, fmt.Errorf("bochs: %s --help: %v: %s", path, err, InstallHint)
	}
	b := Build{Path: path, Version: string(m[1]), Debugger: strings.Contains(string(out), "\n  -rc ")}
	stamp, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(path)), "pinned"))
	if f := strings.Fields(string(stamp)); len(f) > 0 && f[0] == PinnedCommit {
		b.Commit = PinnedCommit
	}
	return b, nil
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
