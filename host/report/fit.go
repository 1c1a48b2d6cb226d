package report

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ptilab/ptilab/tables"
)

// DefaultWidth is the width, in characters, that report and compare fit
// their text to unless asked for the console's layout: a table pasted
// into a mail or a terminal of 100 columns keeps its rows on one line.
const DefaultWidth = 100

// emptyCell reports whether a cell says nothing: empty or "-".
func emptyCell(c string) bool {
	c = strings.TrimSpace(c)
	return c == "" || c == "-"
}

// grid is a table's columns and rows as Fit lays them out, with, for
// each row, the index of its cell that spans the columns after it, or -1.
type grid struct {
	cols []tables.Column
	rows [][]string
	span []int
}

// spanAt is the index of the cell of row that spans the columns after it
// (FormatRow's rule: the last cell of a row shorter than the columns, or
// a cell followed only by empty cells up to the next bar), or -1.
func spanAt(cols []tables.Column, row []string) int {
	if len(row) == 0 {
		return -1
	}
	if len(row) < len(cols) {
		return len(row) - 1
	}
	for i := range row {
		if row[i] == "" {
			continue
		}
		j := i + 1
		for j < len(row) && !cols[j].Bar && row[j] == "" {
			j++
		}
		if j > i+1 && (j == len(row) || cols[j].Bar) {
			return i
		}
	}
	return -1
}

// gridOf is t's columns and rows, less the columns that are empty in
// every row (a cell that spans a column fills it); a bar on a dropped
// column moves to the next column kept in its group.
func gridOf(t tables.Table) grid {
	keep := make([]bool, len(t.Columns))
	keep[0] = true
	spans := make([]int, len(t.Rows))
	for r, row := range t.Rows {
		spans[r] = spanAt(t.Columns, row)
		for i, c := range row {
			if i < len(keep) && (!emptyCell(c) || i == spans[r]) {
				keep[i] = true
			}
		}
	}
	var g grid
	at := make([]int, len(t.Columns)) // a kept column's index in g
	bar := false
	for i, c := range t.Columns {
		bar = bar || c.Bar
		if keep[i] {
			c.Bar = bar
			bar = false
			at[i] = len(g.cols)
			g.cols = append(g.cols, c)
		}
	}
	for r, row := range t.Rows {
		var out []string
		for i, c := range row {
			if i < len(keep) && keep[i] {
				out = append(out, c)
			}
		}
		s := spans[r]
		if s >= 0 {
			s = at[s]
		}
		g.rows = append(g.rows, out)
		g.span = append(g.span, s)
	}
	if slices.IndexFunc(t.Columns, func(c tables.Column) bool { return c.Width != 0 }) < 0 {
		// Aligned by the writer (Cols): text left, figures right.
		for i := range g.cols {
			g.cols[i].Left = i == 0 || !g.numeric(i)
		}
	}
	return g
}

// spansToEnd reports whether row r's spanning cell is its last cell
// (the rest of its row empty): row may wrap it.
func (g grid) spansToEnd(r int) bool {
	s := g.span[r]
	if s < 0 {
		return false
	}
	for _, c := range g.rows[r][s+1:] {
		if c != "" {
			return false
		}
	}
	return true
}

// tail is the index of row r's last cell when it is prose that may wrap
// under the row (row): a cell that spans to the end of the row, or the
// row's last cell when it is text (in a column of text, or a note among
// figures: compare's "not compared: why"); else -1.
func (g grid) tail(r int) int {
	if g.spansToEnd(r) {
		return g.span[r]
	}
	last := len(g.cols) - 1
	if row := g.rows[r]; last > 0 && len(row) == len(g.cols) && (g.cols[last].Left && !g.numeric(last) || !isFigure(row[last])) {
		return last
	}
	return -1
}

