package bench

import (
	"fmt"
	"io"
	"sort"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/tables"
)

// Reporter writes a run's results: human-readable lines, one
// `PTILAB {json}` line per result (a record of package contract) and a
// last `PTILAB-END {json}` line with the status and counts, so that a log
// cut short is detectable (docs/how-it-works.md, "Output"). The tables
// are rendered from the records as they go out (package tables), the
// same renderer `ptilab report` uses: a row as soon as its records are
// written, so a run cut short shows its partial tables.
type Reporter struct {
	w       io.Writer
	tables  *tables.Renderer
	records int
	checks  int
	// failed are the failed checks' and benchmarks' names in the order
	// they failed; failedChecks counts the checks among them.
	failed       []string
	failedChecks int
}

// NewReporter returns a Reporter writing to w (the console).
func NewReporter(w io.Writer) *Reporter {
	return &Reporter{w: w, tables: tables.New(tables.Text{W: w})}
}

// Printf writes a human-readable line (not a table's: a line ends the
// table being rendered, which gets its reference lines first).
func (r *Reporter) Printf(format string, args ...any) {
	r.tables.Flush()
	fmt.Fprintf(r.w, format+"\n", args...)
}

// Record writes one machine-readable result: `PTILAB {"kind":K,...}`, the
// JSON of rec with its kind first. A record that cannot be encoded (a NaN,
// say) is written as an "error" record naming its kind and the reason.
func (r *Reporter) Record(rec contract.Record) {
	b, err := contract.Encode(rec)
	if err != nil {
		b, _ = contract.Encode(contract.Error{Name: "record " + rec.Kind(), Error: err.Error()})
	}
	r.records++
	fmt.Fprintf(r.w, "%s %s\n", contract.RecordTag, b)
	r.tables.Add(rec)
}

// Check reports a self-check: a human line and a "check" record with its
// name, ok, detail and the fields of data (which cannot replace those).
func (r *Reporter) Check(name string, ok bool, detail string, data map[string]any) {
	r.checks++
	word := "ok"
	if !ok {
		word = "FAILED"
		r.failed = append(r.failed, name)
		r.failedChecks++
	}
	r.Printf("check %-12s %-6s %s", name, word, detail)
	r.Record(contract.Check{Name: name, OK: ok, Detail: detail, Data: data})
}

// Fail reports a benchmark or a setup that went wrong: its "error" record,
// and a failure the PTILAB-END line counts, under e.Name.
func (r *Reporter) Fail(e contract.Error) {
	r.failed = append(r.failed, e.Name)
	r.Record(e)
}

// Failed returns the names of the failed checks and benchmarks, in the
// order they failed.
func (r *Reporter) Failed() []string { return r.failed }

// End writes the PTILAB-END line, e with its status "ok" when every check
// and benchmark passed and "failed" otherwise, its exit status
// (contract.StatusOK or StatusFailed), the counts (checks and passed
// checks; failed benchmarks apart) and the failed names (sorted), and
// returns the exit status.
func (r *Reporter) End(e contract.End) int {
	r.tables.Close()
	e.Status, e.Exit = "ok", contract.StatusOK
	if len(r.failed) > 0 {
		e.Status, e.Exit = "failed", contract.StatusFailed
	}
	e.Records, e.Checks, e.Passed = r.records, r.checks, r.checks-r.failedChecks
	e.FailedBenchmarks = len(r.failed) - r.failedChecks
	e.Failed = append([]string{}, r.failed...)
	sort.Strings(e.Failed)
	b, err := contract.Encode(e)
	if err != nil {
		b = fmt.Appendf(nil, `{"status":%q,"exit":%d,"error":%q}`, e.Status, e.Exit, err.Error())
	}
	fmt.Fprintf(r.w, "%s %s\n", contract.EndTag, b)
	return e.Exit
}
