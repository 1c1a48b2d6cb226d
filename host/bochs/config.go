package bochs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MaxROM returns the largest ROM image b loads (memory/misc_mem.cc:
// "ROM: ROM image too large"; BIOSROMSZ in memory/memory-bochs.h): 2 MiB
// in Bochs 2.7, 4 MiB in the pinned build.
func MaxROM(b Build) int {
	if b.Legacy() {
		return 2 << 20
	}
	return 4 << 20
}

// ROM returns the firmware image for Bochs's romimage option: the OVMF
// variable store followed by the code, as OVMF's flash layout puts them
// (the code ends at 4 GiB), or the code alone when vars is empty; max is
// the build's limit (MaxROM).
func ROM(code, vars string, max int) ([]byte, error) {
	var rom []byte
	for _, f := range []string{vars, code} {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("bochs: firmware: %w", err)
		}
		rom = append(rom, b...)
	}
	if len(rom) > max {
		return nil, fmt.Errorf("bochs: firmware %s + %s is %d KiB: this Bochs loads at most %d MiB (use the 2 MiB OVMF, OVMF_CODE.fd and OVMF_VARS.fd): %s", vars, code, len(rom)>>10, max>>20, InstallHint)
	}
	return rom, nil
}

// MSRs is the msrs.def file Run gives Bochs (bochsrc "cpu: msrs=", loaded
// by Bochs's BX_CPU_C::load_MSRs: one MSR a line, "index type reset_hi
// reset_lo readonly_hi readonly_lo ignored_hi ignored_lo" in hex, type 0
// general): the MSRs OVMF reads that Bochs's CPU models lack. With them
// defined Run sets ignore_bad_msrs=0, so that any other MSR a model lacks
// raises #GP as on hardware instead of reading 0.
//
// IA32_PLATFORM_ID (17H, SDM Vol. 4, Table 2-2): OVMF reads it early in
// DXE (UefiCpuPkg's MpInitLib, to match microcode updates); without it
// OVMF takes #GP there and hangs in its exception handler. Read-only, 0.
const MSRs = `# MSRs that OVMF reads and Bochs's CPU models lack (see host/bochs).
# index type reset(hi lo) read-only bits(hi lo) ignored bits(hi lo)
0x017 0 00000000 00000000 ffffffff ffffffff 00000000 00000000
`

// Config describes one run's bochsrc. Paths are used as given.
type Config struct {
	CPU       string // Bochs CPU model (cpu: model=)
	MemoryMiB int    // guest RAM
	ROM       string // firmware image (romimage)
	VGABIOS   string // vgaromimage
	Disk      string // flat disk image on ata0-master
	Serial    string // file COM1's output is written to
	Log       string // Bochs's own log
	// MSRs is the msrs.def file, with ignore_bad_msrs=0; empty means
	// ignore_bad_msrs=1 (MSRs a model lacks read 0, writes are dropped).
	MSRs string
	// Legacy: the bochsrc of a Bochs 2.x (Build.Legacy), whose display is
	// SDL2 and whose sound devices must be quieted; otherwise the pinned
	// build's, headless ("nogui") and without sound devices, which it
	// refuses to configure.
	Legacy bool
}

// IPS is the emulated instructions per second Run configures: Bochs's
// clock (with sync=none) derives emulated time from the instruction count
// at this rate, and its TSC counts instructions, so the image measures a
// TSC of IPS Hz against the PIT.
const IPS = 100_000_000

