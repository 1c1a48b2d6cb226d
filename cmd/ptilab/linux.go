package main

import (
	"context"
	"fmt"
	"io"
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
	planFile := fs.String("plan", "", "the run's plan (the image's keys, plus cpu, perf and perf_rounds); default: null, lseek, pingpong, messaging with the image's defaults")
	logFile := fs.String("log", "", "also write the output to `FILE`")
	outDir := fs.String("o", "", "also write the output as a results file, DIR/<date>-<time>-linux.log, which report, compare and plot read")
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
	w := stdout
	for _, path := range []string{*logFile, resultsPath(*outDir)} {
		if path == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintf(stderr, "ptilab: %v\n", err)
			return exitFail
		}
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(stderr, "ptilab: %v\n", err)
			return exitFail
		}
		defer f.Close()
		w = io.MultiWriter(w, f)
	}
	return linuxrun.Run(ctx, w, plan, linuxrun.Options{Commit: commit, Perf: *perfCmd, Compat32: *compat})
}

// resultsPath is the results file of a run started now in dir ("" for
// none).
func resultsPath(dir string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, time.Now().Format("20060102-150405")+"-linux.log")
}
