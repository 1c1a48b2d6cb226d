package goos

import (
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
}

// kline builds one console message without allocating.
type kline struct {
	b          [512]byte
	n          int
	serialOnly bool // flush to COM1 only (see flushSerial)
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
	var d [16]byte
	i := len(d)
	for v != 0 || len(d)-i < digits || i == len(d) {
		i--
		d[i] = "0123456789abcdef"[v&15]
		v >>= 4
	}
	return l.s("0x").bytes(d[i:])
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
	if l.serialOnly && !captureConsole {
		board.WriteSerial(l.b[:l.n+1])
	} else {
		consoleWrite(l.b[:l.n+1])
	}
	l.n = 0
}

// flushSerial is flush to COM1 only, for handlers that may interrupt the
// firmware gate (NMI, #DF, #MC), which the display output goes through.
func (l *kline) flushSerial() {
	l.serialOnly = true
	l.flush()
}

// kprint writes one line to the console.
func kprint(s string) {
	var l kline
	l.s(s).flush()
}

// SetScreen selects whether console output is also drawn on the displays
// (COM1 always gets it).
func SetScreen(on bool) { screenOn = on }
