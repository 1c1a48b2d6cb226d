package tables

import (
	"fmt"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
)

// The isolation tables: the probe (a ring-3 read of each target per
// mode) and what each mode's user table maps beyond on's.

// probePlace places a probe's read: a row per target, a column per mode,
// each cell how the read ended ("read", "#PF P=0 (error 0x4)", LASS's
// "#GP (error 0x0)", "unsupported"); a read the image did not expect is marked UNEXPECTED.
func (r *Renderer) probePlace(rec contract.Record, c config) place {
	id := fmt.Sprintf("probe%d", c.width)
	by := ""
	if e, err := experiment.ParseEntry(c.entry); err == nil && e.Row().Events {
		// The probe again by an entry that delivers the faults (FRED): a
		// table of its own.
		id += "-" + c.entry
		by = " by the " + c.entry + " entry (its faults delivered by it, not the IDT)"
	}
	addrWidth := 18
	if c.width == 32 {
		addrWidth = 12
	}
	var addr, cell string
	switch v := rec.(type) {
	case contract.Probe:
		addr, cell = v.Address, "read"
		if v.Faulted && v.ProbeFault != nil {
			cell = fmt.Sprintf("vector %d (error %#x)", v.Vector, v.ErrorCode)
			switch v.Vector {
			case 14:
				cell = fmt.Sprintf("#PF P=%d (error %#x)", b2i(v.Present), v.ErrorCode)
			case 13:
				cell = fmt.Sprintf("#GP (error %#x)", v.ErrorCode)
			}
		}
		if v.AsExpected != nil && !*v.AsExpected {
			cell += " UNEXPECTED"
		}
	case contract.Unsupported:
		addr, cell = v.Address, "unsupported"
	default:
		cell = "FAILED"
	}
	why := ""
	if v, ok := rec.(contract.Unsupported); ok {
		why = "unsupported: " + v.Reason
	}
	return place{id: id, grid: true, mode: c.mode, row: c.target, size: 1,
		cells: []string{c.target, addr, cell},
		mark: func(o *open) {
			if why == "" {
				return
			}
			ws, _ := o.data["why"].([]string)
			if !contains(ws, why) {
				o.data["why"] = append(ws, why)
			}
		},
		begin: func(t *Table, modes []string) {
			t.Name = id
			t.Title = worldTitle(c) + "isolation probe" + by + ": a ring-3 read of each address (#PF error code: P=1 protection, P=0 not mapped)"
			if contains(modes, "lass") {
				t.Title += "; under lass an upper-half address is LASS's #GP, before any page walk"
			}
			t.Columns = []Column{left("target", 14), left("address", addrWidth)}
			for _, m := range modes {
				t.Columns = append(t.Columns, left(m, 22))
			}
		},
		ref: func(o *open) []string {
			ws, _ := o.data["why"].([]string)
			return append([]string{"(Linux arch/x86/mm/pti.c: the user table maps the process and the entry area, and nothing else of the kernel)"}, ws...)
		},
	}
}

