package qemu

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/host/usbimage"
)

// waitDelay is how long Run waits for QEMU's output to drain after the
// process has exited or been killed.
const waitDelay = 5 * time.Second

// Result is the outcome of a QEMU run that started.
//
// A log read back from a file parses as a Serial alone.
type Result struct {
	// QEMUStatus is QEMU's exit status, or -1 if it was killed by a
	// signal (as on timeout).
	QEMUStatus int
	// ImageStatus is the byte the image wrote to the debug-exit port,
	// QEMUStatus>>1, when QEMUStatus is odd; otherwise -1. Process exit
	// statuses are 8 bits wide, so only values 0..127 survive intact.
	ImageStatus int
	// DebugExit reports whether QEMU exited through the debug-exit device
	// (QEMUStatus odd). An even status means QEMU ended for another
	// reason: 0 is a guest shutdown or reset (with -no-reboot), anything
	// else a QEMU failure described in Stderr.
	DebugExit bool
	// TimedOut reports whether Options.Timeout expired and QEMU was
	// killed.
	TimedOut bool
	// Stopped reports whether the serial output matched Options.StopAt and
	// QEMU was killed for it.
	Stopped bool
	// Duration is the wall-clock time from QEMU's start to its exit.
	Duration time.Duration
	// Serial is the raw serial output, escape sequences and CRs included;
	// its methods (Lines, Records, End, Fault, Decoded, Ended) parse it.
	Serial
	// Stderr is QEMU's own diagnostic output.
	Stderr []byte
}

// decodeStatus splits a QEMU exit status into the image's status and
// whether the debug-exit device ended the run.
func decodeStatus(qemuStatus int) (imageStatus int, debugExit bool) {
	if qemuStatus > 0 && qemuStatus%2 == 1 && qemuStatus>>1 >= contract.DebugExitBase {
		return qemuStatus>>1 - contract.DebugExitBase, true
	}
	return -1, false
}

// Exit codes of the ptilab command for runs that did not end with an image
// status.
const (
	ExitTimeout  = 124 // the run was killed at its timeout, as timeout(1)
	ExitNoStatus = 125 // QEMU ended without the image's status (a QEMU failure, a firmware shutdown)
	ExitNoEnd    = 126 // the image said 0 but printed no PTILAB-END line
)

// ExitCode maps a result to an exit code for the ptilab command: the image's
// status when it exited through the debug-exit port (but never 0 without a
// PTILAB-END line), ExitTimeout on timeout, ExitNoStatus otherwise.
func ExitCode(r *Result) int {
	switch {
	case r.DebugExit:
		if _, ok := r.End(); r.ImageStatus == 0 && !ok {
			return ExitNoEnd
		}
		return r.ImageStatus
	case r.TimedOut:
		return ExitTimeout
	}
	return ExitNoStatus
}

// Run boots opts.Image under QEMU and waits for QEMU to exit or for
// opts.Timeout to expire, whichever comes first. The boot disk and the
// OVMF variable store copy live in a temporary directory removed afterwards
// (copy the run's results files out with opts.ResultsDir).
//
// Run returns an error, and no Result, when the options are invalid, QEMU or
// OVMF is missing (see Find), the boot volume cannot be prepared, QEMU
// cannot be started, the serial log cannot be written, or ctx is cancelled
// (QEMU is then killed). Every other outcome, including timeouts and QEMU
// failures, is described by the Result.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	paths, err := Find()
	if err != nil {
		return nil, err
	}
	if opts.UBoot {
		if paths.Code, err = FindUBoot(); err != nil {
			return nil, err
		}
		paths.Vars = ""
	}
	dir, err := os.MkdirTemp("", "ptilab-qemu-")
	if err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	defer os.RemoveAll(dir)
	paths.ESP = opts.Disk
	if opts.Disk == "" {
		image, err := os.ReadFile(opts.Image)
		if err != nil {
			return nil, fmt.Errorf("qemu: %w", err)
		}
		paths.ESP = filepath.Join(dir, "esp.img")
		if err := writeESP(paths.ESP, image, opts); err != nil {
			return nil, err
		}
	} else if _, err := os.Stat(opts.Disk); err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	if paths.Vars != "" {
		vars, err := os.ReadFile(paths.Vars)
		if err != nil {
			return nil, fmt.Errorf("qemu: reading OVMF variable store: %w", err)
		}
		paths.Vars = filepath.Join(dir, "OVMF_VARS.fd")
		if err := os.WriteFile(paths.Vars, vars, 0o600); err != nil {
			return nil, fmt.Errorf("qemu: %w", err)
		}
	}

	log, closeLog, err := SerialLog(opts.LogPath)
	if err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	defer closeLog()

	runCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	stopCtx, stop := context.WithCancel(runCtx)
	defer stop()
	serial := NewSerialSink(opts.Echo, log, opts.StopAt, stop)
	var stderr bytes.Buffer
	cmd := Command(stopCtx, paths.QEMU, Args(opts, paths)...)
	cmd.Stdout = serial
	cmd.Stderr = &stderr
	// SerialIn reaches QEMU through a pipe of our own: given to exec as a
	// Reader, Wait would wait for it to end.
	var serialIn *os.File
	if opts.SerialIn != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("qemu: serial input: %w", err)
		}
		defer r.Close()
		defer w.Close()
		cmd.Stdin, serialIn = r, w
	}

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("qemu: starting %s: %w", paths.QEMU, err)
	}
	if serialIn != nil {
		go io.Copy(serialIn, opts.SerialIn) // ends with an error once the pipe is closed
	}
	elapsed, killed, err := Wait(ctx, cmd, start, "qemu")
	if err != nil {
		return nil, err
	}
	if serial.LogErr() != nil {
		return nil, fmt.Errorf("qemu: writing serial log: %w", serial.LogErr())
	}
	if opts.ResultsDir != "" {
		if err := copyResults(paths.ESP, opts.ResultsDir); err != nil {
			return nil, fmt.Errorf("qemu: copying the results files: %w", err)
		}
	}
	status := cmd.ProcessState.ExitCode()
	imageStatus, debugExit := decodeStatus(status)
	return &Result{
		QEMUStatus:  status,
		ImageStatus: imageStatus,
		DebugExit:   debugExit,
		TimedOut:    killed && runCtx.Err() != nil,
		Stopped:     serial.Matched(),
		Duration:    elapsed,
		Serial:      serial.Bytes(),
		Stderr:      stderr.Bytes(),
	}, nil
}

