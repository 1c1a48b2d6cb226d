// Package test holds the QEMU boot tests of ptilab: each test boots the
// real ptilab.efi under QEMU and OVMF and checks what it prints on the
// serial console.
//
// The tests need qemu-system-x86_64 and OVMF. Without them they fail, not
// skip: CI installs both and the tests must run there.
package test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/internal/contract"
	"github.com/ptilab/ptilab/internal/image"
	"github.com/ptilab/ptilab/internal/qemu"
)

const (
	// bootTimeout bounds every QEMU run, firmware start-up included. A boot
	// takes about 5 s here; CI machines may be much slower.
	bootTimeout = 120 * time.Second
	// buildTimeout bounds building the image in TestMain.
	buildTimeout = 5 * time.Minute
)

var (
	// efiPath is the image built once by TestMain.
	efiPath string
	// setupErr, when set, is why the image cannot be booted (QEMU or OVMF
	// missing, or the build failed); every boot test fails with it.
	setupErr error
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

// runTests builds the image into a temporary directory, runs the tests and
// removes the directory.
func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ptilab-boot-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "test:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	setupErr = setup(dir)
	return m.Run()
}

// setup checks that QEMU and OVMF are installed, then builds the image into
// dir.
func setup(dir string) error {
	if _, err := qemu.Find(); err != nil {
		return err
	}
	root, err := filepath.Abs("..")
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return fmt.Errorf("module root %s: %w", root, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	efi := filepath.Join(dir, "ptilab.efi")
	if err := image.Build(ctx, root, filepath.Join(dir, "ptilab.elf"), efi); err != nil {
		return fmt.Errorf("building the image: %w", err)
	}
	efiPath = efi
	return nil
}

// boot runs the test in parallel with the others and boots the image with
// opts (Image and, when zero, Timeout filled in). It fails the test when the
// image cannot be booted or the run timed out, and logs the serial output
// and QEMU's stderr if the test fails.
func boot(t *testing.T, opts qemu.Options) *qemu.Result {
	t.Helper()
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	t.Parallel()
	opts.Image = efiPath
	if opts.Timeout == 0 {
		opts.Timeout = bootTimeout
	}
	res, err := qemu.Run(t.Context(), opts)
	require.NoError(t, err)
	endLine := "no PTILAB-END"
	if e, ok := res.End(); ok {
		endLine = "PTILAB-END " + string(e.Raw)
	}
	t.Logf("booted under QEMU (-m %s, -cpu %s): image status %d after %v; %s",
		cmp.Or(opts.Memory, qemu.DefaultMemory), cmp.Or(opts.CPU, "default"), res.ImageStatus, res.Duration.Round(time.Millisecond), endLine)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("QEMU status %d (image status %d, debug exit %v, timed out %v) after %v; serial output:\n%s",
				res.QEMUStatus, res.ImageStatus, res.DebugExit, res.TimedOut, res.Duration.Round(time.Millisecond),
				strings.Join(res.Lines(), "\n"))
			if len(res.Stderr) > 0 {
				t.Logf("QEMU stderr:\n%s", res.Stderr)
			}
		}
	})
	require.False(t, res.TimedOut, "QEMU killed after %v", opts.Timeout)
	return res
}

// recordsOf returns the records of T's kind, decoded into T (package
// contract), in output order.
func recordsOf[T contract.Record](t *testing.T, res *qemu.Result) []T {
	t.Helper()
	recs, err := res.Decoded()
	require.NoError(t, err)
	var out []T
	for _, r := range recs {
		if v, ok := r.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// ended returns the PTILAB-END line, decoded.
func ended(t *testing.T, res *qemu.Result) contract.End {
	t.Helper()
	e, ok := res.Ended()
	require.True(t, ok, "no PTILAB-END line: the run was cut short")
	return e
}

// records returns the fields of the "PTILAB {json}" records of kind.
func records(t *testing.T, res *qemu.Result, kind string) []map[string]any {
	t.Helper()
	recs, err := res.Records()
	require.NoError(t, err)
	var out []map[string]any
	for _, r := range recs {
		if r.Fields["kind"] == kind {
			out = append(out, r.Fields)
		}
	}
	return out
}

// record returns the fields of the only record of kind.
func record(t *testing.T, res *qemu.Result, kind string) map[string]any {
	t.Helper()
	recs := records(t, res, kind)
	require.Len(t, recs, 1, "records of kind %q", kind)
	return recs[0]
}

// integer returns the integer field key of a record.
func integer(t *testing.T, fields map[string]any, key string) int64 {
	t.Helper()
	require.Contains(t, fields, key)
	n, ok := fields[key].(json.Number)
	require.True(t, ok, "field %q is %T, not a number", key, fields[key])
	v, err := n.Int64()
	require.NoError(t, err, "field %q", key)
	return v
}

// lineIndex returns the index in lines of the first line with prefix, or
// fails the test.
func lineIndex(t *testing.T, lines []string, prefix string) int {
	t.Helper()
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	require.Fail(t, "no serial line starts with "+prefix)
	return -1
}
