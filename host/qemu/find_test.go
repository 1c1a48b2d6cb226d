package qemu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// touch creates an empty file at dir/name and returns its path.
func touch(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	return p
}

func TestFindFirmwareCandidates(t *testing.T) {
	t.Setenv("OVMF_CODE", "")
	t.Setenv("OVMF_VARS", "")
	dir := t.TempDir()
	code4m := touch(t, dir, "CODE_4M.fd") // its VARS is missing: pair skipped
	code := touch(t, dir, "CODE.fd")
	vars := touch(t, dir, "VARS.fd")
	combined := touch(t, dir, "OVMF.fd")

	gotCode, gotVars, err := findFirmware([]firmware{
		{code4m, filepath.Join(dir, "VARS_4M.fd")},
		{code, vars},
		{combined, ""},
	})
	require.NoError(t, err)
	assert.Equal(t, code, gotCode)
	assert.Equal(t, vars, gotVars)

	gotCode, gotVars, err = findFirmware([]firmware{{filepath.Join(dir, "none.fd"), vars}, {combined, ""}})
	require.NoError(t, err)
	assert.Equal(t, combined, gotCode)
	assert.Empty(t, gotVars, "combined image")

	_, _, err = findFirmware([]firmware{{filepath.Join(dir, "none.fd"), ""}, {dir, ""}})
	require.Error(t, err, "a directory is not firmware")
	assert.NotContains(t, err.Error(), "\n")
	assert.Contains(t, err.Error(), "OVMF firmware not found")
	assert.Contains(t, err.Error(), "make deps")
	assert.Contains(t, err.Error(), "sudo apt-get install qemu-system-x86 ovmf")
}

func TestFindFirmwareEnv(t *testing.T) {
	dir := t.TempDir()
	code := touch(t, dir, "c.fd")
	vars := touch(t, dir, "v.fd")
	none := []firmware{{filepath.Join(dir, "none.fd"), ""}}

	t.Setenv("OVMF_CODE", code)
	t.Setenv("OVMF_VARS", vars)
	gotCode, gotVars, err := findFirmware(none)
	require.NoError(t, err)
	assert.Equal(t, []string{code, vars}, []string{gotCode, gotVars})

	t.Setenv("OVMF_VARS", "")
	gotCode, gotVars, err = findFirmware(none)
	require.NoError(t, err)
	assert.Equal(t, []string{code, ""}, []string{gotCode, gotVars}, "$OVMF_CODE alone is a combined image")

	t.Setenv("OVMF_VARS", filepath.Join(dir, "missing.fd"))
	_, _, err = findFirmware(none)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "$OVMF_VARS ("+filepath.Join(dir, "missing.fd")+") not found")

	t.Setenv("OVMF_CODE", "")
	t.Setenv("OVMF_VARS", vars)
	_, _, err = findFirmware(none)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "$OVMF_VARS is set but $OVMF_CODE is not")
}

func TestFindQEMUMissing(t *testing.T) {
	t.Setenv("QEMU", "")
	t.Setenv("PATH", t.TempDir())
	_, err := Find()
	require.Error(t, err)
	assert.Equal(t, "qemu: qemu-system-x86_64 not found in PATH: run `make deps` or `sudo apt-get install qemu-system-x86 ovmf`", err.Error())

	t.Setenv("QEMU", "/nonexistent/qemu")
	_, err = Run(t.Context(), Options{Image: "a.efi", Timeout: 1})
	require.Error(t, err, "Run reports the missing tool before touching the image")
	assert.True(t, strings.HasPrefix(err.Error(), "qemu: $QEMU (/nonexistent/qemu) not found: run `make deps`"), err.Error())
}
