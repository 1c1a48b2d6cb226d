package usbimage

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	diskfs "github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/filesystem"
	"github.com/diskfs/go-diskfs/partition/gpt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/bench"
	_ "github.com/ptilab/ptilab/bench/all"
	"github.com/ptilab/ptilab/bench/taskbench"
	"github.com/ptilab/ptilab/experiment"
)

// The image is a GPT disk with one FAT32 ESP of at least 64 MiB holding
// the loader, the plan and the README.
func TestWrite(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ptilab.img")
	efi := bytes.Repeat([]byte("MZ-efi"), 100000)
	require.NoError(t, Write(file, efi, nil))
	st, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, int64(DiskSize), st.Size())
	assert.Zero(t, st.Size()%(16*63*512), "a whole number of Bochs's cylinders")

	d, err := diskfs.Open(file, diskfs.WithOpenMode(diskfs.ReadOnly))
	require.NoError(t, err)
	table, err := d.GetPartitionTable()
	require.NoError(t, err)
	g, ok := table.(*gpt.Table)
	require.True(t, ok, "a GUID partition table")
	require.Len(t, g.Partitions, 1)
	p := g.Partitions[0]
	assert.Equal(t, gpt.EFISystemPartition, p.Type)
	assert.GreaterOrEqual(t, (p.End-p.Start+1)*SectorSize, uint64(64<<20))
	fs, err := d.GetFilesystem(ESPIndex)
	require.NoError(t, err)
	assert.Equal(t, filesystem.TypeFat32, fs.Type())
	assert.Equal(t, Label, strings.TrimSpace(fs.Label()))
	d.Close()

	for name, want := range map[string][]byte{BootPath: efi, PlanPath: HardwarePlan, ReadmePath: Readme} {
		got, err := ReadFile(file, name)
		require.NoError(t, err, name)
		assert.True(t, bytes.Equal(want, got), "%s: %d bytes read back, %d written", name, len(got), len(want))
	}
	names, err := Results(file)
	require.NoError(t, err)
	assert.Empty(t, names)

	require.NoError(t, ReplaceFile(file, PlanPath, []byte("r = 1\n")))
	got, err := ReadFile(file, PlanPath)
	require.NoError(t, err)
	assert.Equal(t, "r = 1\n", string(got))
	require.NoError(t, ReplaceFile(file, ResultsDir+"/b.log", []byte("x")))
	require.NoError(t, ReplaceFile(file, ResultsDir+"/a.log", []byte("y")))
	names, err = Results(file)
	require.NoError(t, err)
	assert.Equal(t, []string{ResultsDir + "/a.log", ResultsDir + "/b.log"}, names)
}

func TestWriteErrors(t *testing.T) {
	assert.ErrorContains(t, Write(filepath.Join(t.TempDir(), "x.img"), nil, nil), "empty EFI application")
	_, err := ReadFile(filepath.Join(t.TempDir(), "missing.img"), PlanPath)
	assert.Error(t, err)
	empty := filepath.Join(t.TempDir(), "zero.img")
	require.NoError(t, os.WriteFile(empty, make([]byte, 4<<20), 0o644))
	_, err = Results(empty)
	assert.ErrorContains(t, err, "disk image without a partition table")
}

// The stick's plan parses without an error, sets every key the plan
// knows, each under a comment, and is sized as the reference threads.
func TestHardwarePlan(t *testing.T) {
	plan, errs := bench.ParsePlan(HardwarePlan)
	require.Empty(t, errs)
	set := map[string]bool{}
	commented := false
	sc := bufio.NewScanner(bytes.NewReader(HardwarePlan))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "#"):
			commented = true
		case line == "":
			commented = false
		default:
			key := strings.TrimSpace(strings.SplitN(line, "=", 2)[0])
			assert.True(t, commented, "key %s has a comment above it", key)
			set[key] = true
		}
	}
	for _, k := range bench.PlanKeys() {
		if k == "emulator_build" {
			// The emulator runners' key: a real machine runs no emulator.
			assert.False(t, set[k], "the stick's plan sets %s", k)
			continue
		}
		assert.True(t, set[k], "the stick's plan sets %s", k)
	}
	assert.Equal(t, 20, taskbench.MessagingGroups.Of(plan))
	assert.False(t, plan.ModesNamed, "modes = default: lass joins where the CPU has LASS")
	assert.Equal(t, 10, plan.R)
	// Every benchmark but the provoked deadlock, in the registry's order.
	want := slices.DeleteFunc(bench.PlanNames(true), func(n string) bool { return n == "deadlock" })
	assert.Equal(t, want, plan.Benchmarks)
	assert.Equal(t, []experiment.Mode{experiment.Off, experiment.On, experiment.OnPCID}, plan.Modes)
}
