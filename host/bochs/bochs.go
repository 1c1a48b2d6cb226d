// Package bochs boots a UEFI image under Bochs with the 2 MiB OVMF and
// collects what it prints on COM1: ptilab's second emulator, the one that
// implements PCID and INVPCID with their #GP rules (QEMU's TCG has
// neither), whose TSC counts instructions.
//
// Bochs has no debug-exit device: the image powers off at the end (Bochs
// then exits with status 1, its ACPI soft-off being a "panic"), and the
// run's status is the "exit" field of the image's PTILAB-END line. The
// serial log is parsed as host/qemu parses QEMU's.
package bochs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/host/qemu"
)

// Defaults of Options.
const (
	DefaultCPU    = "corei7_haswell_4770" // PCID, INVPCID, SMEP; highest CPUID leaf 0DH
	DefaultMemory = qemu.DefaultMemory
)

// endGrace is how long Run lets Bochs run after the image printed its
// PTILAB-END line before it kills it: a power-off ends Bochs at once; an
// image told to return to the firmware or reset would leave it running.
const endGrace = 15 * time.Second

// waitDelay is how long Run waits for Bochs's output to drain after it
// exited or was killed.
const waitDelay = 5 * time.Second

// Options describes one Bochs run.
type Options struct {
	// Image is the path of the PE32+ EFI application to boot; it goes to
	// EFI/BOOT/BOOTX64.EFI on the boot disk.
	Image string
	// CPU is the Bochs CPU model (bochsrc cpu: model=, e.g.
	// corei7_haswell_4770, broadwell_ult, corei7_skylake_x); empty means
	// DefaultCPU.
	CPU string
	// Memory is the guest RAM in QEMU's -m syntax ("256M", "1G"); empty
	// means DefaultMemory.
	Memory string
	// Plan is written to the plan file at the root of the boot disk, with
	// "end = poweroff" and the Bochs build's name added where it sets
	// neither (see BootPlan).
	Plan []byte
	// Files are extra files for the boot disk, as qemu.Options.Files.
	Files map[string][]byte
	// Disk, when set, is a raw disk image (ptilab usb's) booted instead
	// of a boot disk made from Image, Plan and Files (which are then
	// ignored), written to in place. Its size must be a whole number of
	// Bochs's cylinders (16 heads of 63 sectors).
	Disk string
	// Bochs is the Bochs executable (a path, or a name looked up in
	// PATH, e.g. /usr/bin/bochs for Debian's 2.7); empty means $BOCHS when
	// set, else the pinned build (see Find).
	Bochs string
	// IgnoreBadMSRs runs Bochs with ignore_bad_msrs=1 (an MSR the model
	// lacks reads 0) instead of the MSRs file and ignore_bad_msrs=0 (it
	// raises #GP, as on hardware).
	IgnoreBadMSRs bool
	// Timeout bounds the whole run, firmware start-up included; it must be
	// positive. When it expires Bochs is killed and Result.TimedOut is set.
	Timeout time.Duration
	// LogPath, when set, receives a raw copy of the serial output as it
	// arrives (the file is created or truncated).
	LogPath string
	// Echo, when set, receives a live raw copy of the serial output.
	Echo io.Writer
	// StopAt, when set, makes Run kill Bochs as soon as the serial output
	// matches it (as qemu.Options.StopAt: e.g. the firmware's boot
	// manager going on after the image returned), instead of endGrace
	// after the image's PTILAB-END line; Result.Stopped then reports the
	// match.
	StopAt *regexp.Regexp
}

// Result is the outcome of a Bochs run that started.
type Result struct {
	// BochsStatus is Bochs's exit status (1 after the image's power-off),
	// or -1 if it was killed.
	BochsStatus int
	// TimedOut reports whether Options.Timeout expired and Bochs was
	// killed.
	TimedOut bool
	// Stopped reports whether Bochs was killed endGrace after the image's
	// PTILAB-END line (the image did not power off), or when the serial
	// output matched Options.StopAt.
	Stopped bool
	// Duration is the wall-clock time from Bochs's start to its exit.
	Duration time.Duration
	// Serial is the raw serial output (COM1); its methods (Lines,
	// Records, End, Fault, Decoded, Ended) parse it.
	qemu.Serial
	// Output is what Bochs printed on its stdout and stderr (its banner,
	// its debugger's lines, the message it exits with).
	Output []byte
	// Log is Bochs's log file: its errors (e.g. "RDMSR: Unknown register")
	// and panics.
	Log []byte
	// Build is the Bochs that ran.
	Build Build
}

