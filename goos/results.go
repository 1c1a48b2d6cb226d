package goos

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/efi"
)

// The results file: a copy of everything the console gets (consoleWrite:
// human lines, PTILAB records, PTILAB-FAULT dumps, PTILAB-END), written to
// a file on the boot volume that the program opened and handed over
// (TeeConsole).
//
// When the firmware is called: console output is copied into a kernel
// buffer; the buffer goes to the file (EFI_FILE_PROTOCOL.Write, then Flush,
// which also writes the directory entry's size) when a chunk holding a
// "PTILAB" tag ends a line, when the buffer is full, and when the run ends.
// These are the points where consoleWrite already calls the firmware to
// draw on the displays, through the one gate: kernel code on a kernel
// stack with interrupts masked, the Go program in Go code (a write system
// call) or the kernel ending the run; never inside a ring-3 loop or the
// 32-bit world, which print nothing. NMI, #DF and #MC handlers print to
// COM1 only (flushSerial) and add nothing here, since they may interrupt a
// firmware call. A hang or a power cut therefore keeps every record but
// the one being written and the human lines after the last record.
//
// Until the program hands over a file, console output since boot is kept
// (as much as the buffer holds), so that the file begins as the serial log
// does. A failed write or flush (a read-only medium, a full volume, a
// device error) is reported once on the console; the copy then stops, the
// run goes on, and ResultsError says why.

// resultsBufSize is the kernel buffer of output not yet written: the boot
// lines before the file is open, then what follows the last record.
const resultsBufSize = 64 << 10

// States of the copy.
const (
	resultsPending = iota // buffering, no file yet
	resultsOn             // copying to the file
	resultsOff            // stopped: no file, or it failed
)

var results struct {
	written   uint64 // bytes written to the file
	flushes   uint64 // EFI_FILE_PROTOCOL.Flush calls
	cycles    uint64 // TSC cycles spent writing and flushing
	state     uint8
	fd        int  // the file's descriptor (the program's)
	flushNext bool // write the buffer out at the next end of line
	err       efi.Status
	lost      uint64 // bytes dropped while pending (the buffer was full)
	n         int
	buf       [resultsBufSize]byte
}

// resultsOut writes p at f's position and moves it on (efi.WriteFile);
// host tests replace the firmware by resultsHost.
func resultsOut(f *fileDesc, p []byte) efi.Status {
	if resultsHost != nil {
		return resultsHost.write(p)
	}
	if s := efi.SetPosition(f.file, f.pos); s.Error() {
		return s
	}
	put, s := efi.WriteFile(f.file, p)
	f.pos += uint64(put)
	return s
}

// resultsSync flushes f to the device (efi.FlushFile).
func resultsSync(f *fileDesc) efi.Status {
	if resultsHost != nil {
		return resultsHost.flush()
	}
	return efi.FlushFile(f.file)
}

// resultsFake stands for the firmware's file in host tests (resultsHost,
// nil in the image).
type resultsFake struct {
	file    []byte // the file's bytes, written up to n
	n       int
	flushed int        // bytes of file flushed
	fail    efi.Status // the status writes and flushes return, when an error
}

var resultsHost *resultsFake

func (t *resultsFake) write(p []byte) efi.Status {
	if t.fail.Error() {
		return t.fail
	}
	t.n += copy(t.file[t.n:], p)
	return efi.Success
}

func (t *resultsFake) flush() efi.Status {
	if t.fail.Error() {
		return t.fail
	}
	t.flushed = t.n
	return efi.Success
}

// resultsAdd copies console output p into the results buffer and writes
// the buffer out when a record's line is complete (see above).
func resultsAdd(p []byte) {
	if results.state == resultsOff {
		return
	}
	if hasTag(p) {
		results.flushNext = true
	}
	for len(p) > 0 {
		k := copy(results.buf[results.n:], p)
		results.n += k
		p = p[k:]
		if len(p) == 0 {
			break
		}
		// Full.
		if results.state == resultsPending {
			results.lost += uint64(len(p))
			return
		}
		if !resultsWrite(false) {
			return
		}
	}
	if results.state == resultsOn && results.flushNext && results.n > 0 && results.buf[results.n-1] == '\n' {
		resultsWrite(true)
	}
}

// hasTag reports whether p holds "PTILAB" (contract.RecordTag, the prefix
// of EndTag and FaultTag too).
func hasTag(p []byte) bool {
	const tag = contract.RecordTag
	for i := 0; i+len(tag) <= len(p); i++ {
		if string(p[i:i+len(tag)]) == tag {
			return true
		}
	}
	return false
}

// resultsWrite writes the buffer to the file, then flushes the file when
// sync is set. On failure it stops the copy, reports it on the console and
// returns false.
func resultsWrite(sync bool) bool {
	t0 := amd64.RDTSC()
	f := getFD(uint64(results.fd))
	s := efi.AccessDenied // the program closed the file
	if f != nil && f.kind == fdFile {
		s = resultsOut(f, results.buf[:results.n])
		if !s.Error() {
			results.written += uint64(results.n)
		}
		if !s.Error() && sync {
			s = resultsSync(f)
			results.flushes++
		}
	}
	results.cycles += amd64.RDTSC() - t0
	results.n = 0
	if s.Error() {
		results.state, results.err = resultsOff, s
		var l kline
		l.s("ptilab: writing the results file failed: ").s(s.String()).s("; the run goes on without it").flush()
		return false
	}
	results.flushNext = false
	return true
}

// TeeConsole makes the kernel copy the console output to the file open as
// descriptor fd (a file on the boot volume, open for writing; the program
// keeps it open for the rest of the run), starting with the output kept
// since boot. It returns the bytes of that output that did not fit the
// buffer and are missing from the file (0 on any run that opens the file
// before printing 64 KiB). It runs in the program's goroutine and calls no
// firmware: the kept output goes out at the next console write.
func TeeConsole(fd int) (lost uint64) {
	if results.state != resultsPending {
		return 0
	}
	results.fd, results.state, results.flushNext = fd, resultsOn, true
	return results.lost
}

// NoResults stops the copy before it began: the program could not open a
// results file (and says why itself).
func NoResults() {
	results.state, results.n = resultsOff, 0
}

// ResultsStats returns the bytes written to the results file so far, the
// flushes, and the nanoseconds the firmware took for them (the run's time
// spent on the file, outside any measurement).
func ResultsStats() (bytes, flushes uint64, ns int64) {
	return results.written, results.flushes, int64(clock.tsc.Nanoseconds(results.cycles))
}

// ResultsError returns why writing the results file failed after
// TeeConsole (efi.Success while it is written).
func ResultsError() efi.Status { return results.err }

// flushResults writes out what the results buffer holds, at the end of the
// run.
func flushResults() {
	if results.state == resultsOn && results.n > 0 {
		resultsWrite(true)
	}
}
