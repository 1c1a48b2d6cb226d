package bochs

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	diskfs "github.com/diskfs/go-diskfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/host/qemu"
)

func TestWriteDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "disk.img")
	image := []byte(strings.Repeat("MZ", 300000))
	files := map[string][]byte{
		"EFI/BOOT/BOOTX64.EFI": image,
		"ptilab.plan":          []byte("end = poweroff\n"),
		"data/deep/x.bin":      {1, 2, 3},
	}
	require.NoError(t, WriteDisk(path, files))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Zero(t, fi.Size()%cylinderBytes, "a whole number of 16x63x512-byte cylinders")
	assert.GreaterOrEqual(t, fi.Size(), int64(len(image)+diskSlack))

	d, err := diskfs.Open(path, diskfs.WithOpenMode(diskfs.ReadOnly))
	require.NoError(t, err)
	defer d.Close()
	fs, err := d.GetFilesystem(0)
	require.NoError(t, err, "a FAT volume on the whole disk")
	for name, want := range files {
		f, err := fs.OpenFile("/"+name, os.O_RDONLY)
		require.NoError(t, err, name)
		got, err := io.ReadAll(f)
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
	}
}

func TestBochsrc(t *testing.T) {
	c := Config{CPU: "broadwell_ult", MemoryMiB: 512, ROM: "/t/ovmf.rom", VGABIOS: "/v/vga.bin",
		Disk: "/t/my disk.img", Serial: "/dev/fd/3", Log: "/t/bochs.log", MSRs: "/t/msrs.def"}
	rc := Bochsrc(c)
	for _, want := range []string{
		"cpu: model=broadwell_ult, count=1, ips=100000000, reset_on_triple_fault=0, ignore_bad_msrs=0, msrs=/t/msrs.def\n",
		"memory: guest=512, host=512\n",
		"romimage: file=/t/ovmf.rom, address=0\n",
		"vgaromimage: file=/v/vga.bin\n",
		`ata0-master: type=disk, mode=flat, path="/t/my disk.img"` + "\n",
		"com1: enabled=1, mode=file, dev=/dev/fd/3\n",
		"clock: sync=none, time0=1704067200\n",
		"display_library: nogui\n",
		"log: /t/bochs.log\n",
		"panic: action=fatal\n",
	} {
		assert.Contains(t, rc, want)
	}
	assert.NotContains(t, rc, "sound:", "the pinned build has no sound devices to name")
	assert.NotContains(t, rc, "speaker:")
	c.MSRs = ""
	assert.Contains(t, Bochsrc(c), "reset_on_triple_fault=0, ignore_bad_msrs=1\n")
	c.Legacy = true
	rc = Bochsrc(c)
	assert.Contains(t, rc, "display_library: sdl2\n", "Debian's 2.7 has no nogui")
	assert.Contains(t, rc, "sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy\n")
	assert.Contains(t, rc, "speaker: enabled=0\n")
}

func TestMSRsFile(t *testing.T) {
	// The format Bochs's load_MSRs scans: "%x %d %08x %08x %08x %08x %08x %08x".
	n := 0
	for _, l := range strings.Split(MSRs, "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		f := strings.Fields(l)
		require.Len(t, f, 8, l)
		assert.Equal(t, "0", f[1], "type 0, general")
		for _, h := range f[2:] {
			assert.Len(t, h, 8, l)
		}
		n++
	}
	assert.Equal(t, 1, n)
	assert.Contains(t, MSRs, "0x017 ", "IA32_PLATFORM_ID, which OVMF reads")
}

