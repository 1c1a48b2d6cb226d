package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Formats are the output formats of WriteReports; CompareFormats those
// of Write (a comparison's document: benchfmt and html are a run's).
var (
	Formats        = []string{"text", "markdown", "csv", "json", "benchfmt", "html"}
	CompareFormats = []string{"text", "markdown", "csv", "json"}
)

// Document is what a command prints: a heading's lines (source, machine,
// status, tests used...) and tables.
type Document struct {
	Heading []string `json:"heading"`
	Tables  []Table  `json:"tables"`
}

// Doc is a report as a document.
func (rep Report) Doc() Document {
	return Document{Heading: []string{"source: " + rep.Source, rep.Machine, rep.Status}, Tables: rep.Tables}
}

// WriteReports writes the reports of runs in format (one of Formats);
// in json, an array of the reports with their records' machine, timing
// and end.
func WriteReports(w io.Writer, format string, width int, reps []Report) error {
	switch format {
	case "json":
		return writeJSON(w, reps)
	case "csv":
		return writeFigures(w, reps)
	case "benchfmt":
		return writeBenchfmt(w, reps)
	case "html":
		return writeHTML(w, reps)
	}
	for i, rep := range reps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := Write(w, format, width, rep.Doc()); err != nil {
			return err
		}
	}
	return nil
}

// Write writes d in format (one of Formats); text fits its tables to
// width characters (Fit; 0 for the console's layout).
func Write(w io.Writer, format string, width int, d Document) error {
	switch format {
	case "text":
		writeText(w, d, width)
	case "markdown":
		writeMarkdown(w, d)
	case "csv":
		return writeCSV(w, d)
	case "json":
		return writeJSON(w, d)
	default:
		return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(CompareFormats, ", "))
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeText writes the heading, then each table as Fit lays it out for
// width (0: the console's layout), after an empty line.
func writeText(w io.Writer, d Document, width int) {
	for _, h := range wrapAll(d.Heading, width) {
		fmt.Fprintln(w, h)
	}
	for _, t := range d.Tables {
		fmt.Fprintln(w)
		for _, l := range Fit(t, width) {
			fmt.Fprintln(w, l)
		}
	}
}

// isFigure reports whether a cell is a figure (aligned right): it starts
// with a digit, a sign or a dot.
func isFigure(c string) bool {
	return c != "" && strings.ContainsRune("0123456789+-.~", rune(c[0]))
}

// writeMarkdown writes the heading as a list, each table as a level-3
// heading, a pipe table and its notes.
func writeMarkdown(w io.Writer, d Document) {
	for _, h := range d.Heading {
		fmt.Fprintf(w, "- %s\n", mdEscape(h))
	}
	for _, t := range d.Tables {
		fmt.Fprintf(w, "\n### %s\n\n", mdEscape(t.Title))
		for _, h := range t.Heading {
			fmt.Fprintf(w, "%s  \n", mdEscape(h))
		}
		if len(t.Heading) > 0 {
			fmt.Fprintln(w)
		}
		g := gridOf(t) // no column empty in every row
		heads := make([]string, len(g.cols))
		for i, c := range g.cols {
			heads[i] = c.Head
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(mdRow(heads), " | "))
		fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(g.cols)))
		for _, row := range g.rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(mdRow(row), " | "))
		}
		if len(t.Under()) > 0 {
			fmt.Fprintln(w)
			for _, n := range t.Under() {
				fmt.Fprintf(w, "%s  \n", mdEscape(n))
			}
		}
	}
}

func mdRow(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = mdEscape(c)
	}
	return out
}

// mdEscape escapes what Markdown would read as markup in a cell: pipes,
// asterisks, underscores and backquotes.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "`", "\\`").Replace(s)
}

// writeCSV writes the heading as one-cell records, then each table as a
// block: a record with its name and title, its columns (the table's name
// first), its rows, each note as a one-cell record, and an empty record.
func writeCSV(w io.Writer, d Document) error {
	cw := csv.NewWriter(w)
	for _, h := range d.Heading {
		cw.Write([]string{h})
	}
	for _, t := range d.Tables {
		cw.Write([]string{""})
		cw.Write([]string{t.Name, t.Title})
		cw.Write(append([]string{"table"}, t.Heads()...))
		for _, row := range t.Rows {
			cw.Write(append([]string{t.Name}, row...))
		}
		for _, n := range t.Under() {
			cw.Write([]string{n})
		}
	}
	cw.Flush()
	return cw.Error()
}