// writeESP writes the boot disk image esp holding BootFiles.
func writeESP(esp string, image []byte, opts Options) error {
	files, err := BootFiles(image, opts.Plan, opts.Files)
	if err != nil {
		return fmt.Errorf("qemu: %w", err)
	}
	if err := usbimage.WriteFiles(esp, files); err != nil {
		return fmt.Errorf("qemu: boot volume: %w", err)
	}
	return nil
}

// copyResults copies the results files on the disk image esp into dir.
func copyResults(esp, dir string) error {
	names, err := usbimage.Results(esp)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		data, err := usbimage.ReadFile(esp, n)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, path.Base(n)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// BootFiles returns the files of a boot volume, keyed by slash-separated
// path from its root: the image at EFI/BOOT/BOOTX64.EFI, plan (when
// non-nil) at PlanFile, and the extra files. An extra file that escapes
// the root, or whose name differs only in case from another's (as on FAT),
// the image's or the plan's, is an error.
func BootFiles(image, plan []byte, extra map[string][]byte) (map[string][]byte, error) {
	files := map[string][]byte{bootPath: image}
	if plan != nil {
		files[PlanFile] = plan
	}
	taken := map[string]string{}
	for name := range files {
		taken[strings.ToLower(name)] = name
	}
	for name, data := range extra {
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			return nil, fmt.Errorf("boot volume file %q is not a path inside the volume", name)
		}
		clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(name)))
		if other, ok := taken[strings.ToLower(clean)]; ok {
			return nil, fmt.Errorf("boot volume file %q collides with %s", name, other)
		}
		taken[strings.ToLower(clean)] = clean
		files[clean] = data
	}
	return files, nil
}

// SerialSink collects an emulator's serial output and copies it to the
// optional echo writer and log file. Its Write never fails, so the
// emulator is never blocked on a full pipe; the first log error is kept
// (LogErr). When the output matches stopAt, stop is called once.
type SerialSink struct {
	buf    bytes.Buffer
	echo   io.Writer
	log    io.Writer
	logErr error

	stopAt  *regexp.Regexp // when the output matches, call stop
	stop    func()
	stopped bool
	checked int // bytes of buf already searched for stopAt
}

// NewSerialSink returns a sink copying to echo and log (either may be nil)
// that calls stop once the output matches stopAt (when both are non-nil).
func NewSerialSink(echo, log io.Writer, stopAt *regexp.Regexp, stop func()) *SerialSink {
	return &SerialSink{echo: echo, log: log, stopAt: stopAt, stop: stop}
}

// Bytes returns the output collected so far.
func (s *SerialSink) Bytes() []byte { return s.buf.Bytes() }

// Matched reports whether the output matched stopAt.
func (s *SerialSink) Matched() bool { return s.stopped }

// LogErr returns the first error writing the log file.
func (s *SerialSink) LogErr() error { return s.logErr }

func (s *SerialSink) Write(p []byte) (int, error) {
	s.buf.Write(p)
	if s.stopAt != nil && s.stop != nil && !s.stopped {
		// Search the new bytes and a tail of the old, for a match that
		// spans two writes.
		from := max(0, s.checked-4096)
		if s.stopAt.Match(s.buf.Bytes()[from:]) {
			s.stopped = true
			s.stop()
		}
		s.checked = s.buf.Len()
	}
	if s.echo != nil {
		_, _ = s.echo.Write(p)
	}
	if s.log != nil && s.logErr == nil {
		_, s.logErr = s.log.Write(p)
	}
	return len(p), nil
}
