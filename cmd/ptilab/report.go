package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ptilab/ptilab/host/report"
)

// The results commands: report, compare and plot read serial logs,
// results files, directories of them and USB disk images (package
// report). What they cannot read is one line on stderr each: with
// nothing read, exit status 1; with something skipped and the rest
// printed, exitPartial.

// parseSome parses args into fs (parseArgs) and checks that there is at
// least one positional argument; it returns -1 to continue, else the exit
// code.
func parseSome(fs *flag.FlagSet, args []string) int {
	if err := parseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(fs.Output(), "ptilab %s: want at least one argument\n", fs.Name())
		fs.Usage()
		return exitUsage
	}
	return -1
}

// formatFlag adds the -format flag to fs, one of formats.
func formatFlag(fs *flag.FlagSet, formats []string) *string {
	return fs.String("format", "text", "output `format`: "+strings.Join(formats, ", "))
}

// widthFlag adds the -wide flag to fs and returns a function giving the
// text width it asks for: report.DefaultWidth, or 0 (the console's
// layout, as wide as the tables are) with -wide.
func widthFlag(fs *flag.FlagSet) func() int {
	wide := fs.Bool("wide", false, fmt.Sprintf("text: the console's layout, as wide as the tables are (default: fitted to %d columns)", report.DefaultWidth))
	return func() int {
		if *wide {
			return 0
		}
		return report.DefaultWidth
	}
}

// checkFormat reports a format not among formats as a usage error.
func checkFormat(fs *flag.FlagSet, format string, formats []string) int {
	if !slices.Contains(formats, format) {
		fmt.Fprintf(fs.Output(), "ptilab %s: unknown -format %q (want one of %s)\n", fs.Name(), format, strings.Join(formats, ", "))
		return exitUsage
	}
	return -1
}

// warn prints each warning of report.Load as one line, and returns
// exitPartial when there is any, else exitOK.
func warn(stderr io.Writer, warnings []string) int {
	for _, w := range warnings {
		fmt.Fprintf(stderr, "ptilab: warning: %s\n", strings.ReplaceAll(w, "\n", " "))
	}
	if len(warnings) > 0 {
		return exitPartial
	}
	return exitOK
}

// fail prints err as one line and returns exitFail.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "ptilab: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	return exitFail
}

func cmdReport(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report", "[-format text|markdown|csv|json|benchfmt|html] [-wide] FILE|DIR|IMAGE...", stderr)
	format := formatFlag(fs, report.Formats)
	width := widthFlag(fs)
	if code := parseSome(fs, args); code >= 0 {
		return code
	}
	if code := checkFormat(fs, *format, report.Formats); code >= 0 {
		return code
	}
	runs, warnings, err := report.Load(fs.Args()...)
	if err != nil {
		return fail(stderr, err)
	}
	var reps []report.Report
	for _, r := range runs {
		reps = append(reps, report.Build(r))
	}
	if err := report.WriteReports(stdout, *format, width(), reps); err != nil {
		return fail(stderr, err)
	}
	return warn(stderr, warnings)
}

func cmdCompare(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("compare", "[-format text|markdown|csv|json] [-all] [-wide] [-plot FILE.svg] A B", stderr)
	format := formatFlag(fs, report.CompareFormats)
	width := widthFlag(fs)
	plotFile := fs.String("plot", "", "also write a plot of both runs' PTI costs (each configuration's ratio to off) to `file` (.svg, .png)")
	all := fs.Bool("all", false, "also list the configurations only one run has (by default counted in a note)")
	if code := parse(fs, args, 2); code >= 0 {
		return code
	}
	if code := checkFormat(fs, *format, report.CompareFormats); code >= 0 {
		return code
	}
	var runs [2]*report.Run
	var warnings []string
	for i, p := range fs.Args() {
		rs, w, err := report.Load(p)
		if err != nil {
			return fail(stderr, err)
		}
		if len(rs) != 1 {
			return fail(stderr, fmt.Errorf("%s: holds %d runs; compare takes one run on each side (name a results file)", p, len(rs)))
		}
		runs[i] = rs[0]
		warnings = append(warnings, w...)
	}
	if err := report.Write(stdout, *format, width(), report.Compare(runs[0], runs[1], *all)); err != nil {
		return fail(stderr, err)
	}
	if *plotFile != "" {
		if err := report.WriteComparePlot(*plotFile, runs[0], runs[1]); err != nil {
			return fail(stderr, fmt.Errorf("-plot %s: %w", *plotFile, err))
		}
	}
	return warn(stderr, warnings)
}

func cmdPlot(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("plot", "[-o DIR] FILE|DIR|IMAGE...", stderr)
	dir := fs.String("o", ".", "write the SVG files to `dir`")
	if code := parseSome(fs, args); code >= 0 {
		return code
	}
	runs, warnings, err := report.Load(fs.Args()...)
	if err != nil {
		return fail(stderr, err)
	}
	files, err := report.WritePlots(*dir, runs)
	if err != nil {
		return fail(stderr, err)
	}
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	return warn(stderr, warnings)
}
