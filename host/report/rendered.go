package report

import "github.com/ptilab/ptilab/tables"

// Rendered are the tables package tables renders from the run's records,
// fed in the order the image wrote them: the text of each is what the
// image's console printed (a log cut short shows its partial tables).
func Rendered(r *Run) []Table {
	var c tables.Collect
	tr := tables.New(&c)
	for _, rec := range r.Records {
		tr.Add(rec.Record)
	}
	tr.Close()
	return c.Tables
}