// Bochsrc returns the configuration file for c. The display is "nogui",
// or with c.Legacy SDL2 (Debian's 2.7 has no "nogui"; Run sets
// SDL_VIDEODRIVER=dummy) with dummy sound drivers and no speaker; the
// machine an i440FX with the disk on the first ATA channel, COM1 a file,
// the clock "sync=none" (emulated time follows the instruction count, so
// runs are deterministic) and no triple-fault reset (a triple fault stops
// Bochs, as QEMU's -no-reboot). Bochs's panics are fatal (it exits;
// "ACPI control: soft power off" is one), its errors and panics go to
// the log, its info and debug messages nowhere.
func Bochsrc(c Config) string {
	msrs := "ignore_bad_msrs=1"
	if c.MSRs != "" {
		msrs = "ignore_bad_msrs=0, msrs=" + quote(c.MSRs)
	}
	display := "nogui"
	if c.Legacy {
		display = "sdl2"
	}
	lines := []string{
		"config_interface: textconfig",
		"display_library: " + display,
		fmt.Sprintf("cpu: model=%s, count=1, ips=%d, reset_on_triple_fault=0, %s", c.CPU, IPS, msrs),
		fmt.Sprintf("memory: guest=%d, host=%d", c.MemoryMiB, c.MemoryMiB),
		// address=0: placed below 4 GiB by its size. An explicit
		// 0xffe00000 overflows Bochs 2.7's check and panics.
		"romimage: file=" + quote(c.ROM) + ", address=0",
		"vgaromimage: file=" + quote(c.VGABIOS),
		"pci: enabled=1, chipset=i440fx",
		"vga: extension=vbe",
		"boot: disk",
		"ata0: enabled=1, ioaddr1=0x1f0, ioaddr2=0x3f0, irq=14",
		"ata0-master: type=disk, mode=flat, path=" + quote(c.Disk),
		"com1: enabled=1, mode=file, dev=" + quote(c.Serial),
		"clock: sync=none, time0=1704067200",
		"mouse: enabled=0",
		"log: " + quote(c.Log),
		"panic: action=fatal",
		"error: action=report",
		"info: action=ignore",
		"debug: action=ignore",
	}
	if c.Legacy {
		lines = append(lines, "sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy", "speaker: enabled=0")
	}
	return strings.Join(lines, "\n") + "\n"
}

// quote writes a path for bochsrc, which splits options at commas and
// takes double quotes around a value with spaces or commas.
func quote(s string) string {
	if strings.ContainsAny(s, " ,\t") {
		return `"` + s + `"`
	}
	return s
}

// WithDefault returns plan with the line "key = value" appended when it
// has no key line; a nil plan gives that one line.
func WithDefault(plan []byte, key, value string) []byte {
	sc := bufio.NewScanner(bytes.NewReader(plan))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if k, _, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == key {
			return plan
		}
	}
	out := append([]byte{}, plan...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, key+" = "+value+"\n"...)
}

// BootPlan returns the plan Run writes to the boot disk: plan with "end =
// poweroff" (a run that returned to the firmware would leave Bochs in the
// boot manager; a power-off ends Bochs) and "emulator_build = " b's name
// (the image records it: it cannot see which Bochs runs it) where plan
// sets neither.
func BootPlan(plan []byte, b Build) []byte {
	return WithDefault(WithDefault(plan, "end", "poweroff"), "emulator_build", b.String())
}

// MemoryMiB parses a RAM size in QEMU's -m syntax ("256M", "1G", "512",
// a bare number being MiB) into MiB.
func MemoryMiB(s string) (int, error) {
	num, unit := s, byte('m')
	if n := len(s); n > 0 && strings.ContainsRune("kKmMgGtT", rune(s[n-1])) {
		num, unit = s[:n-1], s[n-1]|0x20
	}
	v, err := strconv.ParseUint(num, 10, 32)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("bochs: memory size %q: want a number of MiB or one with a K, M, G or T suffix", s)
	}
	var mib uint64
	switch unit {
	case 'k':
		if v%1024 != 0 {
			return 0, fmt.Errorf("bochs: memory size %q is not a whole number of MiB", s)
		}
		mib = v / 1024
	case 'm':
		mib = v
	case 'g':
		mib = v << 10
	case 't':
		mib = v << 20
	}
	if mib > 1<<20 {
		return 0, fmt.Errorf("bochs: memory size %q is too large", s)
	}
	return int(mib), nil
}
