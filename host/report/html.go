package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// htmlPage is the HTML report: one page, self-contained (its style inline,
// every plot an inline SVG, no script, nothing fetched), a section per run.
var htmlPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ptilab report</title>
<style>
body { font-family: "Liberation Sans", sans-serif; margin: 1.5em; max-width: 90em; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; border-bottom: 1px solid #999; } h3 { font-size: 1em; margin-bottom: .2em; }
p { margin: .15em 0; } p.line, p.ref { color: #333; font-size: .9em; }
.emulated { background: #fdd; border: 2px solid #b00; padding: .4em; font-weight: bold; }
.cut { background: #ffd; border: 2px solid #a80; padding: .4em; font-weight: bold; }
table { border-collapse: collapse; margin: .4em 0; font-size: .9em; }
th, td { border: 1px solid #bbb; padding: .1em .45em; }
th { background: #eee; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.bar, th.bar { border-left: 3px double #666; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
</style>
</head>
<body>
{{range .}}<section class="run">
<h1>ptilab report: {{.Source}}</h1>
{{if .Emulated}}<p class="emulated">EMULATED: {{.Emulated}}</p>
{{end}}{{if .CutShort}}<p class="cut">CUT SHORT: the run has no PTILAB-END line; what follows is what it measured before the cut</p>
{{end}}<p class="machine">{{.Machine}}</p>
<p class="status">{{.Status}}</p>
<h2>Tables</h2>
{{range .Tables}}<section class="table" id="{{.Name}}">
<h3>{{.Title}}</h3>
{{range .Heading}}<p class="line">{{.}}</p>
{{end}}<table>
<thead><tr>{{range .Heads}}<th{{if .Bar}} class="bar"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range .}}<td{{if .Class}} class="{{.Class}}"{{end}}{{if gt .Span 1}} colspan="{{.Span}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{range .Under}}<p class="ref">{{.}}</p>
{{end}}</section>
{{end}}<h2>Plots</h2>
{{range .Plots}}<figure id="plot-{{.Name}}">{{.SVG}}<figcaption>{{.Name}}</figcaption></figure>
{{else}}<p>No plot: the run has no figures of the plotted kinds.</p>
{{end}}</section>
{{end}}</body>
</html>
`))

// htmlRun, htmlTable and htmlCell are a run, a table and a cell as the page
// shows them.
type htmlRun struct {
	Source, Machine, Status, Emulated string
	CutShort                          bool
	Tables                            []htmlTable
	Plots                             []htmlPlot
}

type htmlTable struct {
	Name, Title    string
	Heading, Under []string
	Heads          []htmlCell
	Rows           [][]htmlCell
}

type htmlCell struct {
	Text, Class string
	Span        int
	Bar         bool
}

type htmlPlot struct {
	Name string
	SVG  template.HTML
}

// writeHTML writes the reports as one HTML page: per run, the machine,
// how the run ended, the emulated label where it applies, every table
// (its columns empty in every row left out, as in the text) with its
// reference lines, and every plot as an inline SVG.
func writeHTML(w io.Writer, reps []Report) error {
	var runs []htmlRun
	for _, rep := range reps {
		hr := htmlRun{Source: rep.Source, Machine: rep.Machine, Status: rep.Status, CutShort: rep.CutShort}
		if rep.run != nil && rep.run.Emulated() {
			hr.Emulated = "these figures come from " + emulatorOf(rep.run) + " and say nothing about hardware"
		}
		for _, t := range rep.Tables {
			hr.Tables = append(hr.Tables, htmlTableOf(t))
		}
		if rep.run != nil {
			ps, err := Plots(rep.run)
			if err != nil {
				return fmt.Errorf("%s: %w", rep.Source, err)
			}
			for _, p := range ps {
				svg, err := inlineSVG(p)
				if err != nil {
					return fmt.Errorf("%s: plot %s: %w", rep.Source, p.Name, err)
				}
				hr.Plots = append(hr.Plots, htmlPlot{Name: p.Name, SVG: svg})
			}
		}
		runs = append(runs, hr)
	}
	return htmlPage.Execute(w, runs)
}

// htmlTableOf is t as the page shows it: the grid Fit lays out (no column
// empty in every row), a spanning cell as one cell over the columns it
// spans, figures aligned right.
func htmlTableOf(t Table) htmlTable {
	ht := htmlTable{Name: t.Name, Title: t.Title, Heading: t.Heading, Under: t.Under()}
	g := gridOf(t)
	for _, c := range g.cols {
		ht.Heads = append(ht.Heads, htmlCell{Text: c.Head, Bar: c.Bar})
	}
	for r, row := range g.rows {
		var cells []htmlCell
		for i := 0; i < len(row); i++ {
			c := htmlCell{Text: row[i], Span: 1}
			bar := g.cols[i].Bar
			if i == g.span[r] {
				// Up to the row's end or the next bar.
				j := i + 1
				for j < len(g.cols) && !g.cols[j].Bar && (j >= len(row) || row[j] == "") {
					j++
				}
				c.Span = j - i
				i = j - 1
			} else if i > 0 && isFigure(row[i]) {
				c.Class = "num"
			}
			if bar {
				c.Class = strings.TrimSpace(c.Class + " bar")
			}
			cells = append(cells, c)
		}
		ht.Rows = append(ht.Rows, cells)
	}
	return ht
}

// inlineSVG is p drawn as an SVG element for a page: vgsvg's document
// without its XML declaration.
func inlineSVG(p Plot) (template.HTML, error) {
	w, h := p.Width, p.Height
	if w == 0 {
		w = plotWidth
	}
	if h == 0 {
		h = plotHeight
	}
	c := vgsvg.New(w, h)
	p.Plot.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return template.HTML(s), nil // gonum's SVG: its text escaped by vgsvg
}
