package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ptilab/ptilab/host/linuxrun"
)

// cmdLinux runs "ptilab linux": the benchmarks on the running Linux
// kernel (host/linuxrun), the console lines and records to stdout, and to
// the -log file and a results file in the -o directory. A plan line the
// run cannot use is an error, with its number: nothing runs.
func cmdLinux(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("linux", "[-plan FILE] [-log FILE] [-o DIR] [-perf]", stderr)
	planFile := fs.String("plan", "", "the run's plan `FILE` (the image's keys, plus cpu, perf and perf_rounds); default: null, lseek, pingpong, messaging with the image's defaults")
	logFile := fs.String("log", "", "also write the output to `FILE`")
	outDir := fs.String("o", "", "also write the output as a results file in `DIR` (<date>-<time>-linux.log, never over another), which report, compare and plot read")
	perf := fs.Bool("perf", false, "run perf bench beside, as the plan's perf = on (by default: where perf is on the PATH, perf = auto)")
	perfCmd := fs.String("perf-cmd", "", "the perf `program` (default: perf on the PATH)")
	compat := fs.String("compat32", "", "the 386 `program` for the compat rows (default: ptilab-linux386 beside this program)")
	if code := parse(fs, args, 0); code >= 0 {
		return code
	}
	var data []byte
	if *planFile != "" {
		var err error
		if data, err = os.ReadFile(*planFile); err != nil {
			fmt.Fprintf(stderr, "ptilab: %v\n", err)
			return exitFail
		}
	}
	plan, errs := linuxrun.ParsePlan(data)
	for _, e := range errs {
		fmt.Fprintf(stderr, "ptilab: %s:%d: %q: %s\n", *planFile, e.Line, e.Text, e.Err)
	}
	if len(errs) > 0 {
		return exitUsage
	}
	if *perf {
		plan.Perf = "on"
	}
	if *compat != "" { // named, so wanted: its absence is an error, not an unsupported row
		if _, err := os.Stat(*compat); err != nil {
			fmt.Fprintf(stderr, "ptilab: -compat32: %v\n", err)
			return exitUsage
		}
	}
	w := stdout
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			fmt.Fprintf(stderr, "ptilab: %v\n", err)
			return exitFail
		}
		files = append(files, f)
	}
	if *outDir != "" {
		f, err := newResultsFile(*outDir, time.Now())
		if err != nil {
			fmt.Fprintf(stderr, "ptilab: %v\n", err)
			return exitFail
		}
		files = append(files, f)
	}
	for _, f := range files {
		w = io.MultiWriter(w, f)
	}
	return linuxrun.Run(ctx, w, plan, linuxrun.Options{Commit: commit, Perf: *perfCmd, Compat32: *compat})
}

// newResultsFile creates the results file of a run started at t in dir
// (made if need be): <date>-<time>-linux.log, or with -2, -3, ... before
// .log where a run of the same second has the name: never over another.
func newResultsFile(dir string, t time.Time) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	stem := filepath.Join(dir, t.Format("20060102-150405")+"-linux")
	for i := 1; ; i++ {
		name := stem + ".log"
		if i > 1 {
			name = fmt.Sprintf("%s-%d.log", stem, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) || i == 1000 {
			return f, err
		}
	}
}
