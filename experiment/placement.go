package experiment

import "fmt"

// Loop offsets (plan key loop_offset): how many bytes further than by
// default each world copies its ring-3 programs, and so its timed loops,
// into the code pages every process shares (pti.PlacePrograms,
// i386pae.PlaceUserText). The programs are position independent: the
// same bytes run there, the same instructions, every path as long. On
// Skylake client CPUs with the JCC-erratum microcode a jump that crosses
// or ends on a 32-byte boundary is not kept in the micro-op cache (Intel,
// "Mitigations for Jump Conditional Code Erratum", 2019); the loops are
// laid out so that none of theirs does (TestLoopPlacement in pti and
// i386pae), and an offset is a multiple of LoopOffsetStep, so that each
// jump keeps its place in its 32-byte chunk while the loop moves to
// another part of its cache line and page. A figure that changes with the
// offset then shows that where the code sits matters on that CPU beyond
// the erratum, by as much as it changes.
const (
	// LoopOffsetStep is the 32-byte chunk an offset is a multiple of.
	LoopOffsetStep = 32
	// MaxLoopOffset is the largest offset: every chunk of a 4 KiB page.
	MaxLoopOffset = 4096 - LoopOffsetStep
)

// CheckLoopOffset reports whether off is a loop offset: a multiple of
// LoopOffsetStep from 0 to MaxLoopOffset.
func CheckLoopOffset(off int) error {
	if off < 0 || off > MaxLoopOffset || off%LoopOffsetStep != 0 {
		return fmt.Errorf("loop offset %d: a multiple of %d from 0 to %d", off, LoopOffsetStep, MaxLoopOffset)
	}
	return nil
}
