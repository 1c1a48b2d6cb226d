package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// Reporter writes a run's results: human-readable lines, one
// `PTILAB {json}` line per result and a last `PTILAB-END {json}` line with
// the status and counts, so that a log cut short is detectable (the design notes,
// "Output contract").
type Reporter struct {
	w       io.Writer
	records int
	checks  int
	failed  []string
}

// NewReporter returns a Reporter writing to w (the console).
func NewReporter(w io.Writer) *Reporter { return &Reporter{w: w} }

// Printf writes a human-readable line.
func (r *Reporter) Printf(format string, args ...any) {
	fmt.Fprintf(r.w, format+"\n", args...)
}

// Record writes one machine-readable result: `PTILAB {"kind":kind,...}`
// with fields (keys sorted; values as encoding/json writes them).
func (r *Reporter) Record(kind string, fields map[string]any) {
	m := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		m[k] = v
	}
	m["kind"] = kind
	b, err := json.Marshal(m)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"kind": "error", "error": err.Error(), "of": kind})
	}
	r.records++
	fmt.Fprintf(r.w, "PTILAB %s\n", b)
}

// Check reports a self-check: a human line and a record of kind "check"
// with its fields and its name, ok and detail (which fields cannot
// replace).
func (r *Reporter) Check(name string, ok bool, detail string, fields map[string]any) {
	r.checks++
	word := "ok"
	if !ok {
		word = "FAILED"
		r.failed = append(r.failed, name)
	}
	r.Printf("check %-12s %-6s %s", name, word, detail)
	f := make(map[string]any, len(fields)+3)
	for k, v := range fields {
		f[k] = v
	}
	f["name"], f["ok"], f["detail"] = name, ok, detail
	r.Record("check", f)
}

// Error reports a benchmark that went wrong: a record of kind "error"
// with fields, and a failure the PTILAB-END line counts, under name.
func (r *Reporter) Error(name string, fields map[string]any) {
	r.failed = append(r.failed, name)
	f := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		f[k] = v
	}
	f["name"] = name
	r.Record("error", f)
}

// Failed returns the names of the failed checks.
func (r *Reporter) Failed() []string { return r.failed }

// End writes the PTILAB-END line, with status "ok" when every check passed
// and "failed" otherwise, and returns the exit status for the run (0 or 1).
// fields add to the line; they cannot replace the status or the counts.
func (r *Reporter) End(fields map[string]any) int {
	status, code := "ok", 0
	if len(r.failed) > 0 {
		status, code = "failed", 1
	}
	m := make(map[string]any, len(fields)+6)
	for k, v := range fields {
		m[k] = v
	}
	m["status"], m["exit"], m["records"] = status, code, r.records
	m["checks"], m["passed"], m["failed"] = r.checks, r.checks-len(r.failed), sortedCopy(r.failed)
	b, _ := json.Marshal(m)
	fmt.Fprintf(r.w, "PTILAB-END %s\n", b)
	return code
}

func sortedCopy(s []string) []string {
	c := append([]string{}, s...)
	sort.Strings(c)
	return c
}
