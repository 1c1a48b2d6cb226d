package goos

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/linuxabi"
)

// resultsKernel is hostKernel with the results copy reset and a fake file
// open as descriptor 3.
func resultsKernel(t *testing.T) *resultsFake {
	t.Helper()
	hostKernel(t, 1)
	results.state, results.n, results.lost, results.err, results.flushNext = resultsPending, 0, 0, efi.Success, false
	results.written, results.flushes, results.cycles = 0, 0, 0
	fake := &resultsFake{file: make([]byte, 4*resultsBufSize)}
	resultsHost = fake
	fd, f := newFD(fdFile, linuxabi.O_WRONLY)
	require.Equal(t, 3, fd)
	f.file = 1
	t.Cleanup(func() { resultsHost = nil; results.state = resultsOff })
	return fake
}

func (t *resultsFake) text() string    { return string(t.file[:t.n]) }
func (t *resultsFake) durable() string { return string(t.file[:t.flushed]) }

func write(s string) {
	b := []byte(s)
	call(linuxabi.SYS_write, 1, ptr(&b[0]), uint64(len(b)))
}

// The file begins with the output since boot, is flushed after each line
// with a record, and ends with the last line at the end of the run.
func TestResultsFileFollowsConsole(t *testing.T) {
	fake := resultsKernel(t)
	kprint("ptilab: booting")
	write("plan line\n")
	assert.Empty(t, fake.text(), "nothing is written before the file is handed over")
	assert.Zero(t, TeeConsole(3))
	write("results file open\n")
	assert.Equal(t, "ptilab: booting\nplan line\nresults file open\n", fake.durable(), "the kept output goes out at the first write")
	write("human line\n")
	assert.Equal(t, "ptilab: booting\nplan line\nresults file open\n", fake.durable(), "a human line waits for the next record")
	write(`PTILAB {"kind":"check"`)
	write("}\n")
	assert.Equal(t, "ptilab: booting\nplan line\nresults file open\nhuman line\nPTILAB {\"kind\":\"check\"}\n", fake.durable(), "a record's line is flushed when it ends")
	write("tail\n")
	flushResults()
	assert.True(t, strings.HasSuffix(fake.durable(), "}\ntail\n"))
	assert.Equal(t, string(captured[:ncaptured]), fake.durable(), "the file holds what the console got")
	assert.Equal(t, efi.Success, ResultsError())
	bytes, flushes, ns := ResultsStats()
	assert.Equal(t, uint64(fake.n), bytes)
	assert.Equal(t, uint64(3), flushes, "after the hand-over, after the record, at the end")
	assert.Positive(t, ns)
}

// A buffer's worth of output without a record is written out, unflushed.
func TestResultsFileLongOutput(t *testing.T) {
	fake := resultsKernel(t)
	TeeConsole(3)
	line := strings.Repeat("x", 99) + "\n"
	for i := 0; i < 2*resultsBufSize/len(line); i++ {
		write(line)
	}
	assert.GreaterOrEqual(t, fake.n, resultsBufSize)
	assert.Equal(t, len(line), fake.flushed, "only the first write after the hand-over is flushed")
	flushResults()
	assert.Equal(t, 2*resultsBufSize/len(line)*len(line), fake.flushed)
}

// A write failure is reported once, stops the copy and leaves the run
// going; ResultsError says why.
func TestResultsFileWriteFails(t *testing.T) {
	fake := resultsKernel(t)
	TeeConsole(3)
	fake.fail = efi.WriteProtected
	write("PTILAB {}\n")
	write("PTILAB {}\n")
	assert.Equal(t, efi.WriteProtected, ResultsError())
	out := string(captured[:ncaptured])
	assert.Equal(t, 1, strings.Count(out, "ptilab: writing the results file failed: write protected; the run goes on without it"), out)
	assert.Equal(t, 2, strings.Count(out, "PTILAB {}"))
	assert.Zero(t, fake.n)
}

// Before the file is handed over, output beyond the buffer is counted as
// lost; NoResults drops what was kept.
func TestResultsPendingOverflow(t *testing.T) {
	fake := resultsKernel(t)
	write(strings.Repeat("y", resultsBufSize+10))
	assert.Equal(t, uint64(10), TeeConsole(3))
	write("\n")
	flushResults()
	assert.Equal(t, resultsBufSize+1, fake.n)

	fake = resultsKernel(t)
	write("boot\n")
	NoResults()
	write("PTILAB {}\n")
	flushResults()
	assert.Zero(t, fake.n)
	assert.Equal(t, efi.Success, ResultsError())
}

var atFDCWD = uint64(0xffffffffffffff9c) // AT_FDCWD as a register holds it

func TestMkdiratAndFsyncArguments(t *testing.T) {
	hostKernel(t, 1)
	p := []byte("/proc\x00")
	assert.Equal(t, int64(-linuxabi.EEXIST), call(linuxabi.SYS_mkdirat, atFDCWD, ptr(&p[0]), 0o755))
	assert.Equal(t, int64(-linuxabi.EFAULT), call(linuxabi.SYS_mkdirat, atFDCWD, 0, 0o755))
	assert.Equal(t, int64(-linuxabi.EBADF), call(linuxabi.SYS_fsync, 42))
	assert.Equal(t, int64(0), call(linuxabi.SYS_fsync, 1), "the console has nothing to flush")
}

func TestErrnoOf(t *testing.T) {
	for s, e := range map[efi.Status]int64{
		efi.Success: 0, efi.NotFound: -linuxabi.ENOENT, efi.WriteProtected: -linuxabi.EROFS,
		efi.VolumeFull: -linuxabi.ENOSPC, efi.AccessDenied: -linuxabi.EPERM, efi.DeviceError: -linuxabi.EIO, efi.Unsupported: -linuxabi.ENODEV,
	} {
		assert.Equal(t, e, errnoOf(s), s.String())
	}
}