func TestWithDefault(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", "end = poweroff\n"},
		{"n = 10", "n = 10\nend = poweroff\n"},
		{"n = 10\n", "n = 10\nend = poweroff\n"},
		{"end = return\n", "end = return\n"},
		{"  end=reset # keep\n", "  end=reset # keep\n"},
		{"# end = return\nr = 1\n", "# end = return\nr = 1\nend = poweroff\n"},
		{"endless = 1\n", "endless = 1\nend = poweroff\n"},
	} {
		assert.Equal(t, tt.want, string(WithDefault([]byte(tt.in), "end", "poweroff")), "%q", tt.in)
	}
	assert.Equal(t, "end = poweroff\n", string(WithDefault(nil, "end", "poweroff")))
	b := Build{Path: "/c/bin/bochs", Version: "3.0.devel", Commit: PinnedCommit}
	assert.Equal(t, "n = 10\nend = poweroff\nemulator_build = bochs 3.0.devel "+PinnedCommit[:12]+"\n", string(BootPlan([]byte("n = 10"), b)))
	assert.Equal(t, "emulator_build = mine\nend = return\n", string(BootPlan([]byte("emulator_build = mine\nend = return\n"), b)))
}

func TestMemoryMiB(t *testing.T) {
	for in, want := range map[string]int{"256M": 256, "256m": 256, "1G": 1024, "512": 512, "2048K": 2} {
		got, err := MemoryMiB(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "0", "M", "1.5G", "-1M", "1000K", "256MB", "9999999T"} {
		_, err := MemoryMiB(in)
		assert.Error(t, err, in)
	}
}

func TestROM(t *testing.T) {
	dir := t.TempDir()
	code, vars, big := filepath.Join(dir, "code"), filepath.Join(dir, "vars"), filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(code, make([]byte, 1920<<10), 0o644))
	require.NoError(t, os.WriteFile(vars, []byte(strings.Repeat("V", 128<<10)), 0o644))
	require.NoError(t, os.WriteFile(big, make([]byte, 3568<<10), 0o644))
	legacy, pinned := MaxROM(Build{Version: "2.7"}), MaxROM(Build{Version: "3.0.devel"})
	assert.Equal(t, 2<<20, legacy)
	assert.Equal(t, 4<<20, pinned)
	rom, err := ROM(code, vars, legacy)
	require.NoError(t, err)
	assert.Len(t, rom, 2<<20)
	assert.Equal(t, byte('V'), rom[0], "the variable store first, the code at the top")
	rom, err = ROM(code, "", legacy)
	require.NoError(t, err)
	assert.Len(t, rom, 1920<<10)
	_, err = ROM(big, vars, legacy)
	assert.ErrorContains(t, err, "at most 2 MiB")
	_, err = ROM(big, vars, pinned)
	assert.NoError(t, err, "the 4 MiB OVMF fits the pinned build's ROM")
	_, err = ROM(filepath.Join(dir, "none"), "", legacy)
	assert.Error(t, err)
}

// fakeBochs writes an executable at dir/bin/bochs that prints what Bochs
// prints for --help: its usage (with -rc when debugger) and the banner
// of version.
func fakeBochs(t *testing.T, dir, version string, debugger bool) string {
	t.Helper()
	usage := "Usage: bochs [flags] [bochsrc options]\n\n  -n               no configuration file\n"
	if debugger {
		usage += "  -rc filename     execute debugger commands stored in file\n"
	}
	script := "#!/bin/sh\nprintf '" + usage + "'\necho '                     Bochs x86 Emulator " + version + "'\n"
	path := filepath.Join(dir, "bin", "bochs")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return path
}

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	pinned := filepath.Join(dir, "pinned")
	path := fakeBochs(t, pinned, "3.0.devel", false)
	b, err := Probe(path)
	require.NoError(t, err)
	assert.Equal(t, Build{Path: path, Version: "3.0.devel"}, b, "no stamp: not the pinned build")
	assert.False(t, b.Legacy())
	require.NoError(t, os.WriteFile(filepath.Join(pinned, "pinned"), []byte(PinnedCommit+" --with-nogui\n"), 0o644))
	b, err = Probe(path)
	require.NoError(t, err)
	assert.Equal(t, PinnedCommit, b.Commit)
	assert.Equal(t, "bochs 3.0.devel "+PinnedCommit[:12], b.String())

	debian := fakeBochs(t, filepath.Join(dir, "debian"), "2.7", true)
	b, err = Probe(debian)
	require.NoError(t, err)
	assert.Equal(t, Build{Path: debian, Version: "2.7", Debugger: true}, b)
	assert.True(t, b.Legacy())
	assert.Equal(t, "bochs 2.7 "+debian, b.String())

	_, err = Probe("/bin/true")
	assert.ErrorContains(t, err, "/bin/true --help: no version banner")
}

