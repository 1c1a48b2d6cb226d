// Package tables renders a run's records (package contract) into the
// tables of ptilab: one renderer, fed the records in the order the image
// writes them, for the image's console (package bench's Reporter feeds it
// each record as it goes out) and for `ptilab report` (host/report feeds
// it the records of a log). Both print the same text.
//
// It works row by row: a table's heading is written when its first row
// is complete, each row as soon as its records are in, and the lines
// under it (reference figures, notes) when the next table begins, a
// human line interrupts it (Flush) or the run ends (Close). A run cut
// short thus still shows its partial tables.
//
// It imports only the standard library, package contract and package
// reference (the reference lines), so that it builds into the image.
package tables

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// Column is a column of a table: its head, its width in characters, and
// how its cells align: figures right, text (Left) left. Bar puts a "|"
// before it (the halves of the ping-pong and sched-messaging tables).
type Column struct {
	Head  string `json:"head"`
	Width int    `json:"width"`
	Left  bool   `json:"left,omitempty"`
	Bar   bool   `json:"bar,omitempty"`
}

// Table is a table as rendered: its name (a short key: "null64",
// "seed-null", ...), title and the heading lines under it, its columns,
// its rows of cells (a row may have fewer cells than columns: its last
// cell then spans the rest, as "unsupported: reason" does), and the lines
// under it: the reference figures (or why there are none), then notes
// (lines under rows, such as a PMU cross-check warning).
type Table struct {
	Name      string     `json:"name"`
	Title     string     `json:"title"`
	Heading   []string   `json:"heading,omitempty"`
	Columns   []Column   `json:"columns"`
	Rows      [][]string `json:"rows"`
	Reference []string   `json:"reference,omitempty"`
	Notes     []string   `json:"notes,omitempty"`
	// Text is the table's lines as Text writes them (kept by Collect;
	// empty for a table made otherwise, which a writer aligns itself).
	Text []string `json:"-"`
}

// Cols are columns of heads, aligned by the writer (Width 0).
func Cols(heads ...string) []Column {
	out := make([]Column, len(heads))
	for i, h := range heads {
		out[i] = Column{Head: h}
	}
	return out
}

// Heads are the columns' heads.
func (t *Table) Heads() []string {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = c.Head
	}
	return out
}

// Under is the lines under t: its reference lines, then its notes.
func (t *Table) Under() []string {
	return append(append([]string(nil), t.Reference...), t.Notes...)
}

// Sink receives a renderer's tables as they are made: Begin when the
// first row is ready (the table's name, title, heading and columns are
// set), Row for each row (also appended to t.Rows), Note for a line under
// the last row (also appended to t.Notes), End when the table is done
// (t.Reference set).
type Sink interface {
	Begin(t *Table)
	Row(t *Table, cells []string)
	Note(t *Table, line string)
	End(t *Table)
}

// Text is a Sink writing tables as text to W, line by line as they come:
// an empty line, the title and heading lines, the column heads, the rows,
// the notes in place and the reference lines at the end.
type Text struct{ W io.Writer }

func (s Text) line(l string) { io.WriteString(s.W, l+"\n") }

// Begin writes the table's heading.
func (s Text) Begin(t *Table) {
	s.line("")
	s.line(t.Title)
	for _, h := range t.Heading {
		s.line(h)
	}
	s.line(FormatRow(t.Columns, t.Heads()))
}

// Row writes a row.
func (s Text) Row(t *Table, cells []string) { s.line(FormatRow(t.Columns, cells)) }

// Note writes a line under the last row.
func (s Text) Note(t *Table, l string) { s.line(l) }

// End writes the reference lines.
func (s Text) End(t *Table) {
	for _, l := range t.Reference {
		s.line(l)
	}
}

// Collect is a Sink keeping the finished tables with their text (Text's
// lines, without the empty line before each), for `ptilab report`.
type Collect struct {
	Tables []Table
	buf    bytes.Buffer
}

func (c *Collect) text() Text { return Text{W: &c.buf} }

func (c *Collect) Begin(t *Table) {
	c.buf.Reset()
	c.text().Begin(t)
}

func (c *Collect) Row(t *Table, cells []string) { c.text().Row(t, cells) }
func (c *Collect) Note(t *Table, l string)      { c.text().Note(t, l) }

func (c *Collect) End(t *Table) {
	c.text().End(t)
	lines := strings.Split(strings.TrimSuffix(c.buf.String(), "\n"), "\n")
	t.Text = lines[1:] // the empty line before it
	c.Tables = append(c.Tables, *t)
}

// Tee is a Sink sending each call to every sink of it, in order.
type Tee []Sink

func (ss Tee) Begin(t *Table) {
	for _, s := range ss {
		s.Begin(t)
	}
}
func (ss Tee) Row(t *Table, cells []string) {
	for _, s := range ss {
		s.Row(t, cells)
	}
}
func (ss Tee) Note(t *Table, l string) {
	for _, s := range ss {
		s.Note(t, l)
	}
}
func (ss Tee) End(t *Table) {
	for _, s := range ss {
		s.End(t)
	}
}

// FormatRow is a row's text: each cell padded to its column's width
// (left for text, right for figures) after one space, or " | " before a
// Bar column. A cell wider than its column spans the empty cells after
// it up to the next Bar, left-aligned; trailing spaces are trimmed.
func FormatRow(cols []Column, cells []string) string {
	var b strings.Builder
	for i := 0; i < len(cols) && i < len(cells); i++ {
		c := cols[i]
		switch {
		case c.Bar:
			b.WriteString(" | ")
		case i > 0:
			b.WriteString(" ")
		}
		cell := cells[i]
		n := utf8.RuneCountInString(cell)
		if n > c.Width {
			// Span the empty cells after it, up to the next Bar.
			w := c.Width
			j := i + 1
			for ; j < len(cols) && !cols[j].Bar && (j >= len(cells) || cells[j] == ""); j++ {
				w += 1 + cols[j].Width
			}
			b.WriteString(cell + strings.Repeat(" ", max(0, w-n)))
			i = j - 1
			continue
		}
		pad := strings.Repeat(" ", c.Width-n)
		if c.Left {
			b.WriteString(cell + pad)
		} else {
			b.WriteString(pad + cell)
		}
	}
	return strings.TrimRight(b.String(), " ")
}
