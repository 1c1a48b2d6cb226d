package tables

import (
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/contract"
)

// The TLB tables: the working-set sweep (a table per kind), the flush
// operations' costs and the retention probes' answers.

// sweepPlace places a point of the TLB sweep: a row per global setting,
// point (pages touched per call) and mode: units per call plus its
// touches, the spread, median, minimum, ns per call, PTI's extra over off
// at the same point (the record's), the ratio to off and the core-clock
// cells. What the sweep touched heads the table, from its first record.
func (r *Renderer) sweepPlace(rec contract.Record, c config) place {
	id := "tlbsweep-" + strings.ReplaceAll(c.target, " ", "-")
	pmu := r.tablePMU(id)
	pages := "-"
	if c.pages != nil {
		pages = fmt.Sprint(*c.pages)
	}
	cells := func() []string {
		v := rec.(contract.TLBSweep)
		extra := "-"
		if v.ExtraVsOff != nil {
			extra = fmt.Sprintf("%+.1f", *v.ExtraVsOff)
		}
		return append([]string{f1(v.Mean), spread(&v.Stats, v.R), f1(v.Median), f1(v.Min), nsCell(v.Subject, v.NsPerCall), extra, ratioCell(v.RatioToOff)},
			coreCells(&v.Core, v.R, pmu)...)
	}
	n, reps, warmup := sizes(rec)
	sw, measured := rec.(contract.TLBSweep)
	return place{id: id, cells: append([]string{yn(c.global), pages, c.mode}, figures(rec, cells)...),
		begin: func(t *Table, _ []string) {
			call, who := "getppid call", "ring 3 touches, between calls,"
			if sw.Side == "kernel" || strings.HasPrefix(c.target, "kernel") {
				call, who = "touch call (ptilab's, kernel text)", "the call touches, in ring 0,"
			}
			t.Name = id
			t.Title = fmt.Sprintf("TLB working-set sweep, %s: per %s plus its touches: %s; empty-loop overhead subtracted (not the touches)", c.target, call, repeatsOf(reps, n, warmup, "call", "calls"))
			if measured {
				t.Heading = append(t.Heading, fmt.Sprintf("%s N of %d %s virtual pages from %s, %d bytes apart, all mapped onto %s of %d KiB; %s read per page at %s",
					who, sw.VirtualPages, pageName(sw.PageBytes), sw.Region, sw.Stride, plural(sw.Frames, "frame", "frames"), sw.FrameBytes>>10,
					plural(sw.BytesPerTouch, "byte", "bytes"), sw.Offset))
			}
			t.Heading = append(t.Heading, fmt.Sprintf("%s; ± as perf stat --repeat; extra: the mode's %s less off's at the same N; global: the entry area and the kernel text as global pages (the swept pages never are); %s",
				r.unitNote(), r.perCall(), r.clockHeader()), r.countersNote())
			t.Columns = append([]Column{left("global", 6), right("N", 6), r.modeCol(), right(r.perCall(), 12), right("±%", 7), right("median", 12),
				right("min", 12), right("ns/call", 10), right("extra", 10), right("vs off", 7)}, coreCols(pmu)...)
		},
		ref: func(*open) []string {
			const none = "(no reference figure: lmbench's lat_ctx -s and Gregg's sweep measured whole context switches"
			if strings.HasPrefix(c.target, "kernel") {
				return []string{none + ")"}
			}
			return []string{none + "; expected on hardware: without PCID the extra grows with N, with PCID it stays nearly flat; the emulators flush on every CR3 write)"}
		},
	}
}

// pageName names a page size in headings.
func pageName(bytes uint64) string {
	if bytes >= 1<<20 {
		return fmt.Sprintf("%d MiB", bytes>>20)
	}
	return fmt.Sprintf("%d KiB", bytes>>10)
}

