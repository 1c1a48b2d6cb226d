package tasks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/pti"
)

// plan is pti's switch for the 64-bit configuration of mode and flavour f.
func plan(t *testing.T, mode experiment.Mode, f experiment.Flavour) pti.Switch {
	t.Helper()
	s, err := pti.Plan(experiment.Config{World: experiment.W64, Mode: mode, Entry: experiment.Syscall, Flavour: f})
	require.NoError(t, err)
	return s
}

// The run builder's parts that need no pti process (those need pti.Setup:
// the boot tests run them): the state it resets, files, shared
// descriptors and task 0.
func TestRunBuilder(t *testing.T) {
	t.Cleanup(func() { Reset(true) })

	NewProcess(0, nfds) // state of an earlier run
	NewRun(plan(t, experiment.Off, experiment.Minimal))
	assert.False(t, framed, "the minimal flavour has no pt_regs frame to switch by")
	r := NewRun(plan(t, experiment.Off, experiment.Linux))
	assert.True(t, framed)
	_, err := r.RunTasks()
	assert.EqualError(t, err, "tasks: no tasks")

	p, q := NewProcess(0, nfds), NewProcess(0, nfds)
	assert.Equal(t, 0, p, "NewRun forgot the earlier run's process")
	f, err := r.AddFile(p, 5, 1000)
	require.NoError(t, err)
	assert.Equal(t, 0, f)
	_, err = r.AddFile(p, 5, 1000)
	assert.EqualError(t, err, "tasks: no room for the file or its descriptor", "descriptor 5 is taken")
	_, err = r.AddFile(p, nfds, 1000)
	assert.Error(t, err, "no descriptor %d", nfds)
	f, err = r.AddFile(p, firstFD, 10)
	require.NoError(t, err)
	assert.Equal(t, 1, f)
	assert.True(t, r.ShareFD(p, q, 5))
	assert.False(t, r.ShareFD(p, q, 5), "taken in q")
	assert.Equal(t, int16(2), files[0].refs)

	args := [6]uint64{1, 2, 3, 4, 5, 6}
	i, err := r.AddTask(q, pti.Probe, 0x7f80000ff000, args)
	require.NoError(t, err)
	assert.Equal(t, 0, i)
	assert.Equal(t, pti.Probe, r.first.prog)
	assert.Equal(t, args, r.first.args)
	assert.Equal(t, uint64(0x7f80000ff000), r.first.rsp)
	assert.Equal(t, q, int(tasks[0].proc))
	_, err = r.AddTask(maxProcs, pti.Probe, 0, args)
	assert.EqualError(t, err, "tasks: no room for the task")

	// lseek reaches the run's file through task 0's process.
	assert.Equal(t, int64(0), dispatch(linuxabi.SYS_lseek, 5, 0, linuxabi.SEEK_SET, 0, 0, 0))
	assert.Equal(t, int64(1000), dispatch(linuxabi.SYS_lseek, 5, 0, linuxabi.SEEK_END, 0, 0, 0))
	assert.Equal(t, uint64(0), r.Switches())
	assert.Equal(t, uint64(0), r.CR3Loads())
}
