// Command ptilab is the host-side tool of ptilab: it converts the kernel's
// PIE ELF into a UEFI application, boots it under QEMU/OVMF, and reads the
// machine-readable results from its serial log; report, compare and
// plot turn results into tables, comparisons and SVG plots.
//
// Exit status: 0 on success, 1 on failure, 2 on a usage error, 3 when
// log, report, compare or plot printed what they could read but skipped
// something damaged (a file that gives no run, a record line that does
// not decode: each named on stderr) or, for report, compare and plot, a
// run was cut short; "ptilab
// qemu" exits with the image's status (0 only with a PTILAB-END line),
// 124 on timeout, 125 when QEMU ended without the image's status (a QEMU
// failure: its first error line is printed), 126 when the image said 0 but
// printed no PTILAB-END line. "ptilab bochs" exits with the status of the
// image's PTILAB-END line, 124 on timeout, 125 when Bochs ended without
// one (Bochs's message is printed).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/host/bochs"
	"github.com/ptilab/ptilab/host/efiimage"
	"github.com/ptilab/ptilab/host/image"
	"github.com/ptilab/ptilab/host/linuxrun"
	"github.com/ptilab/ptilab/host/qemu"
)

const usage = `usage: ptilab <command> [flags] [arguments]

commands:
  build [-o OUT]          build the kernel image (default build/ptilab.efi,
                          with the ELF beside it as ptilab.elf)
  efi  -elf IN -o OUT     convert a PIE ELF (go build -buildmode=pie) into a
                          relocatable x86-64 EFI application
  qemu [flags] IMAGE.efi  boot IMAGE.efi under QEMU with OVMF, copy its serial
                          output to stdout and exit with the image's status
                          (124 on timeout, 125 if QEMU ended without one,
                          126 for 0 without a PTILAB-END line)
  bochs [flags] IMAGE.efi boot IMAGE.efi under Bochs with the 2 MiB OVMF
                          (the PCID rows run there; the TSC counts
                          instructions), copy its serial output to stdout
                          and exit with the status of its PTILAB-END line
                          (124 on timeout, 125 if Bochs ended without one)
  log  FILE               print the PTILAB records of a saved serial log as
                          JSON lines, the PTILAB-END line last as a record of
                          kind "end"; exit 1 unless it ends with PTILAB-END
                          status "ok", else 3 if a damaged record line was
                          skipped (a last line cut in half is skipped)
  report [-format F] FILE|DIR|IMAGE...
                          print a run's machine line and tables (null call,
                          32-bit vs 64-bit seed tables, lseek, work curve,
                          ping-pong, sched-messaging, TLB sweep, flush
                          costs, retention answers, the mitigation
                          ladder) with the reference
                          figures, from serial logs, results files, a
                          ptilab-results directory or a USB disk image;
                          F is text (fitted to 100 columns; -wide: the
                          console's), markdown, csv (tidy: a row per
                          figure), json, benchfmt (for benchstat) or html
                          (one page with the plots)
  compare [-format F] A B two runs row by row: A, B, B/A and whether the
                          difference is significant given the repeats;
                          rows that cannot be compared say why
  plot [-o DIR] FILE|DIR|IMAGE...
                          write SVG plots (work curve and its overhead,
                          null call, seed tables, TLB sweep, flush costs,
                          mitigation ladders) to DIR
                          (report, compare and plot skip a file that gives
                          no run and a damaged record line, and warn of a
                          run cut short, each named on stderr, and then
                          exit 3; 1 when nothing was read)
  linux [-plan FILE] [-log FILE] [-o DIR]
                          run null (getppid, getpid), lseek, the ping-pong
                          and sched-messaging on the running Linux kernel,
                          keyed by its PTI state, with the 32-bit compat
                          entries (build/ptilab-linux386) and beside perf
                          bench where perf is installed; the output is a
                          log that report, compare and plot read
  version                 print the commit ptilab was built from (an image
                          records its own: report's machine line)
  plan check FILE...      parse plan files as the image does; print each line
                          it would ignore (its number, the image's message,
                          a near key for a typo); exit 1 if there is one
  usb  [-o FILE] [-plan FILE] IMAGE.efi
                          write a USB stick image (default build/ptilab.img):
                          a GPT disk with a FAT32 EFI System Partition
                          holding IMAGE.efi as EFI/BOOT/BOOTX64.EFI, a
                          ptilab.plan sized for real hardware and README.txt;
                          a -plan FILE with a line the image would ignore
                          is refused (as plan check)

Run "ptilab <command> -h" for the flags of a command.
`

// Exit codes other than the image's own status.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
	// exitPartial: the results commands printed what they could read
	// and skipped something damaged, named on stderr.
	exitPartial = 3
)

