package tables

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ptilab/ptilab/contract"
)

// The loop-placement table: the figures a benchmark measured again with
// its world's ring-3 programs shifted (plan key loop_offset), each beside
// the same configuration's at the default places (seen before it). The
// offsets are multiples of 32: every jump of a timed loop keeps its place
// in its 32-byte chunk (Skylake's JCC erratum), the loop moves within its
// cache line and page.

// placementPlace places a record of a configuration measured at a loop
// offset; false for a record that is not a figure (the ladder's rungs,
// checks).
func (r *Renderer) placementPlace(rec contract.Record, s contract.Subject) (place, bool) {
	st := statsOf(rec)
	if _, ok := notRun(rec); !ok && st == nil {
		return place{}, false
	}
	base := s
	base.LoopOffset = 0
	key := base.Key()
	cells := []string{s.Bench, strings.TrimPrefix(key, "bench="+s.Bench+" "), strconv.Itoa(s.LoopOffset)}
	n, reps, _ := sizes(rec)
	cells = append(cells, figures(rec, func() []string {
		out := []string{f1(st.Mean), spread(st, reps), "-", "-", "-"}
		if old := statsOf(r.seen[key]); old != nil {
			out[2], out[3] = f1(old.Mean), spread(old, reps)
			if old.Mean != 0 {
				out[4] = fmt.Sprintf("%.3f", st.Mean/old.Mean)
			}
		}
		return out
	})...)
	return place{id: "placement", row: "", cells: cells,
		begin: func(t *Table, _ []string) {
			t.Name = "placement"
			t.Title = fmt.Sprintf("loop placement: %s again with the ring-3 programs shifted by loop_offset bytes, per operation (%d per repeat, %s), beside the same configuration at offset 0;",
				s.Bench, n, plural(reps, "repeat", "repeats"))
			t.Heading = []string{r.unitNote() + "; each timed loop's jumps keep their places in their 32-byte chunks (JCC erratum); equal figures: where the loop sits does not matter on this CPU"}
			t.Columns = []Column{left("bench", 10), left("configuration", 70), right("offset", 6), right(r.counted("insns/op", "tsc/op"), 12), right("±%", 7),
				right("at 0", 12), right("±%", 7), right("vs 0", 6)}
		},
	}, true
}