// fitWidths sets each column's width to its widest head or cell, not
// counting the cells that span or wrap (tail).
func (g *grid) fitWidths() {
	for i := range g.cols {
		g.cols[i].Width = utf8.RuneCountInString(g.cols[i].Head)
	}
	for r, row := range g.rows {
		for i, c := range row {
			if i < len(g.cols) && i != g.span[r] && i != g.tail(r) {
				g.cols[i].Width = max(g.cols[i].Width, utf8.RuneCountInString(c))
			}
		}
	}
}

// lead is how many columns name a row (the leading text columns: mode,
// flavour, global...), which every block of a split table repeats; at
// least one.
func (g grid) lead() int {
	n := 1
	for n < len(g.cols) && g.cols[n].Left && !g.cols[n].Bar && !g.numeric(n) {
		n++
	}
	return n
}

// numeric reports whether column i holds figures in some row.
func (g grid) numeric(i int) bool {
	for _, row := range g.rows {
		if i < len(row) && isFigure(row[i]) && !emptyCell(row[i]) {
			return true
		}
	}
	return false
}

// width is the width of g's widest line, the rows' tails (which row
// wraps) not counted.
func (g grid) width() int {
	w := utf8.RuneCountInString(g.heads())
	for r, row := range g.rows {
		if t := g.tail(r); t >= 0 {
			row = row[:t]
		}
		w = max(w, utf8.RuneCountInString(tables.FormatRow(g.cols, row)))
	}
	return w
}

// block is g's first lead columns and the columns cols (indices in
// order); a row's spanning cell that starts before the block fills the
// block's first column.
func (g grid) block(lead int, cols []int) grid {
	var b grid
	b.cols = append(b.cols, g.cols[:lead]...)
	for k, i := range cols {
		c := g.cols[i]
		c.Bar = k > 0 && c.Bar // a block's first column follows the lead columns as a table's own
		b.cols = append(b.cols, c)
	}
	for r, row := range g.rows {
		out := append([]string(nil), row[:min(lead, len(row))]...)
		s, span := g.span[r], -1
		if s >= lead && s < cols[0] && g.spansToEnd(r) {
			out, span = append(out, row[s]), lead
		} else {
			if s >= 0 && s < lead {
				span = s
			}
			for _, i := range cols {
				if i < len(row) {
					if i == s {
						span = len(out)
					}
					out = append(out, row[i])
				}
			}
		}
		b.rows = append(b.rows, out)
		b.span = append(b.span, span)
	}
	return b
}

// split cuts g's columns into blocks no wider than width, each with g's
// lead columns: at its bars first (the processes and threads halves),
// then, where a block is still too wide, as many columns as fit.
func (g grid) split(width int) []grid {
	lead := g.lead()
	var groups [][]int
	for i := lead; i < len(g.cols); i++ {
		if len(groups) == 0 || g.cols[i].Bar {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], i)
	}
	if len(groups) == 0 {
		return []grid{g}
	}
	var out []grid
	for _, cols := range groups {
		if b := g.block(lead, cols); len(groups) > 1 && b.width() <= width {
			out = append(out, b)
			continue
		}
		var cur []int
		for _, i := range cols {
			if len(cur) > 0 && g.block(lead, append(cur, i)).width() > width {
				out = append(out, g.block(lead, cur))
				cur = nil
			}
			cur = append(cur, i)
		}
		out = append(out, g.block(lead, cur))
	}
	return out
}

// stacked is g's text when the columns naming a row are too wide to
// repeat in blocks (compare's configurations): each row's lead cells on
// a line of their own, and under it, indented, its other cells aligned
// as a table of their own.
func (g grid) stacked(width int) []string {
	lead := g.lead()
	var rest []int
	for i := lead; i < len(g.cols); i++ {
		rest = append(rest, i)
	}
	const indent = "    "
	b := g.block(0, rest)
	b.fitWidths()
	var heads []string
	for _, c := range g.cols[:lead] {
		heads = append(heads, c.Head)
	}
	out := wrap(strings.Join(heads, ", "), width)
	out = append(out, indent+b.heads())
	for r, row := range g.rows {
		out = append(out, wrap(strings.Join(row[:min(lead, len(row))], " "), width)...)
		for _, l := range b.row(r, width-len(indent)) {
			out = append(out, indent+l)
		}
	}
	return out
}

