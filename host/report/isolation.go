package report

import (
	"fmt"
	"slices"

	"github.com/ptilab/ptilab/contract"
)

// The isolation tables: what a run shows of what each mode's user table
// maps and whether ring 3 can read the kernel, rather than what it costs.
// The probe (a ring-3 read of each target per mode), the exposure lists
// (what each mode's user table maps beyond on's: package pti's Exposure)
// and the leak oracle (Meltdown with Flush+Reload, its calibration first).

// probeTable is the isolation probe: a row per world and target, a column
// per mode, each cell how the ring-3 read ended ("read", "#PF P=0 (error
// 0x4)", or why it did not run); a read that ended otherwise than the
// probe expected is marked "!".
func probeTable(r *Run) Table {
	t := Table{Name: "probe", Title: "isolation probe: a ring-3 read of each target (#PF error code: P=1 protection, P=0 not mapped)",
		Reference: []string{"(Linux arch/x86/mm/pti.c: the user table maps the process and the entry area, and nothing else of the kernel)"}}
	var modes []string
	type key struct {
		width        int
		target, addr string
	}
	var keys []key
	cells := map[key]map[string]string{}
	cell := func(s contract.Subject, addr, text string) {
		if !slices.Contains(modes, s.Mode) {
			modes = append(modes, s.Mode)
		}
		k := key{s.Width, s.Target, addr}
		if cells[k] == nil {
			cells[k] = map[string]string{}
			keys = append(keys, k)
		}
		cells[k][s.Mode] = text
	}
	for _, rec := range r.Records {
		switch v := rec.Record.(type) {
		case contract.Probe:
			text := "read"
			if v.Faulted && v.ProbeFault != nil {
				text = fmt.Sprintf("vector %d (error %#x)", v.Vector, v.ErrorCode)
				if v.Vector == 14 {
					text = fmt.Sprintf("#PF P=%d (error %#x)", b2i(v.Present), v.ErrorCode)
				}
			}
			if v.AsExpected != nil && !*v.AsExpected {
				text += " !"
			}
			cell(v.Subject, v.Address, text)
		case contract.Unsupported:
			if v.Bench == "probe" {
				cell(v.Subject, v.Address, "unsupported")
				t.note(Measurement{NotRun: "unsupported", Why: v.Reason})
			}
		}
	}
	t.Columns = append([]string{"world", "target", "address"}, modes...)
	for _, k := range keys {
		row := []string{fmt.Sprintf("%d-bit", k.width), k.target, k.addr}
		for _, m := range modes {
			row = append(row, orDash(cells[k][m]))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// exposureTable is what each mode's user table maps beyond on's: a row
// per area (off: the whole kernel, supervisor-only; on: nothing).
func exposureTable(r *Run) Table {
	t := Table{Name: "exposure", Title: "what each mode's user table maps beyond on's (supervisor-only pages; the host tests walk the tables against these lists)",
		Columns:   []string{"mode", "area", "range", "pages", "holds"},
		Reference: []string{"(Chartre's RFC \"x86/pti: Defer CR3 switch to C code\", 2020, was turned down for widening what the user table maps; these are the pages ptilab's deferred modes add)"}}
	for _, rec := range r.Records {
		e, ok := rec.Record.(contract.Exposure)
		if !ok {
			continue
		}
		if len(e.Areas) == 0 {
			t.Rows = append(t.Rows, []string{e.Mode, "nothing", "-", "0", "-"})
		}
		for _, a := range e.Areas {
			rng := "-"
			if a.Start != "" {
				rng = "[" + a.Start + ", " + a.End + ")"
			}
			t.Rows = append(t.Rows, []string{e.Mode, a.Name, rng, fmt.Sprint(a.Pages), a.Holds})
		}
	}
	return t
}

// oracleTable is the leak oracle: a row per mode (how the secret's read
// faulted, the faults recovered, the attempts, and the bytes recovered or
// why none were tried), the calibration and the CPU's meltdown line as
// notes. It is no verdict on the CPU: the rows say what was tried.
func oracleTable(r *Run) Table {
	t := Table{Name: "oracle", Title: "leak oracle: ring 3 reads a kernel secret transiently (Meltdown, Flush+Reload), the page fault recovered",
		Columns:   []string{"mode", "secret read", "faults", "attempts", "bytes recovered", "leaked"},
		Reference: []string{"(Lipp et al., \"Meltdown\", USENIX Security 2018: off leaks on an affected CPU, on does not; the emulators have no cache timing to observe)"}}
	for _, rec := range r.Records {
		switch v := rec.Record.(type) {
		case contract.OracleCalibration:
			t.Notes = append(t.Notes, fmt.Sprintf("calibration (%s, %d samples): hits p10/p50/p90 %d/%d/%d, misses %d/%d/%d: %s",
				unitName(v.Unit), v.Samples, v.Hit.P10, v.Hit.P50, v.Hit.P90, v.Miss.P10, v.Miss.P50, v.Miss.P90, v.Verdict))
		case contract.Oracle:
			read := fmt.Sprintf("#PF P=%d (error %#x)", b2i(v.Present), v.ErrorCode)
			if v.AsExpected != nil && !*v.AsExpected {
				read += " !"
			}
			got, leaked := "not tried", "-"
			if v.Tried && v.Recovered != nil {
				got, leaked = fmt.Sprintf("%d of %d", *v.Recovered, v.Bytes), orDash(v.Leaked)
			} else if v.Reason != "" {
				got = "not tried: " + v.Reason
			}
			t.Rows = append(t.Rows, []string{v.Mode, read, fmt.Sprint(v.Faults), fmt.Sprint(v.Attempts), got, leaked})
			if note := "meltdown (the CPU's vulnerability table, as Linux would print it): " + v.Meltdown; v.Meltdown != "" && !slices.Contains(t.Notes, note) {
				t.Notes = append(t.Notes, note)
			}
		case contract.Unsupported:
			if v.Bench == "oracle" {
				t.Rows = append(t.Rows, append([]string{v.Mode}, notRunRow(&t, Measurement{NotRun: "unsupported", Why: v.Reason}, 5)...))
			}
		}
	}
	return t
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
