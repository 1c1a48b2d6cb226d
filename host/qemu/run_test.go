package qemu

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/host/usbimage"
)

func TestDecodeStatus(t *testing.T) {
	tests := []struct {
		qemu, image int
		debugExit   bool
	}{
		{0, -1, false},   // guest shutdown, or reset with -no-reboot
		{33, 0, true},    // image status 0: wrote 0x10
		{43, 5, true},    // image status 5: wrote 0x15
		{255, 111, true}, // largest value that survives 8-bit exit statuses
		{1, -1, false},   // QEMU's own failure to start (exit 1), not a status
		{11, -1, false},  // a value below the base: not ptilab's
		{2, -1, false},   // QEMU's own failure
		{-1, -1, false},  // killed by a signal
	}
	for _, tt := range tests {
		image, debugExit := decodeStatus(tt.qemu)
		assert.Equal(t, tt.image, image, "status %d", tt.qemu)
		assert.Equal(t, tt.debugExit, debugExit, "status %d", tt.qemu)
	}
}

func TestExitCode(t *testing.T) {
	end := []byte("PTILAB-END {\"status\":\"ok\"}\n")
	assert.Equal(t, 0, ExitCode(&Result{QEMUStatus: 33, ImageStatus: 0, DebugExit: true, Serial: end}))
	assert.Equal(t, ExitNoEnd, ExitCode(&Result{QEMUStatus: 33, ImageStatus: 0, DebugExit: true}), "0 without PTILAB-END")
	assert.Equal(t, 5, ExitCode(&Result{QEMUStatus: 43, ImageStatus: 5, DebugExit: true}))
	assert.Equal(t, 124, ExitCode(&Result{QEMUStatus: -1, ImageStatus: -1, TimedOut: true}))
	assert.Equal(t, ExitNoStatus, ExitCode(&Result{QEMUStatus: 0, ImageStatus: -1}), "firmware shutdown")
	assert.Equal(t, ExitNoStatus, ExitCode(&Result{QEMUStatus: 1, ImageStatus: -1}), "QEMU failed to start")
}

func TestWriteESP(t *testing.T) {
	esp := filepath.Join(t.TempDir(), "esp.img")
	opts := Options{
		Plan:  []byte("cpu = 0\n"),
		Files: map[string][]byte{"data/in.bin": {1, 2, 3}, "./top.txt": []byte("t")},
	}
	require.NoError(t, writeESP(esp, []byte("MZ image"), opts))
	for name, want := range map[string]string{
		"EFI/BOOT/BOOTX64.EFI": "MZ image",
		"ptilab.plan":          "cpu = 0\n",
		"data/in.bin":          "\x01\x02\x03",
		"top.txt":              "t",
	} {
		got, err := usbimage.ReadFile(esp, name)
		require.NoError(t, err, name)
		assert.Equal(t, want, string(got), name)
	}

	esp = filepath.Join(t.TempDir(), "esp.img")
	require.NoError(t, writeESP(esp, nil, Options{}))
	_, err := usbimage.ReadFile(esp, PlanFile)
	assert.Error(t, err, "nil Plan writes no plan file")
	_, err = usbimage.ReadFile(esp, "EFI/BOOT/BOOTX64.EFI")
	assert.NoError(t, err)

	// The results files come out by their base names.
	require.NoError(t, usbimage.ReplaceFile(esp, usbimage.ResultsDir+"/a.log", []byte("run a")))
	out := filepath.Join(t.TempDir(), "results")
	require.NoError(t, copyResults(esp, out))
	got, err := os.ReadFile(filepath.Join(out, "a.log"))
	require.NoError(t, err)
	assert.Equal(t, "run a", string(got))
}

func TestWriteESPRejects(t *testing.T) {
	for name, files := range map[string]map[string][]byte{
		"escape":        {"../x": nil},
		"absolute":      {"/etc/x": nil},
		"replaces boot": {"efi/boot/bootx64.efi": nil},
		"replaces plan": {"PTILAB.PLAN": nil},
	} {
		t.Run(name, func(t *testing.T) {
			err := writeESP(filepath.Join(t.TempDir(), "esp.img"), nil, Options{Plan: []byte{}, Files: files})
			assert.Error(t, err)
		})
	}
}
