// Package bench runs ptilab's measurements and reports them: the run plan
// read from the boot volume, the result records (a human line and a
// `PTILAB {json}` line each) and the final `PTILAB-END {json}` line.
package bench

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/board"
)

// PlanFile is the plan's path on the boot volume.
const PlanFile = "/ptilab.plan"

// Plan is what a run does. The zero plan is not valid: start from
// DefaultPlan.
type Plan struct {
	// Fault triggers a deliberate CPU exception after the machine line:
	// "pf" (a read of page 0, never mapped) or "gp" (a read of a
	// non-canonical address) in Go code, which continues as a Go panic
	// with a traceback; "kernel-pf" and "kernel-gp" do the same in kernel
	// mode (in the system-call handler), which ends the run at once.
	// Empty: none.
	Fault string
	// End is how a PC ends the run (under QEMU the debug-exit device ends
	// it whatever this says).
	End board.EndAction
	// Screen selects whether the console is also drawn on the displays.
	Screen bool
}

// DefaultPlan is the plan without a plan file.
func DefaultPlan() Plan {
	return Plan{End: board.EndAuto, Screen: true}
}

// PlanError is a line of the plan file that could not be used; the run
// goes on with the default for that key.
type PlanError struct {
	Line int    // 1-based line number
	Text string // the line as written
	Err  string // what is wrong with it
}

func (e PlanError) Error() string {
	return fmt.Sprintf("plan line %d %q: %s", e.Line, e.Text, e.Err)
}

// planKeys lists the keys a plan may set, each with its parser.
var planKeys = map[string]func(p *Plan, v string) error{
	"fault": func(p *Plan, v string) error {
		switch v {
		case "none":
			p.Fault = ""
		case "pf", "gp", "kernel-pf", "kernel-gp":
			p.Fault = v
		default:
			return fmt.Errorf("fault must be none, pf, gp, kernel-pf or kernel-gp")
		}
		return nil
	},
	"end": func(p *Plan, v string) error {
		a, ok := map[string]board.EndAction{
			"auto": board.EndAuto, "return": board.EndReturn,
			"poweroff": board.EndPowerOff, "reset": board.EndReset,
		}[v]
		if !ok {
			return fmt.Errorf("end must be auto, return, poweroff or reset")
		}
		p.End = a
		return nil
	},
	"screen": func(p *Plan, v string) error {
		switch v {
		case "on":
			p.Screen = true
		case "off":
			p.Screen = false
		default:
			return fmt.Errorf("screen must be on or off")
		}
		return nil
	},
}

// ParsePlan reads a plan file: one `key = value` per line; '#' starts a
// comment that runs to the end of the line, and blank lines are ignored. It returns the plan, starting from
// DefaultPlan, and one PlanError per line it could not use (unknown key,
// missing '=', bad value, key given twice): that key keeps its default or
// earlier value.
func ParsePlan(data []byte) (Plan, []PlanError) {
	p := DefaultPlan()
	var errs []PlanError
	seen := map[string]int{}
	for i, raw := range bytes.Split(data, []byte("\n")) {
		text := strings.TrimRight(string(raw), "\r")
		line, _, _ := strings.Cut(text, "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		fail := func(msg string) { errs = append(errs, PlanError{i + 1, text, msg}) }
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			fail("expected key = value")
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		set, known := planKeys[key]
		if !known {
			fail(fmt.Sprintf("unknown key %q", key))
			continue
		}
		if prev, dup := seen[key]; dup {
			fail(fmt.Sprintf("%s already set on line %d", key, prev))
			continue
		}
		if err := set(&p, val); err != nil {
			fail(err.Error())
			continue
		}
		seen[key] = i + 1
	}
	return p, errs
}
