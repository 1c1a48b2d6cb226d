package report

import (
	"fmt"
	"slices"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/tables"
)

// The isolation tables: what a run shows of what each mode's user table
// maps and whether ring 3 can read the kernel, rather than what it costs.
// The probe (a ring-3 read of each target per mode), the exposure lists
// (what each mode's user table maps beyond on's: package pti's Exposure)
// and the leak oracle (Meltdown with Flush+Reload, its calibration first).

// oracleTable is the leak oracle: a row per mode (how the secret's read
// faulted, the faults recovered, the attempts, and the bytes recovered or
// why none were tried), the calibration and the CPU's meltdown line as
// notes. It is no verdict on the CPU: the rows say what was tried.
func oracleTable(r *Run) Table {
	t := Table{Name: "oracle", Title: "leak oracle: ring 3 reads a kernel secret transiently (Meltdown, Flush+Reload), the page fault recovered",
		Columns:   tables.Cols("mode", "secret read", "faults", "attempts", "bytes recovered", "leaked"),
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
