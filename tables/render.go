package tables

import (
	"strings"

	"github.com/ptilab/ptilab/contract"
)

// Renderer turns records into tables as they come (Add), for a Sink.
// Rows that compare with a baseline (the global-page gain over the same
// configuration without global pages) use the records already seen; a
// row whose baseline comes later says "-" there. Most baselines travel
// in the record itself (Stats.RatioToOff, TLBSweep.ExtraVsOff,
// Ladder.Increment).
type Renderer struct {
	sink   Sink
	timing *contract.Timing
	cpu    *contract.CPUState
	// linux is the kernel of a `ptilab linux` run (nil for the image's):
	// its figures carry no ring-0 counts, and its compat rows are 32-bit
	// programs on the 64-bit kernel.
	linux *contract.Linux
	// core is the core-clock state of the last measured figure: what the
	// counters heading and the PMU columns say.
	core *contract.Core
	// seen are the measured figures so far, by configuration key, for
	// baselines.
	seen map[string]contract.Record
	open *open
	// defaultCopy is the pt_regs copy of each world's null table (its
	// first linux row's); a row with another is the copy methods'.
	defaultCopy map[int]string
	// wl is the last sched-messaging record's shape.
	wl contract.Workload
	// oracleCals are the leak oracle's calibrations (one per mode; one in
	// all in logs before that), which head its table.
	oracleCals []contract.OracleCalibration
}

// open is the table being rendered and its pending row.
type open struct {
	id     string
	t      Table
	begin  func(*Table, []string)
	ref    func(*open) []string
	begun  bool
	pmu    pmuCols  // the PMU columns shown
	modes  []string // a grid's columns; every mode seen otherwise
	grid   bool
	rowKey string
	row    []string
	filled []bool
	notes  []string
	// first holds a grid's first row until it is complete (its columns
	// are the modes it has).
	first map[string][]string
	lead  []string
	data  map[string]any // a table's own state (the copy table's reused rows)
}

// New returns a Renderer writing to sink.
func New(sink Sink) *Renderer {
	return &Renderer{sink: sink, seen: map[string]contract.Record{}, defaultCopy: map[int]string{}}
}

// place is where a record goes: its table (id; a new id ends the open
// table), how a new table begins (begin fills its name, title, heading,
// columns and, for a grid, the columns of modes), its row (row: records
// with the same key make one row, of size cells; "" a row of its own),
// the cells it fills from at, and the lines under the row.
type place struct {
	id    string
	begin func(t *Table, modes []string)
	ref   func(o *open) []string
	row   string
	size  int
	lead  []string // the row's first cells (its key in words)
	at    int
	cells []string
	notes []string
	// A grid row (work curve, probe): lead cells, then a column per mode
	// (gridCells, one per group of columns).
	grid bool
	mode string
	// before are whole rows to write before this record's (the copy
	// table's rows reused from the null table).
	before [][]string
	// mark notes the record in its table's state (o.data).
	mark func(o *open)
}

// Add renders rec: a row (or part of one) of its table; a record of no
// table that is not about a benchmark's configuration ends the open one.
func (r *Renderer) Add(rec contract.Record) {
	switch v := rec.(type) {
	case contract.Timing:
		r.timing = &v
	case contract.CPUState:
		r.cpu = &v
	case contract.Linux:
		r.linux = &v
	case contract.OracleCalibration:
		r.oracleCals = append(r.oracleCals, v)
	}
	if c := coreOf(rec); c != nil {
		r.core = c
	}
	p, ok := r.place(rec)
	if ok {
		r.put(p)
	} else if _, about := rec.(interface{ About() contract.Subject }); !about {
		r.Flush()
	}
	if k, ok := measuredKey(rec); ok {
		r.seen[k] = rec
	}
}

// Flush ends the open table: its pending row is written (its missing
// cells "not measured") and the lines under it. The image's reporter
// calls it before a human line; Close at the end of a run.
func (r *Renderer) Flush() {
	o := r.open
	if o == nil {
		return
	}
	r.flushRow()
	if o.begun {
		if o.ref != nil {
			o.t.Reference = o.ref(o)
		}
		r.sink.End(&o.t)
	}
	r.open = nil
}

// Close ends the run's tables.
func (r *Renderer) Close() { r.Flush() }

