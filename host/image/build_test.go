package image

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEnvPinsGOAMD64 shows that a GOAMD64=v3 (or GOOS, GOARCH, CGO_ENABLED)
// in the caller's environment does not reach the kernel program's build:
// the go command, run with Env's result, reports the pinned values.
func TestEnvPinsGOAMD64(t *testing.T) {
	environ := []string{"GOAMD64=v3", "GOOS=windows", "GOARCH=arm64", "CGO_ENABLED=1"}
	env := Env(environ)
	assert.Equal(t, []string{"GOAMD64=v3", "GOOS=windows", "GOARCH=arm64", "CGO_ENABLED=1"}, environ, "the caller's slice is left alone")

	goCmd, err := exec.LookPath("go")
	require.NoError(t, err)
	cmd := exec.Command(goCmd, "env", "GOAMD64", "GOOS", "GOARCH", "CGO_ENABLED")
	cmd.Env = append(exec.Command(goCmd).Environ(), env...)
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, []string{GOAMD64, "linux", "amd64", "0"}, strings.Fields(string(out)))
	assert.Equal(t, "v1", GOAMD64, "the kernel clears CR4.OSXSAVE (no AVX) and runs on any x86-64 model")
}
