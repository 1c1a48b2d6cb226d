package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	diskfs "github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/partition/gpt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sample logs of package report.
const (
	qemuSample      = "../../host/report/testdata/qemu.log"
	syntheticSample = "../../host/report/testdata/synthetic-hardware.log"
)

func TestReportCommand(t *testing.T) {
	code, stdout, stderr := ptilab(t, "report", qemuSample)
	require.Equal(t, exitOK, code, stderr)
	assert.Empty(t, stderr)
	assert.True(t, strings.HasPrefix(stdout, "source: "+qemuSample+"\nmachine: AuthenticAMD"), stdout)
	assert.Contains(t, stdout, "EMULATED (qemu-tcg)")

	for _, f := range []string{"markdown", "csv", "json"} {
		code, stdout, stderr = ptilab(t, "report", "-format", f, qemuSample, syntheticSample)
		require.Equal(t, exitOK, code, stderr)
		assert.Contains(t, stdout, "SYNTHETIC TEST FIXTURE", f)
	}
	var reps []map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &reps))
	assert.Len(t, reps, 2)

	// Fitted to 100 columns by default; -wide (after the file too) is the
	// console's layout, whose null table is wider.
	code, stdout, stderr = ptilab(t, "report", syntheticSample)
	require.Equal(t, exitOK, code, stderr)
	for _, l := range strings.Split(stdout, "\n") {
		assert.LessOrEqual(t, len([]rune(l)), 100, l)
	}
	code, wide, stderr := ptilab(t, "report", syntheticSample, "-wide")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, wide, "\nmode     flavour  global     tsc/call      ±%       median          min    ns/call  vs off core MHz    core/op dist rep   inst/op pmu cyc/op", "the console's own layout, wider than 100")

	code, _, stderr = ptilab(t, "report", "-format", "xml", qemuSample)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `unknown -format "xml"`)
	code, _, stderr = ptilab(t, "report")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "usage: ptilab report")
}

func TestCompareCommand(t *testing.T) {
	code, stdout, stderr := ptilab(t, "compare", qemuSample, syntheticSample)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "not compared: A emulated (qemu-tcg), B hardware")
	assert.Contains(t, stdout, "Welch's t-test from the summaries")
	code, stdout, stderr = ptilab(t, "compare", qemuSample, qemuSample)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "A and B hold the same figures", "the same file twice: two loads, one run")
	code, _, stderr = ptilab(t, "compare", qemuSample)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "usage: ptilab compare")
}

func TestPlotCommand(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := ptilab(t, "plot", "-o", dir, qemuSample)
	require.Equal(t, exitOK, code, stderr)
	files := strings.Fields(stdout)
	assert.Len(t, files, 8)
	for _, f := range files {
		assert.FileExists(t, f)
		assert.Equal(t, ".svg", filepath.Ext(f))
	}
}

// TestComparePlotCommand: compare -plot writes the two runs' plot beside
// the comparison, also after the files.
func TestComparePlotCommand(t *testing.T) {
	f := filepath.Join(t.TempDir(), "ab.svg")
	code, stdout, stderr := ptilab(t, "compare", qemuSample, "../../host/report/testdata/qemu-skylake.log", "-plot", f)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "A against B")
	data, err := os.ReadFile(f)
	require.NoError(t, err)
	assert.Contains(t, string(data), "cost in A and in B: each configuration")
	assert.Contains(t, string(data), "null 64 on syscall minimal")
	code, _, stderr = ptilab(t, "compare", "-plot", filepath.Join(t.TempDir(), "no", "such", "dir.svg"), qemuSample, syntheticSample)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "-plot ")
}