// colStart is where column i of cols starts in FormatRow's text.
func colStart(cols []tables.Column, i int) int {
	at := 0
	for j := 0; j < i; j++ {
		at += cols[j].Width + 1
		if j+1 < len(cols) && cols[j+1].Bar {
			at += 2
		}
	}
	return at
}

// heads is the line of g's column heads.
func (g grid) heads() string {
	heads := make([]string, len(g.cols))
	for i, c := range g.cols {
		heads[i] = c.Head
	}
	return tables.FormatRow(g.cols, heads)
}

// lines is g's text: the heads, then each row.
func (g grid) lines(width int) []string {
	out := []string{g.heads()}
	for r := range g.rows {
		out = append(out, g.row(r, width)...)
	}
	return out
}

// row is row r's text; its tail (an "unsupported: reason", a last
// column's prose) that would make the line wider than width goes on in
// lines of its own, indented, under it.
func (g grid) row(r, width int) []string {
	row := g.rows[r]
	line := tables.FormatRow(g.cols, row)
	s := g.tail(r)
	if utf8.RuneCountInString(line) <= width || s < 0 {
		return []string{line}
	}
	at := colStart(g.cols, s)
	words := strings.Fields(row[s])
	cur := ""
	for len(words) > 0 && (cur == "" || at+utf8.RuneCountInString(cur+" "+words[0]) <= width) {
		cur = strings.TrimPrefix(cur+" "+words[0], " ")
		words = words[1:]
	}
	out := []string{tables.FormatRow(g.cols[:s+1], append(append([]string(nil), row[:s]...), cur))}
	if len(words) > 0 {
		indent := strings.Repeat(" ", min(at, max(width-60, 4)))
		out = append(out, wrap(indent+strings.Join(words, " "), width)...)
	}
	return out
}

// wrap breaks a line of prose into lines no wider than width at spaces,
// the lines after the first indented by two spaces; a word wider than
// width stands alone.
func wrap(line string, width int) []string {
	if width <= 0 || utf8.RuneCountInString(line) <= width {
		return []string{line}
	}
	indent := ""
	for _, r := range line {
		if r != ' ' {
			break
		}
		indent += " "
	}
	var out []string
	cur := indent
	for _, w := range strings.Fields(line) {
		switch {
		case strings.TrimSpace(cur) == "":
			cur += w
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(w) <= width:
			cur += " " + w
		default:
			out = append(out, cur)
			cur = indent + "  " + w
		}
	}
	return append(out, cur)
}

// wrapAll wraps each line of lines.
func wrapAll(lines []string, width int) []string {
	var out []string
	for _, l := range lines {
		out = append(out, wrap(l, width)...)
	}
	return out
}

// Fit is t's text for a reader: its columns empty in every row left out,
// each column as wide as its widest cell, prose wrapped at width
// characters, and a table still wider cut into blocks that each repeat
// the columns naming the rows ("(continued)" on the blocks after the
// first). A width of 0 or less is the table as the console writes it.
func Fit(t tables.Table, width int) []string {
	if width <= 0 {
		if len(t.Text) > 0 {
			return t.Text
		}
		width = math.MaxInt32
	}
	lines := wrapAll(append([]string{t.Title}, t.Heading...), width)
	if len(t.Columns) > 0 {
		g := gridOf(t)
		g.fitWidths()
		blocks := []grid{g}
		if g.width() > width {
			if lead := g.lead(); lead < len(g.cols) && colStart(g.cols, lead) > width/2 {
				return append(append(lines, g.stacked(width)...), wrapAll(t.Under(), width)...)
			}
			blocks = g.split(width)
		}
		for i, b := range blocks {
			if i > 0 {
				lines = append(lines, "(continued)")
			}
			lines = append(lines, b.lines(width)...)
		}
	}
	return append(lines, wrapAll(t.Under(), width)...)
}
