package bench

import "fmt"

// Clock converts cycles to nanoseconds and says where its frequency came
// from; Emulator names the emulator whose timings these are, not the
// hardware's ("qemu-tcg", "bochs"; empty on hardware); Icount marks a TSC
// that counts instructions (QEMU's -icount shift=0; Bochs).
type Clock struct {
	Hz       uint64
	Source   string
	Emulator string
	Icount   bool
}

// Emulated reports whether the figures come from an emulator.
func (c Clock) Emulated() bool { return c.Emulator != "" }

// emulatorName names the clock's emulator in headings.
func (c Clock) emulatorName() string {
	switch c.Emulator {
	case "bochs":
		return "Bochs"
	case "qemu-tcg", "":
		if c.Icount {
			return "QEMU -icount"
		}
		return "QEMU TCG"
	}
	return c.Emulator
}

// counted returns insns where the TSC counts instructions, tsc where it
// ticks.
func (c Clock) counted(insns, tsc string) string {
	if c.Icount {
		return insns
	}
	return tsc
}

// Unit names what the figures count, for records: "instructions" or
// "tsc_cycles".
func (c Clock) Unit() string { return c.counted("instructions", "tsc_cycles") }

// perCall is the heading of the per-call column.
func (c Clock) perCall() string { return c.counted("insns/call", "tsc/call") }

// perMsg is the heading of the per-message column.
func (c Clock) perMsg() string { return c.counted("insns/msg", "tsc/msg") }

// unitNote says what the figures count, for table headings.
func (c Clock) unitNote() string {
	return c.counted("INSTRUCTIONS ("+c.emulatorName()+": the TSC counts instructions; ns are virtual)", "TSC cycles (not core cycles)")
}

// Ns converts cycles to nanoseconds.
func (c Clock) Ns(cycles float64) float64 { return cycles * 1e9 / float64(c.Hz) }

// Cycles converts nanoseconds to cycles.
func (c Clock) Cycles(ns int64) uint64 { return uint64(float64(ns) * float64(c.Hz) / 1e9) }

// header is the clock's part of a table's heading: the TSC frequency and
// its source, and whether the figures are emulated.
func (c Clock) header() string {
	s := fmt.Sprintf("TSC %.3f GHz (%s)", float64(c.Hz)/1e9, c.Source)
	switch {
	case c.Icount:
		s += "; EMULATED (" + c.emulatorName() + "): path lengths, not timings"
	case c.Emulated():
		s += "; EMULATED (" + c.emulatorName() + "): these are not hardware timings"
	}
	return s
}
