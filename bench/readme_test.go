package bench_test

import (
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/bench"
)

var update = flag.Bool("update", false, "rewrite the README's generated parts from the registry")

// readmeRow is a row of the README's plan table: | `key` | values |
// default | applies to |.
var readmeRow = regexp.MustCompile("^\\| `([a-z_0-9]+)` \\| (.*) \\| (.*) \\| (.*?) ?\\|$")

// TestREADME checks the README against the registry (every family's,
// registered by package bench/all, which plan_test.go imports): the benchmarks
// table between its markers is PlanTable's, and the plan table's
// "applies to" column lists the benchmarks that read each key. With
// -update it rewrites both.
func TestREADME(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	var out []string
	keys := map[string]bool{}
	in := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "<!-- benchmarks:"):
			in = true
			out = append(out, l)
			out = append(out, bench.PlanTable()...)
			continue
		case strings.HasPrefix(l, "<!-- /benchmarks -->"):
			in = false
		case in:
			continue
		}
		if m := readmeRow.FindStringSubmatch(l); m != nil {
			keys[m[1]] = true
			applies := bench.AppliesTo(m[1])
			if applies != "" {
				applies = " " + applies
			}
			l = "| `" + m[1] + "` | " + m[2] + " | " + m[3] + " |" + applies + " |"
		}
		out = append(out, l)
	}
	for _, k := range bench.PlanKeys() {
		assert.True(t, keys[k], "README documents plan key %s", k)
	}
	// The benchmarks key's default names every optional benchmark.
	for _, l := range lines {
		if strings.HasPrefix(l, "| `benchmarks` |") {
			for _, name := range bench.PlanNames(true) {
				if !slices.Contains(bench.PlanNames(false), name) {
					assert.Contains(t, l, "`"+name+"`", "the benchmarks key's default lists the optional %s", name)
				}
			}
		}
	}
	got := strings.Join(out, "\n")
	if *update {
		require.NoError(t, os.WriteFile("../README.md", []byte(got), 0o644))
		return
	}
	assert.Equal(t, got, string(b), "the README's benchmarks and plan tables are the registry's: run go test ./bench -run TestREADME -update")
}
