package report

import (
	"encoding/csv"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchstat: benchstat itself (go run golang.org/x/perf/cmd/benchstat,
// the version go.mod pins) reads two runs' benchfmt and compares them
// (-format csv: its centres unrounded); ptilab compare gives every row
// the same centres (to the 0.1 its cells print), p-value and verdict (~
// or the change).
func TestBenchstat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds benchstat")
	}
	dir := t.TempDir()
	var files []string
	for _, p := range []string{repeatsA, repeatsB} {
		f := filepath.Join(dir, filepath.Base(p)+".bench")
		require.NoError(t, os.WriteFile(f, render(t, "benchfmt", Build(load1(t, p))), 0o644))
		files = append(files, f)
	}
	cmd := exec.Command("go", append([]string{"run", "golang.org/x/perf/cmd/benchstat", "-format", "csv", "-ignore", "cpu,microcode,tsc-hz,ptilab"}, files...)...)
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	stat := benchstatRows(t, out, UnitTSC)
	require.Len(t, stat, 17, "16 rows and the geomean: %s", out)

	mine := rows(Compare(load1(t, repeatsA), load1(t, repeatsB), false))
	for _, f := range load1(t, repeatsA).Figures() {
		if f.Status != "measured" {
			continue
		}
		b, ok := stat[benchName(f)]
		require.True(t, ok, benchName(f))
		row := mine[f.Key]
		require.NotNil(t, row, f.Key)
		for i, c := range []string{row[2], row[3]} {
			v, err := strconv.ParseFloat(strings.Fields(c)[0], 64)
			require.NoError(t, err)
			assert.LessOrEqual(t, math.Abs(v-b.centre[i]), 0.05+1e-9, "%s: centre %d: ours %s, benchstat's %v", f.Key, i, c, b.centre[i])
		}
		assert.Equal(t, b.test, row[5], f.Key)
		assert.Equal(t, b.verdict, strings.Fields(row[6])[0], f.Key)
	}
	geo := mine["geomean of 16 rows"]
	require.NotNil(t, geo)
	for i, c := range []string{geo[2], geo[3]} {
		v, err := strconv.ParseFloat(c, 64)
		require.NoError(t, err)
		assert.InEpsilon(t, stat["geomean"].centre[i], v, 0.0005, "geomean %d", i)
	}
	assert.Equal(t, stat["geomean"].verdict, geo[6], "the geomean's change")
}

// benchstatRow is a row of benchstat's table: the two centres, the test
// ("p=0.971 n=10") and the verdict ("~" or "+30.90%").
type benchstatRow struct {
	centre        [2]float64
	test, verdict string
}

// benchstatRows reads the rows of the table of unit in benchstat's CSV:
// each table is a row naming the files, a row of units, and its rows
// (name, A, A's CI, B, B's CI, vs base, P).
func benchstatRows(t *testing.T, out []byte, unit string) map[string]benchstatRow {
	r := csv.NewReader(strings.NewReader(string(out)))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	require.NoError(t, err)
	rows := map[string]benchstatRow{}
	in := false
	for _, rec := range recs {
		switch {
		case len(rec) == 7 && rec[0] == "" && strings.HasSuffix(rec[1], "/op"): // a table's units
			in = rec[1] == unit
		case len(rec) == 7 && rec[0] == "": // its files
		case in && len(rec) == 7:
			a, errA := strconv.ParseFloat(rec[1], 64)
			b, errB := strconv.ParseFloat(rec[3], 64)
			if errA == nil && errB == nil {
				rows[rec[0]] = benchstatRow{centre: [2]float64{a, b}, test: rec[6], verdict: rec[5]}
			}
		}
	}
	return rows
}