// flushCostPlace places a flush operation's row: units per operation
// (the empty loop subtracted), the spread, median, minimum and ns per
// operation, or why it did not run.
func (r *Renderer) flushCostPlace(rec contract.Record, c config) place {
	var op, empty string
	var cells []string
	switch v := rec.(type) {
	case contract.FlushCost:
		op = orText(v.Operation, v.Target)
		empty = fmt.Sprintf(" (%.1f per iteration)", v.EmptyLoopCycles)
		pct, ns := "-", "-"
		if v.PerfPct != nil {
			pct = fmt.Sprintf("%.1f%%", *v.PerfPct)
		}
		if v.TSCHz != 0 {
			ns = nsCell(v.Subject, v.PerOp.Mean*1e9/float64(v.TSCHz))
		}
		cells = []string{f1(v.PerOp.Mean), pct, f1(v.PerOp.Median), f1(v.PerOp.Min), ns}
	case contract.Unsupported:
		op = orText(v.Operation, v.Target)
		cells = []string{"unsupported: " + v.Reason}
	case contract.Error:
		op = c.target
		cells = []string{"FAILED: " + v.Error}
	}
	n, reps, warmup := flushSizes(rec)
	return place{id: "flushcost", cells: append([]string{op}, cells...),
		begin: func(t *Table, _ []string) {
			t.Name = "flushcost"
			t.Title = fmt.Sprintf("TLB flush costs in ring 0, interrupts masked, per operation: %s, empty-loop overhead%s subtracted; %s",
				repeatsOf(reps, n, warmup, "operation", "operations"), empty, r.unitNote())
			t.Heading = []string{r.clockHeader() + "; the Go kernel's table, PCID 0; INVLPG and INVPCID type 0 name a mapped page the loop never touches, which the TLB does not hold; \"load + INVLPG\" loads a byte from its own page before each INVLPG, so that it drops a live translation (the load's page walk is in its figure)"}
			t.Columns = []Column{left("operation", 40), right(r.counted("insns/op", "tsc/op"), 10), right("+-", 7), right("median", 10), right("min", 10), right("ns/op", 10)}
		},
		ref: func(*open) []string {
			return []string{"(reference: Linux's Documentation/arch/x86/pti.rst puts a CR3 write \"on the order of a hundred cycles\")"}
		},
	}
}

// flushSizes are a flush-cost record's operations per repeat, measured
// repeats and warm-up repeats.
func flushSizes(rec contract.Record) (n, reps, warmup int) {
	if v, ok := rec.(contract.FlushCost); ok {
		return v.N, v.R, v.Warmup
	}
	return sizes(rec)
}

// retentionPlace places a retention probe's answer: the probe, its mode
// and global setting, the page's address, the three CR3 values and what
// the second read saw (kept: frame A, walked again: frame B), or why it
// did not run.
func (r *Renderer) retentionPlace(rec contract.Record, c config) place {
	var addr string
	var cells []string
	switch v := rec.(type) {
	case contract.Retention:
		addr = v.Address
		frame := "A"
		if v.Result == "walked again" {
			frame = "B"
		}
		cells = []string{v.First, v.Away, v.Back, fmt.Sprintf("%s (frame %s)", v.Result, frame)}
	case contract.Unsupported:
		addr = v.Address
		cells = []string{"unsupported: " + v.Reason}
	case contract.Error:
		cells = []string{"FAILED: " + v.Error}
	}
	global := "nonglobal"
	if c.global {
		global = "global"
	}
	return place{id: "retention", cells: append([]string{c.target, c.mode + "/" + global, addr}, cells...),
		begin: func(t *Table, _ []string) {
			t.Name = "retention"
			t.Title = "TLB retention: a user page read in ring 0, its PTE pointed at another frame without invalidation"
			t.Heading = []string{"between two CR3 writes, then read again (SDM Vol. 3A 4.10.2.4, 4.10.4.1): kept = frame A, walked again = frame B"}
			t.Columns = []Column{left("probe", 13), left("mode", 17), left("address", 14), left("first CR3", 20), left("away CR3", 20), left("back CR3", 20), left("second read", 0)}
		},
		ref: func(*open) []string {
			return []string{"(NOFLUSH and the G bit permit keeping a translation, they do not promise it; QEMU TCG walks again for both, Bochs keeps a global entry and walks again with PCIDs)"}
		},
	}
}
