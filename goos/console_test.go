package goos

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/amd64"
)

// kline's decimal forms read as strconv's.
func TestKlineDecimal(t *testing.T) {
	for _, v := range []int64{0, 7, -7, 10, -10, 1234567890, math.MaxInt64, math.MinInt64} {
		var l kline
		l.dec(v)
		assert.Equal(t, strconv.FormatInt(v, 10), string(l.b[:l.n]))
	}
	for _, v := range []uint64{0, 9, 10, math.MaxUint64} {
		var l kline
		l.udec(v)
		assert.Equal(t, strconv.FormatUint(v, 10), string(l.b[:l.n]))
	}
}

// TestReportNMIs checks the console's NMI line: only after a write that
// ends a line, only when the count moved, at most once per nmiReportGap.
func TestReportNMIs(t *testing.T) {
	captureConsole, ncaptured = true, 0
	// Afterwards every NMI this test added counts as reported, so that
	// no other test's console output gains an NMI line.
	t.Cleanup(func() { captureConsole, nmiReported.n = false, amd64.NMICount() })
	out := func() string { s := string(captured[:ncaptured]); ncaptured = 0; return s }
	base := amd64.NMICount()
	nmiReported.n, nmiReported.at = base, Monotonic()-nmiReportGap

	consoleWrite([]byte("a line\n"))
	assert.Equal(t, "a line\n", out(), "no NMI, no report")

	amd64.AddNMIs(2)
	consoleWrite([]byte("half a "))
	assert.Equal(t, "half a ", out(), "never inside a line")
	consoleWrite([]byte("line\n"))
	assert.Equal(t, "line\nptilab: NMI: "+strconv.FormatUint(base+2, 10)+" so far\n", out())

	amd64.AddNMIs(1)
	nmiReported.at = Monotonic()
	consoleWrite([]byte("soon after\n"))
	assert.Equal(t, "soon after\n", out(), "within nmiReportGap of the last report")

	nmiReported.at = Monotonic() - nmiReportGap
	consoleWrite([]byte("later\n"))
	assert.Equal(t, "later\nptilab: NMI: "+strconv.FormatUint(base+3, 10)+" so far\n", out())
	consoleWrite([]byte("again\n"))
	assert.Equal(t, "again\n", out(), "the count has not moved")
}
