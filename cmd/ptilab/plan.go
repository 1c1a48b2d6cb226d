package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ptilab/ptilab/bench"
	_ "github.com/ptilab/ptilab/bench/all" // every family's plan keys and benchmarks
)

// cmdPlan runs "ptilab plan check FILE...": each plan parsed as the image
// parses it (bench.ParsePlan, the same code), every line it would not use
// printed with the file, its number, the image's message ("did you mean"
// for a near key) and what the image would do instead; exit status 1
// when any line would be ignored, 0 when every line is used.
func cmdPlan(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "usage: ptilab plan check FILE...")
		return exitUsage
	}
	fs := newFlagSet("plan check", "FILE...", stderr)
	if code := parseSome(fs, args[1:]); code >= 0 {
		return code
	}
	code := exitOK
	for _, path := range fs.Args() {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "ptilab: %v\n", err)
			code = exitFail
			continue
		}
		if errs := checkPlan(path, data, stderr); len(errs) > 0 {
			code = exitFail
			continue
		}
		fmt.Fprintf(stdout, "ptilab: %s: every line is used\n", path)
	}
	return code
}

// checkPlan parses a plan as the image does and prints each line it
// would not use to w, as "ptilab: FILE:LINE: ...", and what the plan
// accepted will still not do (Plan.Warnings: a warning, not an error);
// it returns the lines.
func checkPlan(path string, data []byte, w io.Writer) []bench.PlanError {
	p, errs := bench.ParsePlan(data)
	for _, e := range errs {
		fmt.Fprintf(w, "ptilab: %s:%d: %q: %s (the image would ignore the line, %s)\n", path, e.Line, e.Text, e.Err, e.Consequence())
	}
	for _, warning := range p.Warnings() {
		fmt.Fprintf(w, "ptilab: %s: warning: %s\n", path, warning)
	}
	return errs
}