func (r *Renderer) put(p place) {
	o := r.open
	if o != nil && o.id == p.id && o.grid && o.first == nil && p.mode != "" && !contains(o.modes, p.mode) {
		r.Flush() // a mode the grid's columns lack: a new table
		o = nil
	}
	if o == nil || o.id != p.id {
		r.Flush()
		o = &open{id: p.id, begin: p.begin, ref: p.ref, grid: p.grid, data: map[string]any{}}
		if p.grid {
			o.first = map[string][]string{}
		}
		r.open = o
		o.pmu = r.pmuOn()
	}
	if p.mark != nil {
		p.mark(o)
	}
	if p.grid {
		r.putGrid(o, p)
		return
	}
	if p.row == "" || p.row != o.rowKey {
		r.flushRow()
	}
	for _, b := range p.before {
		r.emit(b, nil)
	}
	if p.row == "" {
		r.emit(append(make([]string, p.at), p.cells...), p.notes)
		return
	}
	if o.row == nil {
		o.rowKey = p.row
		o.row = make([]string, p.size)
		o.filled = make([]bool, p.size)
	}
	for i, c := range p.lead {
		if i < len(o.row) {
			o.row[i], o.filled[i] = c, true
		}
	}
	for i, c := range p.cells {
		if p.at+i < len(o.row) {
			o.row[p.at+i], o.filled[p.at+i] = c, true
		}
	}
	o.notes = append(o.notes, p.notes...)
	for _, f := range o.filled {
		if !f {
			return
		}
	}
	r.flushRow()
}

// putGrid adds a grid record: its cells go to its mode's columns; the
// first row is held until a record of another row comes, then its modes
// are the table's columns.
func (r *Renderer) putGrid(o *open, p place) {
	if o.first != nil {
		if o.rowKey != "" && p.row != o.rowKey {
			r.flushRow()
		} else {
			if o.rowKey == "" {
				o.rowKey = p.row
			}
			o.lead = p.cells[:gridLead(p)]
			o.first[p.mode] = p.cells[gridLead(p):]
			o.modes = append(o.modes, p.mode)
			return
		}
	}
	if p.row != o.rowKey {
		r.flushRow()
		o.rowKey = p.row
		o.lead = p.cells[:gridLead(p)]
		o.data["cells"] = map[string][]string{}
	}
	cells := o.data["cells"].(map[string][]string)
	cells[p.mode] = p.cells[gridLead(p):]
	if len(cells) == len(o.modes) {
		r.flushRow()
	}
}

// gridLead is the number of lead cells of a grid record: its cells less
// one per group of columns (the place's size).
func gridLead(p place) int { return len(p.cells) - p.size }

// flushRow writes the pending row, if any: its missing cells are "not
// measured" (the first of each run of them).
func (r *Renderer) flushRow() {
	o := r.open
	if o == nil {
		return
	}
	if o.grid {
		r.flushGrid(o)
		return
	}
	if o.row == nil {
		return
	}
	row := o.row
	for i, f := range o.filled {
		if !f && (i == 0 || o.filled[i-1]) {
			row[i] = "not measured"
		}
	}
	notes := o.notes
	o.row, o.filled, o.rowKey, o.notes = nil, nil, "", nil
	r.emit(row, notes)
}

// flushGrid writes a grid's pending row: lead cells, then group by group
// a cell per mode ("not measured" where its record is missing).
func (r *Renderer) flushGrid(o *open) {
	var cells map[string][]string
	if o.first != nil {
		if o.rowKey == "" {
			return
		}
		cells = o.first
		o.first = nil
	} else {
		cells, _ = o.data["cells"].(map[string][]string)
		if cells == nil {
			return
		}
	}
	groups := 0
	for _, c := range cells {
		groups = len(c)
	}
	row := append([]string(nil), o.lead...)
	for g := 0; g < groups; g++ {
		for i, m := range o.modes {
			c, ok := cells[m]
			switch {
			case !ok:
				row = append(row, "not measured")
			case c[g] == skipCell:
				if i > 0 {
					row = append(row, "-")
				}
			default:
				row = append(row, c[g])
			}
		}
	}
	o.data["cells"] = nil
	o.rowKey = ""
	r.emit(row, nil)
}

// skipCell marks a grid cell with no column (the work curve's "off vs
// off").
const skipCell = "\x00skip"

// emit writes a row, beginning the table first if it has not begun.
func (r *Renderer) emit(row []string, notes []string) {
	o := r.open
	if !o.begun {
		o.begun = true
		o.begin(&o.t, o.modes)
		r.labelEmulated(&o.t)
		r.sink.Begin(&o.t)
	}
	o.t.Rows = append(o.t.Rows, row)
	r.sink.Row(&o.t, row)
	for _, n := range notes {
		o.t.Notes = append(o.t.Notes, n)
		r.sink.Note(&o.t, n)
	}
}

// labelEmulated adds the emulated label to the heading of a table of an
// emulated run that does not carry it yet (in its title or heading), so
// that no table of such a run can be read, or pasted, as hardware's.
func (r *Renderer) labelEmulated(t *Table) {
	e := r.emulatedNote()
	if e == "" {
		return
	}
	for _, l := range append([]string{t.Title}, t.Heading...) {
		if strings.Contains(l, "EMULATED") {
			return
		}
	}
	t.Heading = append(t.Heading, e)
}

// pmuOn is the PMU columns of the last figure's performance counts: on
// when it had counts, with the model events it counted.
func (r *Renderer) pmuOn() pmuCols {
	if r.core == nil || r.core.PMU == nil || r.core.PMU.Unsupported != "" || r.core.PMU.PerOp == nil {
		return pmuCols{}
	}
	return pmuCols{on: true, events: eventsOf(r.core.PMU.PerOp)}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
