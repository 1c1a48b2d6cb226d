package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/goos"
)

// ResultsDir is the directory on the boot volume, beside the plan, that
// receives one results file per run.
const ResultsDir = "ptilab-results"

// resultsFile is the open results file; kept here for the whole run, so
// that the collector never closes the descriptor the kernel writes to.
var resultsFile *os.File

// openResults creates ptilab-results/<date>-<time>-<cpu>.log on the boot
// volume, never reusing a name (a -2, -3... suffix when taken), and has
// the kernel copy the console to it (goos.TeeConsole). A failure (no file
// system on the boot device, a read-only or full medium) is printed and
// returned in the record; the run goes on without the file.
func openResults(r *bench.Reporter, now time.Time) *contract.ResultsFile {
	f, path, err := createResults(now, cpuTag(&amd64.Features))
	if err != nil {
		goos.NoResults()
		msg := err.Error()
		r.Printf("ptilab: no results file on the boot volume: %s; the run goes on", msg)
		return &contract.ResultsFile{Error: msg}
	}
	resultsFile = f
	lost := goos.TeeConsole(int(f.Fd()))
	r.Printf("ptilab: results file %s on the boot volume", path)
	if lost > 0 {
		r.Printf("ptilab: the results file misses %d bytes of the boot output", lost)
	}
	return &contract.ResultsFile{Path: path}
}

// createResults makes the results directory if needed and creates a new
// file in it for a run started at now on CPU cpu.
func createResults(now time.Time, cpu string) (*os.File, string, error) {
	if err := os.Mkdir("/"+ResultsDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, "", fmt.Errorf("creating %s: %w", ResultsDir, unwrapPath(err))
	}
	base := resultsName(now, cpu)
	for i := 1; i < 100; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		path := ResultsDir + "/" + name + ".log"
		f, err := os.OpenFile("/"+path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("creating %s: %w", path, unwrapPath(err))
		}
		return f, path, nil
	}
	return nil, "", fmt.Errorf("%s/%s: 99 files of that name already", ResultsDir, base)
}

// unwrapPath returns a *fs.PathError's cause alone (the callers name the
// path).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// resultsName is a results file's name without its suffix: the date and
// time the run started (the firmware's real-time clock, read through
// UEFI GetTime at boot) and the CPU, e.g. 20261201-161351-intel-6-58-9.
func resultsName(now time.Time, cpu string) string {
	return now.Format("20060102-150405") + "-" + cpu
}

// cpuTag names the CPU in a file name: its vendor and its family, model
// and stepping in decimal, as /proc/cpuinfo gives them.
func cpuTag(f *amd64.CPUFeatures) string {
	vendor := f.Vendor()
	switch vendor {
	case "GenuineIntel":
		vendor = "intel"
	case "AuthenticAMD":
		vendor = "amd"
	default:
		vendor = strings.Map(func(r rune) rune {
			if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
				return r
			}
			if 'A' <= r && r <= 'Z' {
				return r + 'a' - 'A'
			}
			return -1
		}, vendor)
	}
	return fmt.Sprintf("%s-%d-%d-%d", vendor, f.Family, f.Model, f.Stepping)
}

// resultsEnd completes the results file's part of the END record: what
// the file cost so far, and the error of a write that failed during the
// run.
func resultsEnd(rf *contract.ResultsFile) *contract.ResultsFile {
	if s := goos.ResultsError(); s.Error() {
		rf.Error = "writing: " + s.String()
	}
	if rf.Path != "" {
		var ns int64
		rf.Bytes, rf.Flushes, ns = goos.ResultsStats()
		rf.WriteMs = float64(ns) / 1e6
	}
	return rf
}
