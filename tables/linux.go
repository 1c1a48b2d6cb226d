package tables

import (
	"fmt"
	"slices"

	"github.com/ptilab/ptilab/contract"
)

// perfBenchPlace places a row of the perf comparison of a `ptilab linux`
// run: perf's command, the unit, perf's and ptilab's medians over the
// rounds and their ratio, or why perf gave no figure.
func (r *Renderer) perfBenchPlace(v contract.PerfBench) place {
	const id = "perfbench"
	cells := []string{v.Command, v.Unit, "-", "-", "-"}
	var notes []string
	if v.Error != "" {
		notes = []string{v.Command + ": no figure: " + v.Error}
	} else {
		cells[2], cells[3], cells[4] = g4(medianOf(v.Perf)), g4(medianOf(v.Ptilab)), fmt.Sprintf("%.3f", v.Ratio)
	}
	return place{id: id, cells: cells, notes: notes,
		begin: func(t *Table, _ []string) {
			t.Name = id
			t.Title = fmt.Sprintf("perf's own benchmarks beside ptilab's, run in turn (%s), the medians of the rounds: ratio = ptilab / perf", roundsOf(v.Rounds))
			t.Heading = []string{"ptilab's getppid loop is bare SYSCALL instructions, perf's calls glibc's syscall(); ptilab's workers are Go programs and threads, perf's forks and pthreads"}
			t.Columns = []Column{left("perf command", 48), left("unit", 4), right("perf", 10), right("ptilab", 10), right("ratio", 6)}
		}}
}

// roundsOf says how many rounds ran.
func roundsOf(n int) string {
	if n == 1 {
		return "1 round"
	}
	return fmt.Sprintf("%d rounds", n)
}

// g4 is a figure to four significant digits.
func g4(x float64) string { return fmt.Sprintf("%.4g", x) }

// medianOf is the median of xs (0 for none).
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
