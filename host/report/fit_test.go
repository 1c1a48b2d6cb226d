package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/tables"
)

// fixtures are every sample log of the package.
var fixtures = []string{qemuLog, syntheticPath, isolationLog, skylakeLog, tlbLog, bochsTLBLog,
	"testdata/qemu-ladder.log", "testdata/qemu-ladder32.log", repeatsA, repeatsB}

// TestFitWidth: by default every line of report and compare is at most
// DefaultWidth characters, no table keeps a column empty in every row,
// and every table of an emulated run says so in its heading; with width
// 0 the tables are the console's text.
func TestFitWidth(t *testing.T) {
	for _, p := range fixtures {
		run := load1(t, p)
		rep := Build(run)
		for _, l := range strings.Split(string(render(t, "text", rep)), "\n") {
			assert.LessOrEqual(t, utf8.RuneCountInString(l), DefaultWidth, "%s: %q", p, l)
		}
		for _, tb := range rep.Tables {
			if run.Emulated() {
				assert.Contains(t, strings.Join(append([]string{tb.Title}, tb.Heading...), "\n"), "EMULATED", "%s: %s", p, tb.Name)
			}
			g := gridOf(tb)
			for i := 1; i < len(g.cols); i++ {
				empty := true
				for r, row := range g.rows {
					if i < len(row) && (!emptyCell(row[i]) || g.span[r] == i) {
						empty = false
					}
				}
				assert.False(t, empty, "%s: %s: column %q is empty in every row", p, tb.Name, g.cols[i].Head)
			}
			assert.Equal(t, tb.Text, Fit(tb, 0), "-wide: the console's text")
		}
	}
	var b bytes.Buffer
	require.NoError(t, Write(&b, "text", DefaultWidth, Compare(load1(t, qemuLog), load1(t, syntheticPath), true)))
	for _, l := range strings.Split(b.String(), "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(l), DefaultWidth, "compare: %q", l)
	}
}

// TestFitSplit: a table wider than the width is cut into blocks that
// repeat its lead columns, at its bars first; a span too long wraps
// under its row; every cell of the table is still printed.
func TestFitSplit(t *testing.T) {
	tb := tables.Table{Title: "t", Columns: []tables.Column{
		{Head: "mode", Left: true}, {Head: "global", Left: true},
		{Head: "processes"}, {Head: "±%"}, {Head: "empty"},
		{Head: "threads", Bar: true}, {Head: "±%"}, {Head: "empty"},
	}, Rows: [][]string{
		{"off", "no", "6000.0", "0.5%", "-", "4000.0", "0.5%", "-"},
		{"on", "no", "unsupported: " + strings.Repeat("why ", 12), "", "", "4900.0", "1.5%", "-"},
		{"on+pcid", "no", "unsupported: the same reason for both halves"},
	}}
	assert.Equal(t, []string{
		"t",
		"mode    global processes   ±%",
		"off     no        6000.0 0.5%",
		"on      no     unsupported: why why why",
		"    why why why why why why why why why",
		"on+pcid no     unsupported: the same",
		"    reason for both halves",
		"(continued)",
		"mode    global threads   ±%",
		"off     no      4000.0 0.5%",
		"on      no      4900.0 1.5%",
		"on+pcid no     unsupported: the same",
		"    reason for both halves",
	}, Fit(tb, 40))
	one := Fit(tb, 200)
	assert.Equal(t, "mode    global processes   ±% | threads   ±%", one[1], "wide enough: one block, the empty columns left out")
}

// TestWrap: prose wraps at spaces, its later lines indented.
func TestWrap(t *testing.T) {
	assert.Equal(t, []string{"a b c", "  d e"}, wrap("a b c d e", 5))
	assert.Equal(t, []string{"short"}, wrap("short", 5))
	assert.Equal(t, []string{"averylongword", "  x"}, wrap("averylongword x", 5))
}

