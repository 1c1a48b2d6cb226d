// Package test holds the boot tests of ptilab: each test boots the real
// ptilab.efi under QEMU and OVMF, or under Bochs and OVMF, and checks what
// it prints on the serial console.
//
// The tests need qemu-system-x86_64, Bochs (with its SDL2 display and the
// VGA BIOS) and OVMF. Without them they fail, not skip: CI installs them
// and the tests must run there.
package test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/host/bochs"
	"github.com/ptilab/ptilab/host/image"
	"github.com/ptilab/ptilab/host/qemu"
)

const (
	// bootTimeout bounds a QEMU run, firmware start-up included, unless
	// the test gives its own. The longest boots with it, the default plan's
	// (TestPTIMatrix, TestDefaultBoot, TestModels),
	// took 33 to 79 s in a whole suite run here, two boots at a time on two
	// cores with other emulators on the machine: 8 minutes is 6 times the
	// longest, room for a second suite beside this one.
	bootTimeout = 8 * time.Minute
	// buildTimeout bounds building an image.
	buildTimeout = 5 * time.Minute
)

var (
	// efiPath is the image built once by TestMain.
	efiPath string
	// buildDir holds the images; test images (taggedImage) go there too.
	buildDir string
	// setupErr, when set, is why the image cannot be booted (QEMU or OVMF
	// missing, or the build failed); every boot test fails with it.
	setupErr error
	// bochsErr, when set, is why Bochs cannot run (it or a file it needs
	// is missing); every Bochs test fails with it.
	bochsErr error
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
	buildDir = dir
	setupErr = setup(dir)
	_, bochsErr = bochs.Find("")
	return m.Run()
}

// taggedImage builds an image with build tags (test-only variants such as
// ptilab_bug_pcide) into buildDir, once per set of tags (tests that share
// one wait for the first build), and returns its ELF and EFI paths.
func taggedImage(t *testing.T, tags ...string) (elf, efi string) {
	t.Helper()
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	name := "ptilab-" + strings.Join(tags, "-")
	taggedMu.Lock()
	b, ok := tagged[name]
	if !ok {
		b = &taggedBuild{}
		tagged[name] = b
	}
	taggedMu.Unlock()
	b.once.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			b.err = err
			return
		}
		// Not the test's context: a later test may share the build.
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		b.elf, b.efi = filepath.Join(buildDir, name+".elf"), filepath.Join(buildDir, name+".efi")
		b.err = image.Build(ctx, root, b.elf, b.efi, tags...)
	})
	require.NoError(t, b.err, "building the image with tags %v", tags)
	return b.elf, b.efi
}

// oddFirmware are the tags of the test image that plays an awkward
// firmware: one that runs with CR4.PCIDE and CR4.PGE set and a PCID in
// CR3 where the CPU has PCID (ptilab_fw_pcide, efi/fw_pcide.go), on a
// code selector that names another segment in ptilab's GDT
// (ptilab_fw_cs, efi/fw_cs.go), and that, when the run returns to it,
// leaves a stale global TLB entry for the end to drop
// (ptilab_global_probe, goos/globalprobe_on.go). One image serves the
// QEMU and Bochs tests of all three, built once.
var oddFirmware = []string{"ptilab_fw_pcide", "ptilab_fw_cs", "ptilab_global_probe"}

// taggedBuild is one build of taggedImage's.
type taggedBuild struct {
	once     sync.Once
	elf, efi string
	err      error
}

