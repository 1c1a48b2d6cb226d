package linuxrun

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ptilab/ptilab/bench"
	_ "github.com/ptilab/ptilab/bench/all" // the families' plan keys
)

// Benchmarks are the plan names `ptilab linux` runs, in the image's
// default plan's order; a plan's other benchmarks are the bare-metal
// image's alone, and the runner says so.
var Benchmarks = []string{"null", "lseek", "pingpong", "messaging"}

// Plan is what a Linux run does: the image's plan (bench.Plan: its
// benchmarks, n, r, warmup, pingpong_n and the messaging_ keys, with the
// image's defaults) and the keys only a Linux run has.
type Plan struct {
	bench.Plan
	// CPU is the CPU the timed loops and the workers are pinned to (key
	// cpu: none or a CPU number), -1 for none: the scheduler's choice, as
	// perf bench's.
	CPU int
	// Perf runs perf's own benchmarks beside ptilab's (key perf: on,
	// off or auto, auto: where perf is on the PATH); Rounds is how many
	// times each pair runs, interleaved (key perf_rounds).
	Perf   string
	Rounds int
	// Ignored are the plan's keys that a booted kernel cannot honour or
	// that only the image reads, each with its line, said once.
	Ignored []string
}

// linuxKeys are the keys of Linux runs alone: the image's plan check
// refuses them.
var linuxKeys = map[string]func(p *Plan, v string) error{
	"cpu": func(p *Plan, v string) error {
		if v == "none" {
			p.CPU = -1
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 4095 {
			return fmt.Errorf("cpu must be none or a CPU number from 0 to 4095")
		}
		p.CPU = n
		return nil
	},
	"perf": func(p *Plan, v string) error {
		if v != "on" && v != "off" && v != "auto" {
			return fmt.Errorf("perf must be on, off or auto")
		}
		p.Perf = v
		return nil
	},
	"perf_rounds": func(p *Plan, v string) (err error) {
		p.Rounds, err = bench.IntIn(v, "perf_rounds", 1, 20)
		return err
	},
}

// imageOnly are the image's keys that a Linux run reads but cannot
// follow, with what it does instead.
var imageOnly = map[string]string{
	"modes":    "a booted kernel's isolation cannot change: the kernel is measured as it is",
	"flavours": "the kernel's own entry is measured (flavour linux)",
	"global":   "the kernel's global pages are as it maps them",
	"entries":  "the 64-bit rows enter by SYSCALL, the compat rows by INT 0x80 and __kernel_vsyscall",
}

// linuxReads are the image's keys a Linux run uses; every other key the
// image takes is the bare-metal run's alone (fault, end, pstate, the TLB
// and ladder families' keys...), noted with its line and skipped.
var linuxReads = []string{"benchmarks", "n", "r", "warmup", "pingpong_n", "messaging_groups", "messaging_loops",
	"messaging_size", "messaging_ipc", "pmu", "pmu_events"}

// ParsePlan reads a plan file as the image does (bench.ParsePlan: every
// line the image takes means the same here) plus the Linux keys, and
// returns the plan, starting from the defaults (the image's, benchmarks
// null, lseek, pingpong and messaging, perf auto, 3 rounds, unpinned),
// and an error per line it could not use, with its number.
func ParsePlan(data []byte) (Plan, []bench.PlanError) {
	lines := bytes.Split(data, []byte("\n"))
	p := Plan{CPU: -1, Perf: "auto", Rounds: 3}
	var errs []bench.PlanError
	seen := map[string]int{}
	for i, raw := range lines {
		text := strings.TrimRight(string(raw), "\r")
		line, _, _ := strings.Cut(text, "#")
		key, val, ok := strings.Cut(line, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		set := linuxKeys[key]
		if !ok || set == nil {
			switch why, follows := imageOnly[key]; {
			case !ok || slices.Contains(linuxReads, key) || !slices.Contains(bench.PlanKeys(), key):
			case follows:
				p.Ignored = append(p.Ignored, fmt.Sprintf("plan line %d: %s: %s", i+1, key, why))
			default:
				p.Ignored = append(p.Ignored, fmt.Sprintf("plan line %d: %s: the bare-metal image's alone, skipped", i+1, key))
			}
			continue
		}
		lines[i] = nil // the image's parser skips it as blank
		switch prev, dup := seen[key]; {
		case dup:
			errs = append(errs, bench.PlanError{Line: i + 1, Text: text, Err: fmt.Sprintf("%s already set on line %d", key, prev), Kept: prev})
		default:
			if err := set(&p, val); err != nil {
				errs = append(errs, bench.PlanError{Line: i + 1, Text: text, Err: err.Error()})
				continue
			}
			seen[key] = i + 1
		}
	}
	var imageErrs []bench.PlanError
	p.Plan, imageErrs = bench.ParsePlan(bytes.Join(lines, []byte("\n")))
	errs = append(errs, imageErrs...)
	line, text := lineOf(data, "benchmarks")
	if line == 0 {
		p.Benchmarks = Benchmarks
	}
	var runs, left []string
	for _, b := range p.Benchmarks {
		if slices.Contains(Benchmarks, b) {
			runs = append(runs, b)
		} else {
			left = append(left, b)
		}
	}
	if len(left) > 0 {
		p.Ignored = append(p.Ignored, fmt.Sprintf("plan line %d: benchmarks %s: the bare-metal image's alone, skipped", line, strings.Join(left, ", ")))
	}
	if p.Benchmarks = runs; line > 0 && len(runs) == 0 && len(left) > 0 {
		errs = append(errs, bench.PlanError{Line: line, Text: text, Err: "names no benchmark a Linux run has (" + strings.Join(Benchmarks, ", ") + ")"})
	}
	if l, t := lineOf(data, "cpu"); l > 0 {
		if err := checkCPU(p.CPU); err != nil {
			errs = append(errs, bench.PlanError{Line: l, Text: t, Err: err.Error()})
		}
	}
	slices.SortStableFunc(errs, func(a, b bench.PlanError) int { return a.Line - b.Line })
	return p, errs
}

// lineOf returns the number and text of the plan's (first) line setting
// key, 0 for none.
func lineOf(data []byte, key string) (int, string) {
	for i, raw := range bytes.Split(data, []byte("\n")) {
		text := strings.TrimRight(string(raw), "\r")
		line, _, _ := strings.Cut(text, "#")
		if k, _, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == key {
			return i + 1, text
		}
	}
	return 0, ""
}
