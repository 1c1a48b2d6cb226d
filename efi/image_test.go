package efi

import (
	"debug/pe"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// peTestdata returns the path of a PE file of the Go distribution's
// debug/pe tests: real images made by other linkers.
func peTestdata(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err)
	return filepath.Join(strings.TrimSpace(string(out)), "src", "debug", "pe", "testdata", name)
}

// peSection finds the sections of real PE images (a MinGW executable and
// a Linux kernel's EFI stub) where debug/pe reads them: the headers of a
// loaded image are its file's first bytes.
func TestPESection(t *testing.T) {
	for _, name := range []string{"gcc-amd64-mingw-exec", "vmlinuz-4.15.0-47-generic"} {
		t.Run(name, func(t *testing.T) {
			path := peTestdata(t, name)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			f, err := pe.Open(path)
			require.NoError(t, err)
			defer f.Close()
			base := hostAddr(heapBytes(b))
			require.NotNil(t, f.Section(".text"))
			for _, s := range f.Sections {
				if len(s.Name) > 8 {
					continue // a long name sits in the string table, not in the header
				}
				addr, size, ok := peSection(base, s.Name)
				require.True(t, ok, s.Name)
				assert.Equal(t, uint64(s.VirtualAddress), addr-base, s.Name)
				assert.Equal(t, uint64(s.VirtualSize), size, s.Name)
			}
			for _, name := range []string{".nothere", "", ".text\x00\x00\x00\x00"} {
				_, _, ok := peSection(base, name)
				assert.False(t, ok, "%q", name)
			}
		})
	}
	_, _, ok := peSection(hostAddr(heapBytes(make([]byte, 256))), ".text")
	assert.False(t, ok, "no MZ header")
}
