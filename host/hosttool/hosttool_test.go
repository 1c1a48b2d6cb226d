package hosttool

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFind(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", dir)

	t.Setenv("PROG", "")
	got, err := Find("PROG", "prog")
	require.NoError(t, err)
	assert.Equal(t, prog, got, "from PATH")

	_, err = Find("PROG", "other")
	assert.EqualError(t, err, "other not found in PATH")

	t.Setenv("PROG", prog)
	got, err = Find("PROG", "none")
	require.NoError(t, err)
	assert.Equal(t, prog, got, "$PROG overrides the name")

	t.Setenv("PROG", "prog")
	got, err = Find("PROG", "none")
	require.NoError(t, err)
	assert.Equal(t, prog, got, "$PROG may be a name in PATH")

	missing := filepath.Join(dir, "missing")
	t.Setenv("PROG", missing)
	_, err = Find("PROG", "prog")
	assert.EqualError(t, err, "$PROG ("+missing+") not found")
}