func main() {
	linuxrun.MaybeWorker() // a worker process of "ptilab linux" runs and exits here
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command runs a subcommand with its arguments.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// plain adapts a subcommand that needs no context.
func plain(f func(args []string, stdout, stderr io.Writer) int) command {
	return func(_ context.Context, args []string, stdout, stderr io.Writer) int { return f(args, stdout, stderr) }
}

// commands are the subcommands by name (usage lists them).
var commands = map[string]command{
	"build":   func(ctx context.Context, args []string, _, stderr io.Writer) int { return cmdBuild(ctx, args, stderr) },
	"efi":     func(_ context.Context, args []string, _, stderr io.Writer) int { return cmdEFI(args, stderr) },
	"qemu":    cmdQEMU,
	"bochs":   cmdBochs,
	"log":     plain(cmdLog),
	"report":  plain(cmdReport),
	"compare": plain(cmdCompare),
	"plot":    plain(cmdPlot),
	"version": plain(cmdVersion),
	"plan":    plain(cmdPlan),
	"linux":   cmdLinux,
	"usb":     plain(cmdUSB),
}

// run executes the command line args (without the program name) and returns
// the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	if cmd, ok := commands[args[0]]; ok {
		return cmd(ctx, args[1:], stdout, stderr)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "ptilab: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// newFlagSet returns a flag set for a subcommand whose usage line is synopsis.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: ptilab %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses args into fs with flags accepted anywhere, after the
// positional arguments too ("report run.log -format markdown"), as the
// flag package alone does not; "--" ends the flags. fs.Args() are then
// the positional arguments, in order.
func parseArgs(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	// Parsing "--" alone sets fs.Args() to what follows and nothing else.
	return fs.Parse(append([]string{"--"}, positional...))
}

// parse parses args into fs (parseArgs) and checks the number of
// positional arguments; it returns -1 to continue, else the exit code.
func parse(fs *flag.FlagSet, args []string, positional int) int {
	if err := parseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != positional {
		fmt.Fprintf(fs.Output(), "ptilab %s: want %d argument(s), got %d\n", fs.Name(), positional, fs.NArg())
		fs.Usage()
		return exitUsage
	}
	return -1
}

func cmdBuild(ctx context.Context, args []string, stderr io.Writer) int {
	fs := newFlagSet("build", "[-o OUT]", stderr)
	out := fs.String("o", "build/ptilab.efi", "output EFI application `file`; the ELF goes beside it")
	if code := parse(fs, args, 0); code >= 0 {
		return code
	}
	elf := strings.TrimSuffix(*out, filepath.Ext(*out)) + ".elf"
	if err := image.Build(ctx, ".", elf, *out); err != nil {
		fmt.Fprintf(stderr, "ptilab: %v\n", err)
		return exitFail
	}
	return exitOK
}

func cmdEFI(args []string, stderr io.Writer) int {
	fs := newFlagSet("efi", "-elf IN -o OUT", stderr)
	in := fs.String("elf", "", "input PIE ELF `file`")
	out := fs.String("o", "", "output EFI application `file`")
	if code := parse(fs, args, 0); code >= 0 {
		return code
	}
	if *in == "" || *out == "" {
		fmt.Fprintln(stderr, "ptilab efi: -elf and -o are required")
		fs.Usage()
		return exitUsage
	}
	if err := efiimage.Convert(*in, *out); err != nil {
		fmt.Fprintf(stderr, "ptilab: %v\n", err)
		return exitFail
	}
	return exitOK
}

// bootFlags adds the boot commands' -plan flag (whose usage is
// planUsage) and -log flag (into logPath) to fs, parses the flags and the
// IMAGE argument, and reads the plan file. It returns the image and the
// plan, and code >= 0 when the command must end with that code.
func bootFlags(fs *flag.FlagSet, args []string, planUsage string, logPath *string) (image string, plan []byte, code int) {
	planPath := fs.String("plan", "", planUsage)
	fs.StringVar(logPath, "log", "", "also write the raw serial output to `file`")
	if code := parse(fs, args, 1); code >= 0 {
		return "", nil, code
	}
	if *planPath != "" {
		b, err := os.ReadFile(*planPath)
		if err != nil {
			fmt.Fprintf(fs.Output(), "ptilab: %v\n", err)
			return "", nil, exitFail
		}
		plan = b
	}
	return fs.Arg(0), plan, -1
}

// finish ends a boot command: an error ends it with exitFail; a result is
// told in one line on out (summary) and gives the exit code (exitCode).
func finish[R any](out io.Writer, res R, err error, summary func(R) string, exitCode func(R) int) int {
	if err != nil {
		fmt.Fprintf(out, "ptilab: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(out, "ptilab: %s\n", summary(res))
	return exitCode(res)
}

func cmdQEMU(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("qemu", "[flags] IMAGE.efi", stderr)
	opts := qemu.Options{Echo: qemu.PlainWriter(stdout)}
	fs.StringVar(&opts.Memory, "m", qemu.DefaultMemory, "guest RAM `size` (QEMU -m syntax)")
	fs.StringVar(&opts.CPU, "cpu", "", "QEMU CPU `model` (e.g. Nehalem, IvyBridge, Skylake-Client, max); default QEMU's, or host with -kvm")
	fs.BoolVar(&opts.KVM, "kvm", false, "use KVM acceleration")
	fs.BoolVar(&opts.Icount, "icount", false, "deterministic TCG timing (-icount shift=0)")
	fs.BoolVar(&opts.UBoot, "uboot", false, "boot under U-Boot's x86-64 UEFI (u-boot-qemu) on QEMU's i440FX machine instead of OVMF")
	fs.DurationVar(&opts.Timeout, "timeout", qemuTimeout, "kill QEMU after this `duration` ("+qemuIcountTimeout.String()+" with -icount when not given)")
	fs.StringVar(&opts.ResultsDir, "results", "", "copy the run's results files (ptilab-results/*.log on its boot disk) into `dir`")
	var code int
	if opts.Image, opts.Plan, code = bootFlags(fs, args, "boot plan `file`, copied to ptilab.plan on the boot volume", &opts.LogPath); code >= 0 {
		return code
	}
	icountTimeout(fs, &opts)
	res, err := qemu.Run(ctx, opts)
	return finish(fs.Output(), res, err, summary, qemu.ExitCode)
}

// The QEMU runs' default timeouts: the default plan takes about 45 s
// under TCG and about 2 min under -icount shift=0 (every instruction
// counted, a third of TCG's speed) on a 2-core machine of 2026, where a
// loaded host may take twice that.
const (
	qemuTimeout       = 2 * time.Minute
	qemuIcountTimeout = 6 * time.Minute
)

// icountTimeout gives an -icount run qemuIcountTimeout unless the command
// line fs parsed set -timeout.
func icountTimeout(fs *flag.FlagSet, opts *qemu.Options) {
	if opts.Icount && !flagGiven(fs, "timeout") {
		opts.Timeout = qemuIcountTimeout
	}
}

// flagGiven reports whether the command line set flag name of fs.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func cmdBochs(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bochs", "[flags] IMAGE.efi", stderr)
	opts := bochs.Options{Echo: qemu.PlainWriter(stdout)}
	fs.StringVar(&opts.Memory, "m", bochs.DefaultMemory, "guest RAM `size` (QEMU -m syntax)")
	fs.StringVar(&opts.CPU, "cpu", bochs.DefaultCPU, "Bochs CPU `model` (e.g. corei7_haswell_4770, broadwell_ult with SMAP, corei7_ivy_bridge_3770k, wildcat_lake with FRED and LASS)")
	fs.StringVar(&opts.Bochs, "bochs", "", "the Bochs `executable` (e.g. /usr/bin/bochs for Debian's 2.7); default $BOCHS, else the pinned build (make bochs-build)")
	fs.BoolVar(&opts.IgnoreBadMSRs, "ignore-bad-msrs", false, "let MSRs the model lacks read 0 (Bochs ignore_bad_msrs=1) instead of raising #GP")
	fs.DurationVar(&opts.Timeout, "timeout", 10*time.Minute, "kill Bochs after this `duration` (the default plan takes about a minute on the pinned build)")
	var code int
	if opts.Image, opts.Plan, code = bootFlags(fs, args, "boot plan `file`, copied to ptilab.plan on the boot disk (with end = poweroff added when it has no end line)", &opts.LogPath); code >= 0 {
		return code
	}
	res, err := bochs.Run(ctx, opts)
	return finish(fs.Output(), res, err, bochsSummary, bochs.ExitCode)
}

// bochsSummary says how a Bochs run ended, and what the image's records
// say.
func bochsSummary(res *bochs.Result) string {
	d := res.Duration.Round(100 * time.Millisecond)
	var how string
	switch status, ok := res.ImageStatus(); {
	case ok && res.Stopped:
		how = fmt.Sprintf("image ended with status %d but did not power off (its plan's end); Bochs killed after %v", status, d)
	case ok:
		how = fmt.Sprintf("image ended with status %d after %v", status, d)
	case res.TimedOut:
		how = fmt.Sprintf("timed out after %v, Bochs killed", d)
	default:
		how = fmt.Sprintf("Bochs exited with status %d after %v without the image's status", res.BochsStatus, d)
		if m := res.Message(); m != "" {
			how += ": " + m
		}
	}
	msg, _ := outcome(res.Serial)
	return res.Build.String() + ": " + how + "; " + msg
}

func cmdLog(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("log", "FILE", stderr)
	if code := parse(fs, args, 1); code >= 0 {
		return code
	}
	path := fs.Arg(0)
	serial, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "ptilab: %v\n", err)
		return exitFail
	}
	res := qemu.Serial(serial)
	recs, damaged := res.Scan()
	for _, err := range damaged {
		fmt.Fprintf(stderr, "ptilab: warning: %s: %v (record skipped)\n", path, err)
	}
	for _, r := range recs {
		fmt.Fprintf(stdout, "%s\n", r.Raw)
	}
	if end, ok := res.End(); ok {
		// The END line too, as a record of kind "end", for jq.
		f := map[string]any{"kind": "end"}
		for k, v := range end.Fields {
			if k != "kind" {
				f[k] = v
			}
		}
		b, _ := json.Marshal(f)
		fmt.Fprintf(stdout, "%s\n", b)
	}
	msg, ok := outcome(res)
	fmt.Fprintf(stderr, "ptilab: %s: %s\n", path, msg)
	switch {
	case !ok:
		return exitFail
	case len(damaged) > 0:
		return exitPartial
	}
	return exitOK
}

