package linuxrun

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/bench/taskbench"
	"github.com/ptilab/ptilab/contract"
)

// perfSyscallLoops are the getppid calls of a `perf bench syscall basic`
// round (perf's default is 10,000,000: seconds).
const perfSyscallLoops = 1_000_000

// perfProgram is the perf to run.
func (x *runner) perfProgram() string {
	if x.opts.Perf != "" {
		return x.opts.Perf
	}
	return "perf"
}

// noPerf says why the perf the run needs does not run ("" where it
// does: `perf version` answered).
func (x *runner) noPerf() string {
	if x.kernel.Perf != "" {
		return ""
	}
	if _, err := exec.LookPath(x.perfProgram()); err != nil {
		return err.Error() + " (Debian: apt-get install linux-perf)"
	}
	return x.perfProgram() + " version: no answer"
}

// perfWanted reports whether the run sets perf's benchmarks beside its
// own: plan key perf on (where there is no perf, a failure), or auto with
// perf on the PATH (else a line says there is none).
func (x *runner) perfWanted() bool {
	switch x.plan.Perf {
	case "on":
		return true
	case "auto":
		if _, err := exec.LookPath(x.perfProgram()); err != nil {
			x.rep.Printf("ptilab linux: no perf on the PATH, so no perf bench beside (Debian: apt-get install linux-perf)")
			return false
		}
		return true
	}
	return false
}

// perfPair is one of perf's benchmarks and ptilab's figure of the same
// workload: the ptilab record's key, perf's arguments, the unit, and one
// round of ptilab's (a figure in that unit).
type perfPair struct {
	key    string
	args   []string
	unit   string
	parse  func(out string) (float64, error)
	ptilab func() (float64, error)
	// why is set where perf cannot run the plan's workload.
	why string
}

// perfBeside runs perf's benchmarks and ptilab's beside them, interleaved
// (a perf run, then ptilab's, perf_rounds times), and records each pair
// and ratio (PerfBench).
func (x *runner) perfBeside(ctx context.Context) {
	for _, p := range x.perfPairs() {
		rec := contract.PerfBench{Key: p.key, Command: x.perfProgram() + " " + strings.Join(p.args, " "), Unit: p.unit, Rounds: x.plan.Rounds, Error: p.why}
		for i := 0; i < x.plan.Rounds && rec.Error == ""; i++ {
			var out []byte
			err := x.onPinned(func() (err error) {
				out, err = exec.CommandContext(ctx, x.perfProgram(), p.args...).CombinedOutput()
				return err
			})
			var v float64
			if err == nil {
				v, err = p.parse(string(out))
			}
			if err != nil {
				rec.Error = fmt.Sprintf("%v: %s", err, strings.TrimSpace(lastLine(string(out))))
				break
			}
			ours, err := p.ptilab()
			if err != nil {
				rec.Error = "ptilab: " + err.Error()
				break
			}
			rec.Perf, rec.Ptilab = append(rec.Perf, v), append(rec.Ptilab, bench.Round(ours))
		}
		if rec.Error == "" {
			rec.Ratio = bench.Round(bench.Summarize(rec.Ptilab).Median/bench.Summarize(rec.Perf).Median*1000) / 1000
		}
		x.record(rec) // its table row (package tables)
	}
}

// perfPairs are the pairs of the plan: getppid (where the plan runs null)
// and sched-messaging, processes and threads (where it runs messaging).
func (x *runner) perfPairs() []perfPair {
	var out []perfPair
	has := func(name string) bool { return slices.Contains(x.plan.Benchmarks, name) }
	if has("null") {
		out = append(out, perfPair{key: x.subject("null", "").Key(), unit: "ns",
			args:  []string{"bench", "syscall", "basic", "--loop", strconv.Itoa(perfSyscallLoops)},
			parse: perfField(`([0-9.]+) usecs/op`, 1000),
			ptilab: func() (float64, error) {
				l, err := x.timeLoop(sysGetppid, 0, 0, 0, func(uintptr) error { return nil })
				return x.clk.Ns(bench.Summarize(l.perCall).Median), err
			}})
	}
	if !has("messaging") {
		return out
	}
	p := taskbench.MessagingParamsOf(x.plan.Plan)
	for _, tasks := range taskKinds {
		s := x.subject("messaging", "")
		s.Tasks = tasks
		args := []string{"bench", "sched", "messaging", "-g", strconv.Itoa(p.Groups), "-l", strconv.Itoa(p.Loops)}
		if p.IPC == taskbench.IPCPipe {
			args = append(args, "-p")
		}
		if tasks == "threads" {
			args = append(args, "-t")
		}
		pair := perfPair{key: contract.Messaging{Subject: s, Workload: p.Workload()}.Key(), unit: "s", args: args,
			parse: perfField(`Total time: ([0-9.]+) \[sec\]`, 1),
			ptilab: func() (float64, error) {
				r, err := x.messagingRun(p, tasks == "threads")
				return x.clk.Ns(float64(r.ticks)) / 1e9, err
			}}
		if p.Size != 100 {
			pair.why = fmt.Sprintf("perf's sched-messaging sends 100-byte messages, the plan's messaging_size is %d", p.Size)
		}
		out = append(out, pair)
	}
	return out
}

// perfField returns a parser of perf's output: the number re's first
// group matches, times scale; a figure of 0 (perf prints milliseconds)
// is an error.
func perfField(re string, scale float64) func(string) (float64, error) {
	rx := regexp.MustCompile(re)
	return func(out string) (float64, error) {
		m := rx.FindStringSubmatch(out)
		if m == nil {
			return 0, fmt.Errorf("no %q in perf's output", re)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err == nil && v == 0 {
			err = fmt.Errorf("perf's figure is 0 at its precision (raise the loops)")
		}
		return v * scale, err
	}
}

// lastLine is s's last non-empty line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
