package tables

import (
	"fmt"
	"strings"

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
			if why != "" {
				noteOnce(o, "why", why)
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
			ref := []string{"(Linux arch/x86/mm/pti.c: the user table maps the process and the entry area, and nothing else of the kernel)"}
			if asi := nonsensitiveModes(o.modes); len(asi) > 0 {
				ref = append(ref, strings.Join(asi, ", ")+": ring 3 runs on the nonsensitive table, which maps the kernel supervisor-only but the sensitive blocks (user data): the kernel's own pages are present, as under off, a sensitive page is not, as under on")
			}
			return append(ref, ws...)
		},
	}
}

// nonsensitiveModes are the modes among modes whose user table is ASI's
// nonsensitive kernel table (experiment.ExposesNonsensitiveKernel).
func nonsensitiveModes(modes []string) []string {
	var out []string
	for _, name := range modes {
		if m, _, err := experiment.ParseModeName(name); err == nil && m.Row().Exposes&experiment.ExposesNonsensitiveKernel != 0 {
			out = append(out, name)
		}
	}
	return out
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
		ref: func(o *open) []string {
			ref := []string{"(Chartre's RFC \"x86/pti: Defer CR3 switch to C code\", 2020, was turned down for widening what the user table maps; these are the pages ptilab's deferred modes add)"}
			if asi, _ := o.data["asi"].([]string); len(asi) > 0 {
				ref = append(ref, "("+strings.Join(asi, ", ")+": ASI, linuxasi.dev, keeps user data out of the kernel's nonsensitive address space, not the kernel out of ring 3's: the kernel's own data (the leak oracle's kernel secret among it) stays mapped supervisor-only, as under off)")
			}
			return ref
		},
		mark: func(o *open) {
			if len(nonsensitiveModes([]string{c.mode})) > 0 {
				noteOnce(o, "asi", c.mode)
			}
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
	oracle, measured := rec.(contract.Oracle)
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
	secret := fmt.Sprintf("%d bytes at %s", oracle.Bytes, oracle.Secret)
	switch {
	case !measured:
		secret = "its bytes" // a table whose first row did not run
	case oracle.Pattern != "":
		secret = fmt.Sprintf("%d bytes %q at %s", oracle.Bytes, oracle.Pattern, oracle.Secret)
	}
	columns := func(t *Table) {
		t.Columns = append(append([]Column{r.modeCol()}, r.entryCols(64)...), left("secret read", 22), left("faults", 8), left("attempts", 9), left("bytes recovered", 0))
	}
	if c.target == "sensitive" {
		return r.oracleSensitivePlace(rec, c, append(lead, cells...), secret, oracle.Meltdown, columns)
	}
	return place{id: "oracle", cells: append(lead, cells...),
		begin: func(t *Table, _ []string) {
			t.Name = "oracle"
			t.Title = "leak oracle (Meltdown with Flush+Reload): ring 3 reads a kernel secret, " + secret + " (a supervisor-only page of the kernel image),"
			t.Heading = []string{"each read a page fault the kernel recovers; vulnerability table, meltdown: " + oracle.Meltdown}
			t.Heading = append(t.Heading, oracleCalibrations(cals)...)
			columns(t)
		},
		ref: func(o *open) []string {
			ref := []string{"expected on a CPU with Meltdown (Ivy Bridge, Skylake without RDCL_NO): off leaks, on does not; these rows say what was tried, not what the CPU is"}
			if o.data["lass"] == true {
				ref = append(ref, "lass: LASS blocks ring 3's accesses to the upper half only; the secret is in the lower half (ptilab's kernel runs there), so lass reads it as off does")
			}
			if ms, _ := o.data["mapped"].([]string); len(ms) > 0 {
				ref = append(ref, strings.Join(ms, ", ")+": isolated, yet the secret read faults with P=1: the secret is nonsensitive kernel data, which ring 3's table (the nonsensitive one) maps supervisor-only as off's does, so a CPU with Meltdown can leak it as under off")
			}
			return ref
		},
		mark: func(o *open) {
			if c.mode == "lass" {
				o.data["lass"] = true
			}
			if v, ok := rec.(contract.Oracle); ok && v.Present && c.ok && c.cfg.Mode.Isolated() {
				noteOnce(o, "mapped", c.mode)
			}
		},
	}
}

// oracleSensitivePlace places the leak oracle's row of its sensitive
// secret (a frame of ASI's sensitive blocks, read in the modes whose user
// table maps it otherwise than the kernel secret): a table of its own
// after the kernel secret's, whose lines under it say, from each row's P
// bit, whether ring 3's table maps the secret.
func (r *Renderer) oracleSensitivePlace(rec contract.Record, c config, cells []string, secret, meltdown string, columns func(*Table)) place {
	return place{id: "oracle-sensitive", cells: cells,
		begin: func(t *Table, _ []string) {
			t.Name = "oracle-sensitive"
			t.Title = "leak oracle, its sensitive secret: ring 3 reads " + secret + " (a frame of ASI's sensitive blocks: user data, supervisor-only in the kernel's direct map),"
			t.Heading = []string{"in the modes whose user table maps it otherwise than the kernel secret; each read a page fault the kernel recovers, the thresholds from the calibrations above; vulnerability table, meltdown: " + meltdown}
			columns(t)
		},
		ref: func(o *open) []string {
			ref := []string{"these rows say what was tried, not what the CPU is"}
			if ms, _ := o.data["absent"].([]string); len(ms) > 0 {
				ref = append(ref, strings.Join(ms, ", ")+": ring 3's table does not map the secret (P=0): a Meltdown read has no translation to it, so it cannot leak it this way on any CPU, though the secret call has just read it in the kernel")
			}
			if ms, _ := o.data["mapped"].([]string); len(ms) > 0 {
				ref = append(ref, strings.Join(ms, ", ")+": ring 3's table maps the secret supervisor-only (P=1): a CPU with Meltdown can leak it")
			}
			return ref
		},
		mark: func(o *open) {
			v, ok := rec.(contract.Oracle)
			if !ok {
				return
			}
			key := "absent"
			if v.Present {
				key = "mapped"
			}
			noteOnce(o, key, c.mode)
		},
	}
}

// noteOnce adds s to the list under key in o's table state, unless it is
// there.
func noteOnce(o *open, key, s string) {
	ss, _ := o.data[key].([]string)
	if !contains(ss, s) {
		o.data[key] = append(ss, s)
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