// summary describes how a QEMU run ended, in one line.
func summary(r *qemu.Result) string {
	d := r.Duration.Round(100 * time.Millisecond)
	var how string
	switch {
	case r.DebugExit:
		how = fmt.Sprintf("image exited with status %d after %v", r.ImageStatus, d)
	case r.TimedOut:
		how = fmt.Sprintf("timed out after %v, QEMU killed", d)
	case r.QEMUStatus == 0:
		how = fmt.Sprintf("QEMU exited after %v without the image writing the exit port (guest shutdown, reset or triple fault)", d)
	default:
		how = fmt.Sprintf("QEMU failed with status %d after %v", r.QEMUStatus, d)
		if line := firstLine(r.Stderr); line != "" {
			how += ": " + line
		}
	}
	msg, _ := outcome(r.Serial)
	return how + "; " + msg
}

// outcome describes the image's machine-readable output, in one phrase,
// and reports whether it ended with PTILAB-END status "ok".
func outcome(r qemu.Serial) (msg string, ok bool) {
	recs, damaged := r.Scan()
	var fault string
	if len(damaged) > 0 {
		fault = fmt.Sprintf("; %d damaged record lines skipped (first: %v)", len(damaged), damaged[0])
	}
	if line, found := r.Fault(); found {
		fault += "; CPU exception: " + strings.TrimPrefix(line, "PTILAB-FAULT ")
	}
	raw, found := r.End()
	if !found {
		return fmt.Sprintf("%d records, no PTILAB-END line: output cut short%s", len(recs), fault), false
	}
	end, ok := r.Ended()
	counts := ""
	if end.Checks > 0 {
		counts = fmt.Sprintf("; %d of %d checks passed", end.Passed, end.Checks)
	}
	if end.FailedBenchmarks > 0 {
		counts += fmt.Sprintf("; %d benchmarks failed", end.FailedBenchmarks)
	}
	fault = counts + fault
	if !ok || end.Status != "ok" {
		return fmt.Sprintf("%d records, PTILAB-END status %q (line %d): %s%s", len(recs), end.Status, raw.Line, raw.Raw, fault), false
	}
	var planErrs, nmis string
	if end.PlanErrors != 0 {
		planErrs = fmt.Sprintf("; %d plan lines ignored (see the plan-error records)", end.PlanErrors)
	}
	if end.NMIs != 0 {
		nmis = fmt.Sprintf("; %d NMIs counted and resumed", end.NMIs)
	}
	return fmt.Sprintf("%d records, PTILAB-END status \"ok\"%s%s%s%s", len(recs), planErrs, nmis, retention(r), fault), true
}

// retention is the TLB retention proof's answers for the run's summary
// line ("; TLB retention: pcid-noflush walked again, global kept"), empty
// when the run has none or its records do not decode.
func retention(r qemu.Serial) string {
	recs, err := r.Decoded()
	if err != nil {
		return ""
	}
	a := contract.RetentionAnswers(recs)
	if len(a) == 0 {
		return ""
	}
	return "; TLB retention: " + contract.RetentionSummary(a)
}

// firstLine returns the first line of b with surrounding blanks trimmed.
func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(line)
}
