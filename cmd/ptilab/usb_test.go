package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/host/usbimage"
)

func TestUSB(t *testing.T) {
	dir := t.TempDir()
	efi := filepath.Join(dir, "x.efi")
	require.NoError(t, os.WriteFile(efi, []byte("MZ not really"), 0o644))
	plan := filepath.Join(dir, "small.plan")
	require.NoError(t, os.WriteFile(plan, []byte("r = 1\n"), 0o644))
	img := filepath.Join(dir, "stick.img")

	code, stdout, stderr := ptilab(t, "usb", "-o", img, "-plan", plan, efi)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "FAT32 EFI System Partition")
	got, err := usbimage.ReadFile(img, usbimage.BootPath)
	require.NoError(t, err)
	assert.Equal(t, "MZ not really", string(got))
	got, err = usbimage.ReadFile(img, usbimage.PlanPath)
	require.NoError(t, err)
	assert.Equal(t, "r = 1\n", string(got))

	code, _, stderr = ptilab(t, "usb", "-o", img, filepath.Join(dir, "missing.efi"))
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "missing.efi")
	code, _, _ = ptilab(t, "usb")
	assert.Equal(t, exitUsage, code)
}