func TestPinned(t *testing.T) {
	assert.Regexp(t, `^[0-9a-f]{40}$`, PinnedCommit)
	assert.Regexp(t, `^[0-9a-f]{64}$`, pinnedValue("BOCHS_TARBALL_SHA256"))
	assert.Contains(t, pinnedValue("BOCHS_CONFIGURE"), "--enable-fred")
	t.Setenv("XDG_CACHE_HOME", "/c")
	dir, err := PinnedDir()
	require.NoError(t, err)
	assert.Equal(t, "/c/ptilab/bochs-"+PinnedCommit[:12], dir)
}

func TestFindMissing(t *testing.T) {
	t.Setenv("BOCHS", "ptilab-no-such-bochs")
	_, err := Find("")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "$BOCHS (ptilab-no-such-bochs) not found")
	assert.Contains(t, err.Error(), "make deps bochs-build")
	assert.NotContains(t, err.Error(), "\n", "one line")
	_, err = Find("ptilab-no-such-bochs-either")
	assert.ErrorContains(t, err, "ptilab-no-such-bochs-either not found")

	dir := t.TempDir()
	t.Setenv("BOCHS", "")
	t.Setenv("XDG_CACHE_HOME", dir)
	_, err = Find("")
	assert.ErrorContains(t, err, "the pinned Bochs ("+PinnedCommit[:12]+") is not built in "+dir)

	// A pinned build in the cache, with its own VGA BIOS.
	pinned, err := PinnedDir()
	require.NoError(t, err)
	exe := fakeBochs(t, pinned, "3.0.devel", false)
	require.NoError(t, os.WriteFile(filepath.Join(pinned, "pinned"), []byte(PinnedCommit+"\n"), 0o644))
	vga := filepath.Join(pinned, "share", "bochs", "VGABIOS-lgpl-latest.bin")
	require.NoError(t, os.MkdirAll(filepath.Dir(vga), 0o755))
	require.NoError(t, os.WriteFile(vga, nil, 0o644))
	t.Setenv("BOCHS_OVMF_CODE", "/no/such/OVMF_CODE.fd")
	_, err = Find("")
	assert.ErrorContains(t, err, "/no/such/OVMF_CODE.fd not found (from $BOCHS_OVMF_CODE")
	t.Setenv("BOCHS_OVMF_CODE", vga)
	p, err := Find("")
	require.NoError(t, err)
	assert.Equal(t, Paths{Bochs: Build{Path: exe, Version: "3.0.devel", Commit: PinnedCommit}, Code: vga, VGABIOS: vga}, p)

	// Another Bochs, found through the fallback VGA BIOS list.
	other := fakeBochs(t, filepath.Join(dir, "other"), "2.7", true)
	savedVGA, savedPlugins := vgaROMs, pluginDirs
	t.Cleanup(func() { vgaROMs, pluginDirs = savedVGA, savedPlugins })
	vgaROMs, pluginDirs = []string{vga}, nil
	p, err = Find(other)
	require.NoError(t, err)
	assert.Equal(t, Paths{Bochs: Build{Path: other, Version: "2.7", Debugger: true}, Code: vga, VGABIOS: vga}, p)
	vgaROMs = []string{filepath.Join(dir, "none.bin")}
	_, err = Find(other)
	assert.ErrorContains(t, err, "no VGA BIOS")

	err = findPlugin([]string{filepath.Join(dir, "none"), dir})
	assert.ErrorContains(t, err, "bochs-sdl")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "libbx_sdl2_gui.so"), nil, 0o644))
	assert.NoError(t, findPlugin([]string{dir}))
	assert.NoError(t, findPlugin([]string{filepath.Join(dir, "none")}), "no plugin directory: Bochs says what is missing")
}

