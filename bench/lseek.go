package bench

// lseekFileBytes is the size of lseek's kernel file.
const lseekFileBytes = 1 << 20

// lseek measures a real system call through the linux trampolines:
// lseek(fd, 0, SEEK_SET) on a kernel file object of the world's tasks
// kernel, by each of the world's entries, in every mode of the plan, with
// global pages off and on, and records each configuration as it finishes
// (package tables shows cycles and ns per call, operations per second and
// what global pages change; the reference: +1.72% ops/s on Skylake with
// PCID under PTI, for will-it-scale's lseek1).
func lseek(x *Ctx) any {
	p, w := x.Plan, x.World
	var ms []Measurement
	for _, entry := range w.Entries() {
		for _, mode := range p.Modes {
			for _, g := range []bool{false, true} {
				c := w.TasksConfig(mode, entry)
				c.Global = g
				m := Measure(w, c, Call{Op: Lseek, File: lseekFileBytes}, p.N, p.R, p.Warmup)
				m.Bench = x.Name
				ms = append(ms, m)
				x.RecordMeasurement(m, Ratio(&m, Find(ms, OffOf(c))))
			}
		}
	}
	return ms
}
