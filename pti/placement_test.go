package pti

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/arch/x86/x86asm"

	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/testkit/jcc"
)

// loopHeads are the timed programs' loop heads' offsets in their 32-byte
// chunks (user_amd64.s, TIMED's HEAD): the call loop's on a boundary, the
// empty loop's 2 bytes after it (where its branch is the call loop's),
// the ping-pong's and the sweep's where none of their jumps meets one.
var loopHeads = map[Program]int{Syscalls: 0, Empty: 2, Ping: 8, Sweep: 16}

// timedProgram decodes program p as Setup copies it (code) and finds its
// timed loop.
func timedProgram(t *testing.T, p Program) ([]jcc.Inst, jcc.Loop) {
	t.Helper()
	var e entryRoutines
	var k kernelRoutines
	var progs programTable
	routines(&e, &k, &progs)
	c, err := code(*progs.at(p))
	require.NoError(t, err, "%v", p)
	insts, err := jcc.Decode(c[:len(c)-len(entryEnd)], 64)
	require.NoError(t, err, "%v", p)
	l, err := jcc.FindLoop(insts, x86asm.RBP)
	require.NoError(t, err, "%v", p)
	return insts, l
}

// TestLoopPlacement checks the timed loops' places (issue 21, item 3; the
// JCC erratum, package testkit/jcc) in the programs as Setup copies them,
// to 64-byte aligned addresses (TestPlaceAligns): each loop's head where
// loopHeads says; no jump from the head to the end of the timed region
// (the loop, its back-branch macro-fused with its DEC, the check of
// RDTSCP after it) crossing or ending on a 32-byte boundary, with the
// programs shifted by any loop offset (a multiple of 32) too; the empty
// loop's back-branch at the call loop's place in its chunk; and the
// padding before the first sample call, so that every program runs the
// same instructions from its sample call to its loop's head (the PMU
// cross-check's per-repeat count, pmucheck.go, the same in the call and
// the empty loop).
func TestLoopPlacement(t *testing.T) {
	branch := map[Program]jcc.Jump{}
	var prologue []string
	for p, head := range loopHeads {
		insts, l := timedProgram(t, p)
		assert.Equal(t, head, l.Head%32, "%v: the loop head's offset in its 32-byte chunk", p)
		jumps := jcc.Jumps(insts, l.Head, l.End)
		require.NotEmpty(t, jumps, "%v", p)
		assert.True(t, l.Back.Fused(), "%v: DEC and JNE fuse", p)
		for _, off := range []uint64{0, 32, 64, 96} {
			for _, j := range jumps {
				assert.True(t, j.Clear(off), "%v shifted by %d: %v meets a 32-byte boundary", p, off, j)
			}
		}
		branch[p] = l.Back
		// From the first SYSCALL (the sample call) to the head: no NOP.
		first := -1
		for i, in := range insts {
			if in.Op == x86asm.SYSCALL {
				first = i
				break
			}
		}
		require.Positive(t, first, "%v: the sample call", p)
		var ops []string
		for _, in := range insts[first:jcc.At(insts, l.Head)] {
			assert.NotEqual(t, x86asm.NOP, in.Op, "%v: %v: padding after the sample call", p, in)
			ops = append(ops, in.Op.String())
		}
		if prologue == nil {
			prologue = ops
		}
		assert.Equal(t, prologue, ops, "%v: the instructions from the sample call to the loop", p)
	}
	assert.Equal(t, branch[Syscalls].Chunk(0), branch[Empty].Chunk(0), "the empty loop's branch where the call loop's is")
	assert.Equal(t, branch[Syscalls].Start%32, branch[Empty].Start%32, "the empty loop's DEC where the call loop's is")
}

// TestPlaceAligns checks that place copies the programs to 64-byte
// aligned addresses, where their loops' offsets (TestLoopPlacement) hold.
func TestPlaceAligns(t *testing.T) {
	var e entryRoutines
	var k kernelRoutines
	var link, at programTable
	routines(&e, &k, &link)
	saved := env.copied
	defer func() { env.copied = saved }()
	_, err := place(&link, &at, make([]byte, UserCodePages*4096), UserCode, "code pages")
	require.NoError(t, err)
	for _, p := range []Program{Syscalls, Empty, Ping, Sweep} {
		assert.Zero(t, *at.at(p)%64, "%v at %#x", p, *at.at(p))
	}
	// PlacePrograms' copy, offset bytes in: every loop offset fits, each
	// program 64-byte aligned plus the offset.
	for _, off := range []int{32, experiment.MaxLoopOffset} {
		var shifted programTable
		_, err := place(&link, &shifted, make([]byte, UserCodePages*4096)[off:], UserCode+uint64(off), "code pages")
		require.NoError(t, err, "offset %d", off)
		for _, p := range []Program{Syscalls, Empty, Ping, Sweep} {
			assert.Equal(t, uint64(off%64), *shifted.at(p)%64, "%v at offset %d", p, off)
		}
	}
	assert.ErrorContains(t, PlacePrograms(32), "placed by Setup first")
}