func TestExitCode(t *testing.T) {
	ok := []byte("x\nPTILAB-END {\"status\":\"ok\",\"exit\":0}\n")
	fault := []byte("PTILAB-END {\"status\":\"fault\",\"exit\":3}\n")
	assert.Equal(t, 0, ExitCode(&Result{BochsStatus: 1, Serial: ok}))
	assert.Equal(t, 3, ExitCode(&Result{BochsStatus: 1, Serial: fault}))
	assert.Equal(t, 3, ExitCode(&Result{BochsStatus: -1, Stopped: true, Serial: fault}), "killed after the END line")
	assert.Equal(t, qemu.ExitTimeout, ExitCode(&Result{BochsStatus: -1, TimedOut: true, Serial: []byte("ptilab: booting\n")}))
	assert.Equal(t, qemu.ExitNoStatus, ExitCode(&Result{BochsStatus: 1}), "Bochs failed")
	assert.Equal(t, qemu.ExitNoStatus, ExitCode(&Result{BochsStatus: 1, Serial: []byte("PTILAB-END {\"status\":\"ok\"}\n")}), "no exit field")
	s, found := (&Result{Serial: fault}).ImageStatus()
	assert.True(t, found)
	assert.Equal(t, 3, s)
}

func TestMessage(t *testing.T) {
	r := &Result{Output: []byte("====\nBochs is exiting with the following message:\n[ACPI  ] ACPI control: soft power off\n=====\n")}
	assert.Equal(t, "[ACPI  ] ACPI control: soft power off", r.Message())
	r = &Result{Log: []byte("00000e[CPU0 ] x\n01172436547p[ROM   ] >>PANIC<< ROM: ROM image too large\n")}
	assert.Equal(t, "01172436547p[ROM   ] >>PANIC<< ROM: ROM image too large", r.Message())
	assert.Empty(t, (&Result{}).Message())
}

func TestRunErrors(t *testing.T) {
	_, err := Run(t.Context(), Options{Timeout: time.Second})
	assert.EqualError(t, err, "bochs: no image given")
	_, err = Run(t.Context(), Options{Image: "x.efi"})
	assert.ErrorContains(t, err, "timeout must be positive")
	_, err = Run(t.Context(), Options{Image: "x.efi", Timeout: time.Second, Memory: "lots"})
	assert.ErrorContains(t, err, `memory size "lots"`)
	_, err = Run(t.Context(), Options{Image: "x.efi", Timeout: time.Second, Files: map[string][]byte{"../x": nil}})
	assert.Error(t, err)
}

// TestRunTimeout starts Bochs on an image OVMF cannot load (it stays in
// its boot manager) and checks that Run kills it at the timeout. It needs
// Bochs and the 2 MiB OVMF and fails, rather than skips, without them.
func TestRunTimeout(t *testing.T) {
	t.Parallel()
	image := filepath.Join(t.TempDir(), "not.efi")
	require.NoError(t, os.WriteFile(image, []byte("not a PE image"), 0o644))
	var echo bytes.Buffer
	start := time.Now()
	// 10 s: Bochs prints its banner within a second when the machine is
	// idle; the bound leaves room for a loaded one.
	res, err := Run(t.Context(), Options{Image: image, Timeout: 10 * time.Second, Echo: &echo})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 60*time.Second)
	assert.True(t, res.TimedOut)
	assert.False(t, res.Stopped)
	assert.Equal(t, -1, res.BochsStatus)
	assert.Equal(t, qemu.ExitTimeout, ExitCode(res))
	assert.GreaterOrEqual(t, res.Duration, 10*time.Second)
	assert.Equal(t, []byte(res.Serial), echo.Bytes())
	assert.Contains(t, string(res.Output), "reading configuration from", "Bochs's own output is kept")
}
