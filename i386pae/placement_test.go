package i386pae

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/arch/x86/x86asm"

	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/testkit/jcc"
)

// userRoutine decodes user routine name of the blob and returns its
// offset from the user text's start, which Setup copies to the page at
// layout.UserCode (userVA): in its 32-byte chunk, the offset is the
// routine's address's.
func userRoutine(t *testing.T, name string) ([]jcc.Inst, uint64) {
	t.Helper()
	for _, s := range blobSymbols {
		if s.name == name {
			insts, err := jcc.Decode(blob[s.off:s.off+s.size], 32)
			require.NoError(t, err, name)
			return insts, uint64(s.off - offUserText)
		}
	}
	t.Fatalf("no routine %s in the blob", name)
	return nil, 0
}

// TestLoopPlacement checks the 32-bit timed loops' places (issue 21, item
// 3; the JCC erratum, package testkit/jcc), as pti's test does the 64-bit
// ones': each loop's head where loopHeads32 says; no jump from the head
// to the end of the timed region crossing or ending on a 32-byte boundary,
// for every way of calling (userSyscalls' empty loop, SYSENTER and INT
// 0x80 share the loop and its back-branch; SYSENTER's goes through
// vsyscall and returns from vsyscallRet) and with the user text shifted by
// any loop offset (a multiple of 32) too; and the padding before the first
// repeat, outside the timed regions and the sample intervals.
func TestLoopPlacement(t *testing.T) {
	loopHeads32 := map[string]int{"userSyscalls": 0, "userPing": 15}
	for name, head := range loopHeads32 {
		insts, base := userRoutine(t, name)
		l, err := jcc.FindLoop(insts, x86asm.ESI)
		require.NoError(t, err, name)
		assert.Equal(t, head, int(base+uint64(l.Head))%32, "%s: the loop head's offset in its 32-byte chunk", name)
		assert.True(t, l.Back.Fused(), "%s: DEC and JNE fuse", name)
		jumps := jcc.Jumps(insts, l.Head, l.End)
		require.NotEmpty(t, jumps, name)
		for _, off := range []uint64{0, 32, 64, 96} {
			for _, j := range jumps {
				assert.True(t, j.Clear(base+off), "%s shifted by %d: %v meets a 32-byte boundary (+%d in its chunk)", name, off, j, int(base+uint64(j.Start))%32)
			}
		}
		// The padding before repeat: nothing but NOPs between the first
		// instruction and the first of the sample call.
		for _, in := range insts[1:] {
			if in.Op != x86asm.NOP {
				assert.Equal(t, x86asm.CMP, in.Op, "%s: %v: the sample call's test follows the padding", name, in)
				break
			}
		}
		// NOPs in the loop only where no way runs them: after a JMP.
		for i := jcc.At(insts, l.Head); insts[i].Off < l.End; i++ {
			if in := insts[i]; in.Op == x86asm.NOP {
				assert.Contains(t, []x86asm.Op{x86asm.JMP, x86asm.NOP}, insts[i-1].Op, "%s: %v: a NOP run in the loop", name, in)
			}
		}
	}
	for _, name := range []string{"vsyscall", "vsyscallRet"} {
		insts, base := userRoutine(t, name)
		for _, off := range []uint64{0, 32, 64, 96} {
			for _, j := range jcc.Jumps(insts, 0, len(blob)) {
				assert.True(t, j.Clear(base+off), "%s shifted by %d: %v meets a 32-byte boundary", name, off, j)
			}
		}
	}
}

// TestPlaceUserText: the user text fits in the code pages at every loop
// offset; before Setup there is nothing to place.
func TestPlaceUserText(t *testing.T) {
	assert.LessOrEqual(t, int(offUserTextEnd-offUserText)+experiment.MaxLoopOffset, layout.UserCodePages*4096)
	assert.ErrorContains(t, PlaceUserText(32), "placed by Setup first")
}