// TestBadInputOneLine: bad input to report, compare and plot is one line
// on stderr naming it, and exit status 1.
func TestBadInputOneLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	emptyDir := filepath.Join(dir, "stick")
	require.NoError(t, os.Mkdir(emptyDir, 0o755))
	// A GPT disk image with a Linux partition and no ESP.
	img := filepath.Join(dir, "linux.img")
	d, err := diskfs.Create(img, 8<<20, diskfs.SectorSize512)
	require.NoError(t, err)
	require.NoError(t, d.Partition(&gpt.Table{Partitions: []*gpt.Partition{{Index: 1, Start: 2048, End: 8192, Type: gpt.LinuxFilesystem}}}))
	require.NoError(t, d.Close())
	for _, c := range []struct{ path, want string }{
		{write("notes.txt", "not a log\n"), "notes.txt: not a ptilab log (no PTILAB record lines)"},
		{write("empty.log", ""), "empty.log: empty file"},
		{emptyDir, "stick: no results files (ptilab-results/*.log) in it"},
		{img, "linux.img: disk image without an EFI System Partition"},
	} {
		for _, args := range [][]string{{"report", c.path}, {"compare", qemuSample, c.path}, {"plot", "-o", t.TempDir(), c.path}} {
			code, stdout, stderr := ptilab(t, args...)
			assert.Equal(t, exitFail, code, args)
			assert.Empty(t, stdout, args)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			assert.True(t, strings.HasPrefix(stderr, "ptilab: "), stderr)
			assert.Contains(t, stderr, c.want, args)
		}
	}
}

// TestDamagedInput: a results folder with an empty file beside a good one
// (a run that hung before its first flush), and a log with a record
// damaged in its middle (a USB-serial overrun): report, compare and plot
// print what they can read, name each skipped file or line on stderr, and
// exit exitPartial; log prints the records it can read and exits
// exitPartial too.
func TestDamagedInput(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(qemuSample)
	require.NoError(t, err)
	lines := strings.Split(string(good), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, `PTILAB {"kind":"syscall"`) {
			lines[i] = l[:len(l)/2]
			break
		}
	}
	damaged := filepath.Join(dir, "damaged.log")
	require.NoError(t, os.WriteFile(damaged, []byte(strings.Join(lines, "\n")), 0o644))
	stick := filepath.Join(dir, "stick", "ptilab-results")
	require.NoError(t, os.MkdirAll(stick, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stick, "20261201-120000-hung.log"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(stick, "20261201-130000-good.log"), good, 0o644))

	code, stdout, stderr := ptilab(t, "report", filepath.Join(dir, "stick"))
	assert.Equal(t, exitPartial, code)
	assert.Contains(t, stdout, "source: "+filepath.Join(stick, "20261201-130000-good.log"))
	assert.Equal(t, "ptilab: warning: "+filepath.Join(stick, "20261201-120000-hung.log")+": empty file (skipped)\n", stderr)

	for _, args := range [][]string{
		{"report", damaged},
		{"compare", qemuSample, damaged},
		{"plot", "-o", t.TempDir(), damaged},
	} {
		code, stdout, stderr = ptilab(t, args...)
		assert.Equal(t, exitPartial, code, args)
		assert.NotEmpty(t, stdout, args)
		assert.Regexp(t, `^ptilab: warning: .*damaged\.log: serial line [0-9]+: malformed record: unexpected EOF \(record skipped\)\n$`, stderr, args)
	}
	code, stdout, _ = ptilab(t, "log", damaged)
	assert.Equal(t, exitPartial, code)
	assert.Equal(t, strings.Count(string(good), "\nPTILAB {"), strings.Count(stdout, "\n"), "every record but the damaged one, and the end")
}

// TestFlagsAfterFiles: flags go before or after the files, "--" ends them.
func TestFlagsAfterFiles(t *testing.T) {
	code, before, stderr := ptilab(t, "report", "-format", "markdown", qemuSample)
	require.Equal(t, exitOK, code, stderr)
	code, after, stderr := ptilab(t, "report", qemuSample, "-format", "markdown")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, before, after)
	code, between, stderr := ptilab(t, "report", qemuSample, "-format=markdown", syntheticSample)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, between, "SYNTHETIC TEST FIXTURE")
	assert.Contains(t, between, "| ", "markdown for both files")

	dir := t.TempDir()
	code, stdout, stderr := ptilab(t, "plot", qemuSample, "-o", dir)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, dir)

	code, _, stderr = ptilab(t, "report", "--", "-format")
	assert.Equal(t, exitFail, code, "after --, -format is a file")
	assert.Contains(t, stderr, "-format: no such file or directory")
	code, _, stderr = ptilab(t, "report", qemuSample, "-nosuchflag")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "flag provided but not defined: -nosuchflag")
}