// TestTidyCSV: report -format csv is one header and a row per figure
// (measured, unsupported or failed, and every flush cost), each as wide
// as the header, numbers as numbers.
func TestTidyCSV(t *testing.T) {
	for _, p := range []string{qemuLog, syntheticPath, tlbLog} {
		run := load1(t, p)
		recs, err := csv.NewReader(bytes.NewReader(render(t, "csv", Build(run)))).ReadAll()
		require.NoError(t, err, p)
		require.Equal(t, CSVHeader, recs[0])
		figs := run.Figures()
		require.Len(t, recs, 1+len(figs), p)
		col := map[string]int{}
		for i, h := range CSVHeader {
			col[h] = i
		}
		flush := 0
		for i, rec := range recs[1:] {
			require.Len(t, rec, len(CSVHeader))
			assert.Equal(t, figs[i].Key, rec[col["key"]])
			if rec[col["bench"]] == "flushcost" {
				flush++
			}
			for _, h := range []string{"mean", "stddev", "median", "min", "max", "ns_per_op", "ratio_to_off", "core_mhz", "width", "ops", "r"} {
				require.Contains(t, col, h)
				if c := rec[col[h]]; c != "" {
					_, err := strconv.ParseFloat(c, 64)
					assert.NoError(t, err, "%s: %s %q", p, h, c)
				}
			}
			if rec[col["status"]] == "measured" {
				assert.NotEmpty(t, rec[col["mean"]], "%s: %s", p, rec[col["key"]])
			} else {
				assert.Empty(t, rec[col["mean"]])
				assert.NotEmpty(t, rec[col["reason"]])
			}
		}
		if p == tlbLog {
			assert.Positive(t, flush, "the flush costs are figures too")
		}
	}
}

// TestJSONFigures: the JSON report carries the run's figures beside its
// records and tables.
func TestJSONFigures(t *testing.T) {
	run := load1(t, syntheticPath)
	var reps []struct {
		Figures []Figure `json:"figures"`
	}
	require.NoError(t, json.Unmarshal(render(t, "json", Build(run)), &reps))
	require.Len(t, reps, 1)
	assert.Equal(t, run.Figures(), reps[0].Figures)
	require.NotEmpty(t, reps[0].Figures)
	f := reps[0].Figures[0]
	assert.Equal(t, "measured", f.Status)
	require.NotNil(t, f.Spread)
	assert.Equal(t, 280.0, f.Mean)
	assert.Equal(t, 10, f.N, "the repeats")
}

// TestFigureMicrocode: a figure's microcode revision is its record's own,
// or, in a log from before records carried it, the machine record's.
func TestFigureMicrocode(t *testing.T) {
	ucode := uint32(0x42e)
	var log strings.Builder
	for _, r := range []contract.Record{
		contract.Machine{Vendor: "GenuineIntel", Brand: "test", Microcode: &ucode, TSCHz: 1e9},
		contract.Syscall{Subject: contract.Subject{Bench: "null", Width: 64, Mode: "off", Entry: "syscall", Flavour: "minimal", Microcode: "0x42f"},
			N: 10, R: 1, Stats: contract.Stats{Mean: 100, Median: 100, Min: 100, Max: 100, TSCHz: 1e9}},
		contract.Syscall{Subject: contract.Subject{Bench: "null", Width: 64, Mode: "on", Entry: "syscall", Flavour: "minimal"},
			N: 10, R: 1, Stats: contract.Stats{Mean: 200, Median: 200, Min: 200, Max: 200, TSCHz: 1e9}},
	} {
		js, err := contract.Encode(r)
		require.NoError(t, err)
		fmt.Fprintf(&log, "%s %s\n", contract.RecordTag, js)
	}
	run, err := Parse("test", []byte(log.String()))
	require.NoError(t, err)
	figs := run.Figures()
	require.Len(t, figs, 2)
	assert.Equal(t, "0x42f", figs[0].Microcode, "the record's own")
	assert.Equal(t, "0x42e", figs[1].Microcode, "the machine record's")
}
