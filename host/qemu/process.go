package qemu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Command returns the command of an emulator run: in its own process
// group, so that a kill reaches any helper the emulator spawned (or the
// emulator behind a wrapper script) and a terminal's Ctrl-C reaches only
// ptilab (which then cancels ctx); the whole group is killed when ctx
// ends, and its output drained for at most waitDelay afterwards. Used by
// Run and host/bochs.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = waitDelay
	return cmd
}

// Wait waits for cmd (from Command), started at start, and returns how
// long it ran and whether it was killed rather than exiting. It returns
// an error when waiting failed other than by the process's own exit
// status, and when ctx, the caller's context, was cancelled and killed
// it; what names the emulator in those errors ("qemu", "bochs").
func Wait(ctx context.Context, cmd *exec.Cmd, start time.Time, what string) (elapsed time.Duration, killed bool, err error) {
	waitErr := cmd.Wait()
	elapsed = time.Since(start)
	killed = !cmd.ProcessState.Exited()
	if exitErr := (*exec.ExitError)(nil); waitErr != nil && !errors.As(waitErr, &exitErr) {
		return elapsed, killed, fmt.Errorf("%s: waiting for %s: %w", what, cmd.Path, waitErr)
	}
	if killed && ctx.Err() != nil {
		return elapsed, killed, fmt.Errorf("%s: run cancelled after %v: %w", what, elapsed.Round(time.Millisecond), ctx.Err())
	}
	return elapsed, killed, nil
}

// SerialLog creates (or truncates) path for a copy of the serial output;
// an empty path gives a nil writer. close closes the file, if any.
func SerialLog(path string) (w io.Writer, close func(), err error) {
	if path == "" {
		return nil, func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("serial log: %w", err)
	}
	return f, func() { f.Close() }, nil
}