// exposurePlace places what a mode's user table maps beyond on's: a row
// per area, the mode named on its first ("nothing" for on's).
func (r *Renderer) exposurePlace(e contract.Exposure) place {
	c := configOf(e.Subject)
	id := fmt.Sprintf("exposure%d", c.width)
	p := place{id: id,
		begin: func(t *Table, _ []string) {
			t.Name = id
			t.Title = "what each mode's user table maps beyond on's (supervisor-only; the host tests walk the tables against this list):"
			t.Columns = []Column{left("mode", 17), left("area", 0)}
		},
		ref: func(*open) []string {
			return []string{"(Chartre's RFC \"x86/pti: Defer CR3 switch to C code\", 2020, was turned down for widening what the user table maps; these are the pages ptilab's deferred modes add)"}
		},
	}
	if len(e.Areas) == 0 {
		p.cells = []string{c.mode, "nothing"}
		return p
	}
	for i, a := range e.Areas {
		name := c.mode
		if i > 0 {
			name = ""
		}
		text := a.Name + ": " + a.Holds
		if a.Pages > 0 {
			text = fmt.Sprintf("%s [%s, %s) %d page(s): %s", a.Name, a.Start, a.End, a.Pages, a.Holds)
		}
		row := []string{name, text}
		if i == len(e.Areas)-1 {
			p.cells = row
		} else {
			p.before = append(p.before, row)
		}
	}
	return p
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// oraclePlace places the leak oracle's row of a mode: how ring 3's reads
// of the secret faulted (#PF with P=1 where the user table maps it, P=0
// where it does not; UNEXPECTED when not the faults expected), the faults
// recovered, the attempts per byte, and the bytes recovered or why none
// were tried. The secret and the calibration (the record before the rows)
// head the table.
func (r *Renderer) oraclePlace(rec contract.Record, c config) place {
	var cells []string
	switch v := rec.(type) {
	case contract.Oracle:
		read := fmt.Sprintf("#PF P=%d (error %#x)", b2i(v.Present), v.ErrorCode)
		if v.AsExpected != nil && !*v.AsExpected {
			read += " UNEXPECTED"
		}
		got := "not tried: " + v.Reason
		if v.Tried && v.Recovered != nil {
			got = fmt.Sprintf("%d of %d (read %s)", *v.Recovered, v.Bytes, v.Leaked)
		}
		cells = []string{read, fmt.Sprint(v.Faults), fmt.Sprint(v.Attempts), got}
	default:
		why, _ := notRun(rec)
		cells = []string{why}
	}
	oracle, _ := rec.(contract.Oracle)
	cals := r.oracleCals
	lead := []string{c.mode}
	if r.entryColumn(64) {
		// By SYSCALL (the record names no entry) and by FRED.
		entry := c.entry
		if entry == "" {
			entry = experiment.Syscall.String()
		}
		lead = append(lead, entry)
	}
	return place{id: "oracle", cells: append(lead, cells...),
		begin: func(t *Table, _ []string) {
			t.Name = "oracle"
			secret := fmt.Sprintf("%d bytes at %s", oracle.Bytes, oracle.Secret)
			if oracle.Pattern != "" {
				secret = fmt.Sprintf("%d bytes %q at %s", oracle.Bytes, oracle.Pattern, oracle.Secret)
			}
			t.Title = "leak oracle (Meltdown with Flush+Reload): ring 3 reads a kernel secret, " + secret + " (a supervisor-only page of the kernel image),"
			t.Heading = []string{"each read a page fault the kernel recovers; vulnerability table, meltdown: " + oracle.Meltdown}
			t.Heading = append(t.Heading, oracleCalibrations(cals)...)
			t.Columns = append(append([]Column{r.modeCol()}, r.entryCols(64)...), left("secret read", 22), left("faults", 8), left("attempts", 9), left("bytes recovered", 0))
		},
		ref: func(o *open) []string {
			ref := []string{"expected on a CPU with Meltdown (Ivy Bridge, Skylake without RDCL_NO): off leaks, on does not; these rows say what was tried, not what the CPU is"}
			if o.data["lass"] == true {
				ref = append(ref, "lass: LASS blocks ring 3's accesses to the upper half only; the secret is in the lower half (ptilab's kernel runs there), so lass reads it as off does")
			}
			return ref
		},
		mark: func(o *open) {
			if c.mode == "lass" {
				o.data["lass"] = true
			}
		},
	}
}

// oracleCalibrations are the lines of the oracle's calibrations: a line
// of how, then a line per mode with the timed loads' percentiles and the
// verdict; or, from a log with one calibration for every mode (no
// After), its two lines (oracleCalibration).
func oracleCalibrations(cals []contract.OracleCalibration) []string {
	if len(cals) == 0 {
		return nil
	}
	v := cals[0]
	if v.After == "" {
		return oracleCalibration(v)
	}
	timed := ""
	if v.TimedBy != "" {
		timed = ", timed by " + v.TimedBy
	}
	out := []string{fmt.Sprintf("calibration, in each mode: %d loads of a cached and of a flushed line, each after a %s (its kernel entry and exit, as the reloads follow the fault's)%s, %s: p10/p50/p90 (min-max)",
		v.Samples, v.After, timed, v.Unit)}
	for _, c := range cals {
		verdict := c.Verdict
		if c.Observable {
			verdict = fmt.Sprintf("a load of at most %d is a hit", c.Threshold)
		}
		out = append(out, fmt.Sprintf("calibration %s: hits %d/%d/%d (%d-%d), misses %d/%d/%d (%d-%d): %s",
			c.Mode, c.Hit.P10, c.Hit.P50, c.Hit.P90, c.Hit.Min, c.Hit.Max, c.Miss.P10, c.Miss.P50, c.Miss.P90, c.Miss.Min, c.Miss.Max, verdict))
	}
	return out
}

// oracleCalibration are the lines of a calibration for every mode (logs
// before the calibration per mode): the timed loads' percentiles and the
// verdict.
func oracleCalibration(v contract.OracleCalibration) []string {
	timed := ""
	if v.TimedBy != "" {
		timed = " timed by " + v.TimedBy + ","
	}
	out := []string{fmt.Sprintf("calibration: %d loads of a cached and of a flushed line,%s %s (p10/p50/p90, min-max): hits %d/%d/%d (%d-%d), misses %d/%d/%d (%d-%d)",
		v.Samples, timed, v.Unit, v.Hit.P10, v.Hit.P50, v.Hit.P90, v.Hit.Min, v.Hit.Max, v.Miss.P10, v.Miss.P50, v.Miss.P90, v.Miss.Min, v.Miss.Max)}
	if v.Observable {
		return append(out, fmt.Sprintf("calibration: %s: a load of at most %d is a hit", v.Verdict, v.Threshold))
	}
	return append(out, fmt.Sprintf("calibration: %s (the hits' p90 is not below the misses' p10); the secret is read once per byte and mode, no transient load timed", v.Verdict))
}
