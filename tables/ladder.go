package tables

import (
	"fmt"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/reference"
)

// The mitigation ladder's tables (bench "ladder", "ladder32"): the null
// call's and the ping-pong's between processes, a row per rung under each
// mode, in the order the image measured them: the rung's part, its knobs
// (or the linux flavour), its increment over the rung named in "over",
// and its figures. A rung's row is its measurement record (syscall or
// pingpong, its ratio to none in RatioToOff) and its ladder record; a
// rung that did not run is its unsupported or error record, which
// carries the part and what it is over.

// ladderPlace places a record of a ladder's rung.
func (r *Renderer) ladderPlace(rec contract.Record, c config) place {
	pp := c.tasks != ""
	id := fmt.Sprintf("ladder%d", c.width)
	if pp {
		id = fmt.Sprintf("ladder-pingpong%d", c.width)
	}
	pmu := r.tablePMU(id)
	rung := c.mitig
	if rung == "" {
		rung = c.flavour + " flavour"
	}
	n := 6
	if pp {
		n = 5
	}
	n += len(coreCols(pmu))
	p := place{id: id, row: rowKey(c, c.mode, c.tasks, c.flavour, c.mitig), size: 5 + n, lead: []string{c.mode},
		begin: func(t *Table, _ []string) { r.ladderBegin(t, rec, c, id, pmu) },
		ref: func(o *open) []string {
			if c.width == 64 && !pp {
				return reference.Ladder()
			}
			return nil
		},
	}
	switch v := rec.(type) {
	case contract.Ladder:
		inc := "-"
		if v.Increment != nil {
			inc = fmt.Sprintf("%+.1f", *v.Increment)
		}
		p.at, p.cells = 1, []string{v.Part, rung, inc, v.Over}
		p.mark = func(o *open) {
			if v.Sites > 0 {
				o.data["sites"] = v.Sites
			}
		}
	case contract.Syscall:
		p.at, p.cells = 5, append([]string{f1(v.Mean), spread(&v.Stats, v.R), f1(v.Median), f1(v.Min), nsCell(v.Subject, v.NsPerCall), ratioCell(v.RatioToOff)},
			coreCells(&v.Core, v.R, pmu)...)
	case contract.PingPong:
		cr3 := "-"
		if v.RoundTrips > 0 {
			cr3 = fmt.Sprintf("%.2f", float64(v.CR3Loads)/float64(v.RoundTrips))
		}
		p.at, p.cells = 5, append([]string{f1(v.Mean), spread(&v.Stats, v.R), nsCell(v.Subject, v.NsPerRoundTrip), ratioCell(v.RatioToOff), cr3},
			coreCells(&v.Core, v.R, pmu)...)
	default:
		// A rung that did not run: a row of its own.
		part, over := "-", "-"
		if rg := rungOf(rec); rg != nil {
			part, over = rg.Part, orText(rg.Over, "-")
		}
		why, _ := notRun(rec)
		p.row, p.lead, p.cells = "", nil, []string{c.mode, part, rung, "-", over, why}
	}
	return p
}

// rungOf is the ladder rung an unsupported or error record carries.
func rungOf(rec contract.Record) *contract.Rung {
	switch v := rec.(type) {
	case contract.Unsupported:
		return v.Rung
	case contract.Error:
		return v.Rung
	}
	return nil
}

// ladderBegin heads a ladder's table (id), from its first record rec.
func (r *Renderer) ladderBegin(t *Table, rec contract.Record, c config, id string, pmu pmuCols) {
	n, reps, warmup := sizes(rec)
	unit := r.unit(statsOf(rec))
	t.Name = id
	t.Columns = []Column{r.modeCol(), left("part", 8), left("rung", 36), right("+"+unit, 10), left("over", 26)}
	if c.tasks != "" {
		t.Title = fmt.Sprintf("%sladder: ping-pong between two processes, per round trip (two context switches, each to another process: a CR3 load, an IBPB with ibpb, an RSB stuffing with rsb): %s; %s",
			worldTitle(c), repeatsOf(reps, n, warmup, "round trip", "round trips"), r.unitNote())
		t.Columns = append(append(t.Columns, right("processes", 12), right("±%", 7), right("ns", 9), right("vs none", 7), right("CR3/rt", 7)), coreCols(pmu)...)
		return
	}
	sites := "the disabled sites"
	if o := r.open; o != nil && o.id == id {
		if s, ok := o.data["sites"].(int); ok {
			sites = fmt.Sprintf("the %d disabled sites", s)
		}
	}
	t.Title = fmt.Sprintf("%sladder: null system call (getppid), per call: %s; %s; %s", worldTitle(c), repeatsOf(reps, n, warmup, "call", "calls"), r.unitNote(), r.clockHeader())
	t.Heading = []string{r.countersNote(),
		"each rung's cost is its increment over the rung named in \"over\": a knob alone over none, a stacked rung over the line below it, none over the linux flavour (" +
			sites + " of the null path: a TEST and a taken JE each); ibpb and rsb act only in context switches (the ping-pong table)"}
	t.Columns = append(append(t.Columns, right(r.perCall(), 12), right("±%", 7), right("median", 12), right("min", 12), right("ns/call", 10), right("vs none", 7)), coreCols(pmu)...)
}
