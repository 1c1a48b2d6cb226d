package goos

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/efi"
)

// The console: the serial port (the record people capture), the display
// text outputs the firmware offers and the results file (results.go). Writes to file descriptors 1 and 2 and the
// kernel's own messages land here.

// captureConsole sends console output to captured instead of the hardware:
// host tests set it.
var (
	captureConsole bool
	captured       [8192]byte
	ncaptured      int
)

// screenOn selects whether console output is also drawn on the displays.
var screenOn = true

func consoleWrite(p []byte) {
	if captureConsole {
		ncaptured += copy(captured[ncaptured:], p)
	} else {
		board.WriteSerial(p)
		if screenOn {
			efi.WriteScreens(p)
		}
	}
	resultsAdd(p)
	if len(p) > 0 && p[len(p)-1] == '\n' {
		reportNMIs()
	}
}

// nmiReportGap is the least time between two of reportNMIs' lines, in
// nanoseconds: NMIs at tens per second would otherwise follow every line.
const nmiReportGap = 1e9

// nmiReported is the NMI count and the time (Monotonic) of reportNMIs'
// last line.
var nmiReported struct {
	n  uint64
	at int64
}

// reportNMIs prints "ptilab: NMI: n so far" when NMIs arrived since its
// last line, at most once per nmiReportGap. The NMI handlers only count
// (amd64.NMICount): consoleWrite calls this after a write that ends a
// line, so that the report never lands inside another line, a PTILAB
// record above all. The PTILAB-END line carries the final count.
func reportNMIs() {
	n := amd64.NMICount()
	now := Monotonic()
	if n == nmiReported.n || nmiReported.n != 0 && now-nmiReported.at < nmiReportGap {
		return
	}
	nmiReported.n, nmiReported.at = n, now
	var l kline
	l.s("ptilab: NMI: ").udec(n).s(" so far").flush()
}

// kline builds one console message without allocating.
type kline struct {
	b          [512]byte
	n          int
	serialOnly bool // flush to COM1 only: handlers that may interrupt the firmware gate (#DF, #MC), which the display output goes through
}

func (l *kline) s(s string) *kline {
	l.n += copy(l.b[l.n:], s)
	return l
}

func (l *kline) bytes(p []byte) *kline {
	l.n += copy(l.b[l.n:], p)
	return l
}

// hex appends v as 0x followed by at least digits hexadecimal digits.
func (l *kline) hex(v uint64, digits int) *kline {
	return l.s("0x").xdigits(v, digits)
}

// xdigits appends v as at least digits hexadecimal digits (at least one).
func (l *kline) xdigits(v uint64, digits int) *kline {
	var d [16]byte
	i := len(d)
	for v != 0 || len(d)-i < digits || i == len(d) {
		i--
		d[i] = "0123456789abcdef"[v&15]
		v >>= 4
	}
	return l.bytes(d[i:])
}

// dec appends v in decimal.
func (l *kline) dec(v int64) *kline {
	if v < 0 {
		return l.s("-").udec(-uint64(v))
	}
	return l.udec(uint64(v))
}

// udec appends v in decimal.
func (l *kline) udec(v uint64) *kline {
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return l.bytes(d[i:])
}

// flush writes the message to the console, with a newline, and empties l.
func (l *kline) flush() {
	if l.n == len(l.b) {
		l.n--
	}
	l.b[l.n] = '\n'
	writeKernelLine(l.b[:l.n+1], l.serialOnly)
	l.n = 0
}

// kprint writes one line to the console.
func kprint(s string) {
	var l kline
	l.s(s).flush()
}

// SetScreen selects whether console output is also drawn on the displays
// (COM1 always gets it).
func SetScreen(on bool) { screenOn = on }