// ImageStatus returns the image's status: the "exit" field of its
// PTILAB-END line; ok is false without one.
func (r *Result) ImageStatus() (status int, ok bool) {
	end, ok := r.End()
	if !ok {
		return -1, false
	}
	n, isNum := end.Fields["exit"].(json.Number)
	v, err := n.Int64()
	if !isNum || err != nil || v < 0 || v > 255 {
		return -1, false
	}
	return int(v), true
}

// Message returns the message Bochs exited with ("Bochs is exiting with
// the following message: ..."), or its log's first panic line, or "".
func (r *Result) Message() string {
	const banner = "Bochs is exiting with the following message:"
	if _, after, ok := strings.Cut(string(r.Output), banner); ok {
		for _, l := range strings.Split(after, "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "=====") {
				return l
			}
		}
	}
	for _, l := range strings.Split(string(r.Log), "\n") {
		if strings.Contains(l, ">>PANIC<<") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// ExitCode maps a result to an exit code for the ptilab command, with
// host/qemu's meanings: the image's status from its PTILAB-END line,
// qemu.ExitTimeout when Bochs was killed at its timeout, qemu.ExitNoStatus
// when Bochs ended without one. qemu.ExitNoEnd (status 0 without
// PTILAB-END) cannot arise: under Bochs the status comes only from that
// line.
func ExitCode(r *Result) int {
	if s, ok := r.ImageStatus(); ok {
		return s
	}
	if r.TimedOut {
		return qemu.ExitTimeout
	}
	return qemu.ExitNoStatus
}

// endLine matches a complete PTILAB-END line.
var endLine = regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(contract.EndTag) + ` \{[^\n]*\n`)

