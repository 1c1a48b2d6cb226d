package bench

import "github.com/ptilab/ptilab/contract"

// Clock converts cycles to nanoseconds and says where its frequency came
// from; Emulator names the emulator whose timings these are, not the
// hardware's ("qemu-tcg", "bochs"; empty on hardware); Icount marks a TSC
// that counts instructions (QEMU's -icount shift=0; Bochs); Microcode is
// the revision the figures are measured under.
type Clock struct {
	Hz       uint64
	Source   string
	Emulator string
	Icount   bool
	// Microcode is the CPU's microcode revision (hex, as the machine
	// record's; "" where it could not be read). ptilab loads no microcode:
	// it holds for the whole run.
	Microcode string
}

// Mark gives s what every figure record carries of the machine it was
// measured on: whether it was emulated, whether the TSC counted
// instructions, and the microcode revision.
func (c Clock) Mark(s contract.Subject) contract.Subject {
	s.Emulated, s.Icount, s.Microcode = c.Emulated(), c.Icount, c.Microcode
	return s
}

// Emulated reports whether the figures come from an emulator.
func (c Clock) Emulated() bool { return c.Emulator != "" }

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

// Ns converts cycles to nanoseconds.
func (c Clock) Ns(cycles float64) float64 { return cycles * 1e9 / float64(c.Hz) }

// Cycles converts nanoseconds to cycles.
func (c Clock) Cycles(ns int64) uint64 { return uint64(float64(ns) * float64(c.Hz) / 1e9) }