var (
	taggedMu sync.Mutex
	tagged   = map[string]*taggedBuild{}
)

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
// opts (Image, the suite's image when empty, and Timeout when zero filled
// in). It fails the test when the
// image cannot be booted or the run timed out, and logs the serial output
// and QEMU's stderr if the test fails.
func boot(t *testing.T, opts qemu.Options) *qemu.Result {
	t.Helper()
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	t.Parallel()
	opts.Image = cmp.Or(opts.Image, efiPath)
	if opts.Timeout == 0 {
		opts.Timeout = bootTimeout
	}
	res, err := qemu.Run(t.Context(), opts)
	require.NoError(t, err)
	t.Logf("booted under QEMU (-m %s, -cpu %s): image status %d after %v; %s",
		cmp.Or(opts.Memory, qemu.DefaultMemory), cmp.Or(opts.CPU, "default"), res.ImageStatus, res.Duration.Round(time.Millisecond), endLine(res))
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

// endLine is a run's PTILAB-END line, for the log, or "no PTILAB-END".
func endLine(res serialLog) string {
	if e, ok := res.End(); ok {
		return "PTILAB-END " + string(e.Raw)
	}
	return "no PTILAB-END"
}

// recordsOf returns the records of T's kind, decoded into T (package
// contract), in output order.
func recordsOf[T contract.Record](t *testing.T, res serialLog) []T {
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

// onlyRecordOf requires that res holds exactly one record of T's kind
// ("one cpu-state record") and returns it.
func onlyRecordOf[T contract.Record](t *testing.T, res serialLog) T {
	t.Helper()
	rs := recordsOf[T](t, res)
	require.Len(t, rs, 1, "one %s record", (*new(T)).Kind())
	return rs[0]
}

// aboutRecord is a benchmark's record: it carries a contract.Subject.
type aboutRecord interface {
	contract.Record
	About() contract.Subject
}

// subjectsOf returns the subjects of res's figure records, decoded, in
// output order: of every record that carries one, but the probe's
// exposure lists.
func subjectsOf(t *testing.T, res serialLog) []contract.Subject {
	t.Helper()
	recs, err := res.Decoded()
	require.NoError(t, err)
	var out []contract.Subject
	for _, r := range recs {
		if a, ok := r.(aboutRecord); ok && r.Kind() != (contract.Exposure{}).Kind() {
			out = append(out, a.About())
		}
	}
	return out
}

// inWorld returns the records of T's kind from the world of width (64 or
// 32), decoded, in output order.
func inWorld[T aboutRecord](t *testing.T, res serialLog, width int) []T {
	t.Helper()
	var out []T
	for _, r := range recordsOf[T](t, res) {
		if r.About().Width == width {
			out = append(out, r)
		}
	}
	return out
}

// ended returns the PTILAB-END line, decoded.
func ended(t *testing.T, res serialLog) contract.End {
	t.Helper()
	e, ok := res.Ended()
	require.True(t, ok, "no PTILAB-END line: the run was cut short")
	return e
}

// serialLog is a run's serial output and its parsing: *qemu.Result or
// *bochs.Result.
type serialLog interface {
	Lines() []string
	Records() ([]qemu.Record, error)
	End() (*qemu.Record, bool)
	Fault() (string, bool)
	Decoded() ([]contract.Record, error)
	Ended() (contract.End, bool)
}

// bootBochs runs the test in parallel with the others and boots the image
// under Bochs with opts: see runBochs.
func bootBochs(t *testing.T, opts bochs.Options) *bochs.Result {
	t.Helper()
	t.Parallel()
	return runBochs(t, opts)
}

// runBochs boots opts.Image (efiPath when empty) under Bochs with opts
// (Timeout must be given: 4 times the boot's usual duration in the suite
// or more). It fails the test when Bochs is missing, the image
// cannot be booted or the run timed out, and logs the serial output,
// Bochs's output and its log if the test fails.
func runBochs(t *testing.T, opts bochs.Options) *bochs.Result {
	t.Helper()
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	if bochsErr != nil {
		t.Fatal(bochsErr)
	}
	opts.Image = cmp.Or(opts.Image, efiPath)
	require.Positive(t, opts.Timeout, "a Bochs boot needs its own timeout")
	res, err := bochs.Run(t.Context(), opts)
	require.NoError(t, err)
	t.Logf("booted under Bochs (cpu %s, -m %s): Bochs status %d after %v (timeout %v); %s",
		cmp.Or(opts.CPU, bochs.DefaultCPU), cmp.Or(opts.Memory, bochs.DefaultMemory), res.BochsStatus,
		res.Duration.Round(time.Millisecond), opts.Timeout, endLine(res))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Bochs status %d (timed out %v, stopped %v) after %v; serial output:\n%s",
				res.BochsStatus, res.TimedOut, res.Stopped, res.Duration.Round(time.Millisecond), strings.Join(res.Lines(), "\n"))
			t.Logf("Bochs output:\n%s\nBochs log:\n%s", res.Output, res.Log)
		}
	})
	require.False(t, res.TimedOut, "Bochs killed after %v", opts.Timeout)
	return res
}

// records returns the fields of the "PTILAB {json}" records of kind.
func records(t *testing.T, res serialLog, kind string) []map[string]any {
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
func record(t *testing.T, res serialLog, kind string) map[string]any {
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
