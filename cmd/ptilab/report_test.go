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
	assert.Contains(t, stdout, "Welch's two-sample t-test")
	code, _, stderr = ptilab(t, "compare", qemuSample)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "usage: ptilab compare")
}

func TestPlotCommand(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := ptilab(t, "plot", "-o", dir, qemuSample)
	require.Equal(t, exitOK, code, stderr)
	files := strings.Fields(stdout)
	assert.Len(t, files, 6)
	for _, f := range files {
		assert.FileExists(t, f)
		assert.Equal(t, ".svg", filepath.Ext(f))
	}
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