// Run boots opts.Image under Bochs and waits for Bochs to exit, for the
// image to have printed PTILAB-END endGrace ago (or the serial output to
// match opts.StopAt), or for opts.Timeout to expire, whichever comes
// first. The boot disk, the ROM image, the MSRs
// file and the bochsrc live in a temporary directory removed afterwards.
//
// Run returns an error, and no Result, when the options are invalid,
// Bochs or a file it needs is missing (see Find), the boot disk cannot be
// made, Bochs cannot be started, the serial log cannot be written, or ctx
// is cancelled (Bochs is then killed). Every other outcome is described by
// the Result.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if opts.Image == "" && opts.Disk == "" {
		return nil, errors.New("bochs: no image given")
	}
	if opts.Timeout <= 0 {
		return nil, fmt.Errorf("bochs: timeout must be positive, got %v", opts.Timeout)
	}
	mem, err := MemoryMiB(cmp.Or(opts.Memory, DefaultMemory))
	if err != nil {
		return nil, err
	}
	paths, err := Find(opts.Bochs)
	if err != nil {
		return nil, err
	}
	rom, err := ROM(paths.Code, paths.Vars, MaxROM(paths.Bochs))
	if err != nil {
		return nil, err
	}
	var files map[string][]byte
	if opts.Disk == "" {
		image, err := os.ReadFile(opts.Image)
		if err != nil {
			return nil, fmt.Errorf("bochs: %w", err)
		}
		if files, err = qemu.BootFiles(image, BootPlan(opts.Plan, paths.Bochs), opts.Files); err != nil {
			return nil, fmt.Errorf("bochs: %w", err)
		}
	} else if err := checkDisk(opts.Disk); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ptilab-bochs-")
	if err != nil {
		return nil, fmt.Errorf("bochs: %w", err)
	}
	defer os.RemoveAll(dir)
	c := Config{
		CPU:       cmp.Or(opts.CPU, DefaultCPU),
		MemoryMiB: mem,
		ROM:       filepath.Join(dir, "ovmf.rom"),
		VGABIOS:   paths.VGABIOS,
		Disk:      filepath.Join(dir, "disk.img"),
		Serial:    "/dev/fd/3", // the pipe Run reads (ExtraFiles[0])
		Log:       filepath.Join(dir, "bochs.log"),
		Legacy:    paths.Bochs.Legacy(),
	}
	if !opts.IgnoreBadMSRs {
		c.MSRs = filepath.Join(dir, "msrs.def")
		if err := os.WriteFile(c.MSRs, []byte(MSRs), 0o644); err != nil {
			return nil, fmt.Errorf("bochs: %w", err)
		}
	}
	if err := os.WriteFile(c.ROM, rom, 0o644); err != nil {
		return nil, fmt.Errorf("bochs: %w", err)
	}
	if opts.Disk != "" {
		c.Disk = opts.Disk
	} else if err := WriteDisk(c.Disk, files); err != nil {
		return nil, err
	}
	rc := filepath.Join(dir, "bochsrc")
	if err := os.WriteFile(rc, []byte(Bochsrc(c)), 0o644); err != nil {
		return nil, fmt.Errorf("bochs: %w", err)
	}
	args := []string{"-q", "-f", rc}
	if paths.Bochs.Debugger {
		// Commands for Bochs's built-in debugger, which stops before the
		// first instruction: continue, and quit should it stop again.
		cmds := filepath.Join(dir, "debugger")
		if err := os.WriteFile(cmds, []byte("c\nquit\n"), 0o644); err != nil {
			return nil, fmt.Errorf("bochs: %w", err)
		}
		args = append(args, "-rc", cmds)
	}

	log, closeLog, err := qemu.SerialLog(opts.LogPath)
	if err != nil {
		return nil, fmt.Errorf("bochs: %w", err)
	}
	defer closeLog()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("bochs: %w", err)
	}
	defer pr.Close()

	runCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	stopCtx, stop := context.WithCancel(runCtx)
	defer stop()
	ended := make(chan struct{})
	stopAt, grace := endLine, endGrace
	if opts.StopAt != nil {
		stopAt, grace = opts.StopAt, 0
	}
	serial := qemu.NewSerialSink(opts.Echo, log, stopAt, func() { close(ended) })
	cmd := qemu.Command(stopCtx, paths.Bochs.Path, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SDL_VIDEODRIVER=dummy", "SDL_AUDIODRIVER=dummy")
	var out bytes.Buffer
	cmd.Stdin = nil // /dev/null: a debugger reads its commands from -rc
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.ExtraFiles = []*os.File{pw}

	start := time.Now()
	if err := cmd.Start(); err != nil {
		pw.Close()
		return nil, fmt.Errorf("bochs: starting %s: %w", paths.Bochs.Path, err)
	}
	pw.Close()
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(serial, pr)
		copied <- err
	}()
	var stopped atomic.Bool
	go func() {
		select {
		case <-ended:
		case <-stopCtx.Done():
			return
		}
		select {
		case <-time.After(grace):
			stopped.Store(true)
			stop()
		case <-stopCtx.Done():
		}
	}()
	elapsed, killed, waitErr := qemu.Wait(ctx, cmd, start, "bochs")
	stop() // ends the grace goroutine
	// The serial pipe closes when Bochs (and anything it started) exits.
	select {
	case err := <-copied:
		if err != nil {
			return nil, fmt.Errorf("bochs: reading the serial output: %w", err)
		}
	case <-time.After(waitDelay):
		pr.Close()
		<-copied
	}

	if waitErr != nil {
		return nil, waitErr
	}
	if serial.LogErr() != nil {
		return nil, fmt.Errorf("bochs: writing serial log: %w", serial.LogErr())
	}
	bochsLog, _ := os.ReadFile(c.Log)
	return &Result{
		BochsStatus: cmd.ProcessState.ExitCode(),
		TimedOut:    killed && runCtx.Err() != nil,
		Stopped:     killed && stopped.Load(),
		Duration:    elapsed,
		Serial:      serial.Bytes(),
		Output:      out.Bytes(),
		Log:         bochsLog,
		Build:       paths.Bochs,
	}, nil
}
