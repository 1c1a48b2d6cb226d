package syscalls

import "github.com/ptilab/ptilab/bench"

// Lseek is lseek's registry row.
var Lseek = bench.Benchmark{Name: "lseek", TaskRepeats: true, Summary: "lseek on a kernel file of the tasks kernel (a real system call, handled in Go), linux flavour, global pages off and on",
	Worlds: []int{64, 32}, Keys: []string{"modes", "asi_actions", "entries", "n", "r", "warmup", "loop_offset"}, Run: lseek}

// lseekFileBytes is the size of lseek's kernel file.
const lseekFileBytes = 1 << 20

// lseek measures a real system call through the linux trampolines:
// lseek(fd, 0, SEEK_SET) on a kernel file object of the world's tasks
// kernel, by each of the world's entries, in every mode of the plan, with
// global pages off and on, and records each configuration as it finishes
// (package tables shows cycles and ns per call, operations per second and
// what global pages change; the reference: +1.72% ops/s on Skylake with
// PCID under PTI, for will-it-scale's lseek1).
func lseek(x *bench.Ctx) any {
	p, w := x.Plan, x.World
	var ms []bench.Measurement
	for _, entry := range p.EntriesOf(w) {
		for _, mode := range p.Modes {
			for _, g := range []bool{false, true} {
				c := w.TasksConfig(mode, entry)
				c.Global = g
				for _, c := range p.ConfigsOf(c) {
					m := bench.Measure(w, c, bench.Call{Op: bench.Lseek, File: lseekFileBytes}, p.N, p.R, p.Warmup)
					m.Bench = x.Name
					ms = append(ms, m)
					x.RecordMeasurement(m, bench.Ratio(&m, bench.Find(ms, bench.OffOf(c))))
				}
			}
		}
	}
	return ms
}
