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

// TestPlanCheck: plan check and usb -plan find the lines the image would
// ignore, with its own messages, their numbers and a near key for a typo;
// usb then writes no stick. The stick's own plan passes.
func TestPlanCheck(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.plan")
	require.NoError(t, os.WriteFile(typo, []byte("# a first plan\nflavour = minimal\nr = 0\nmodes = off,on\n"), 0o644))
	want := "ptilab: " + typo + `:2: "flavour = minimal": unknown key "flavour" (did you mean flavours?) (the image would ignore the line, using the default)` + "\n" +
		"ptilab: " + typo + `:3: "r = 0": r must be an integer from 1 to 4000 (the image would ignore the line, using the default)` + "\n"
	code, stdout, stderr := ptilab(t, "plan", "check", typo)
	assert.Equal(t, exitFail, code)
	assert.Empty(t, stdout)
	assert.Equal(t, want, stderr)

	efi := filepath.Join(dir, "x.efi")
	require.NoError(t, os.WriteFile(efi, []byte("MZ not really"), 0o644))
	img := filepath.Join(dir, "stick.img")
	code, _, stderr = ptilab(t, "usb", "-o", img, "-plan", typo, efi)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, want+"ptilab: "+typo+": 2 lines the image would ignore: no stick written\n")
	assert.NoFileExists(t, img)

	code, stdout, stderr = ptilab(t, "plan", "check", "../../host/usbimage/hardware.plan")
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "ptilab: ../../host/usbimage/hardware.plan: every line is used\n", stdout)
	code, _, _ = ptilab(t, "plan", "lint", typo)
	assert.Equal(t, exitUsage, code)

	// A plan the image accepts but whose 32-bit loops cannot hold its
	// repeats: every line used (exit 0), and a warning naming them.
	big := filepath.Join(dir, "big.plan")
	require.NoError(t, os.WriteFile(big, []byte("benchmarks = null, messaging32, null32, pingpong32\nr = 600\n"), 0o644))
	code, stdout, stderr = ptilab(t, "plan", "check", big)
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "every line is used")
	assert.Equal(t, "ptilab: "+big+": warning: r + warmup = 602, but the 32-bit world's task holds at most 496 repeats: null32, pingpong32 will fail\n", stderr)
}
