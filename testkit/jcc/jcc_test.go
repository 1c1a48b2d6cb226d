package jcc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/arch/x86/x86asm"
)

func decode(t *testing.T, code []byte, mode int) []Inst {
	t.Helper()
	insts, err := Decode(code, mode)
	require.NoError(t, err)
	return insts
}

// TestClear: a jump must fit in its 32-byte chunk with a byte to spare.
func TestClear(t *testing.T) {
	j := Jump{Start: 0, End: 2}
	assert.True(t, j.Clear(29), "bytes 29 and 30")
	assert.False(t, j.Clear(30), "ends on the boundary (byte 31)")
	assert.False(t, j.Clear(31), "crosses it")
	assert.True(t, j.Clear(32))
	assert.Equal(t, 30, j.Chunk(29))
}

// TestFuses checks the macro-fusion rules on decoded pairs.
func TestFuses(t *testing.T) {
	for _, c := range []struct {
		name string
		code []byte
		fuse bool
	}{
		{"DEC RBP; JNE", []byte{0x48, 0xff, 0xcd, 0x75, 0xf0}, true},
		{"TEST R9, R9; JNE", []byte{0x4d, 0x85, 0xc9, 0x75, 0x08}, true},
		{"CMP RAX, 1; JNE", []byte{0x48, 0x83, 0xf8, 0x01, 0x75, 0x00}, true},
		{"CMP RAX, 1; JS: not with the sign flag", []byte{0x48, 0x83, 0xf8, 0x01, 0x78, 0x00}, false},
		{"DEC RBP; JB: INC and DEC not with the carry", []byte{0x48, 0xff, 0xcd, 0x72, 0x00}, false},
		{"CMP [RAX], 0; JNE: not memory and an immediate", []byte{0x83, 0x38, 0x00, 0x75, 0x00}, false},
		{"MOV RAX, RBX; JNE", []byte{0x48, 0x89, 0xd8, 0x75, 0x00}, false},
	} {
		in := decode(t, c.code, 64)
		require.Len(t, in, 2, c.name)
		assert.Equal(t, c.fuse, Fuses(in[0].Inst, in[1].Inst), c.name)
		js := Jumps(in, 0, len(c.code))
		require.Len(t, js, 1, c.name)
		assert.Equal(t, c.fuse, js[0].Fused(), c.name)
	}
}

// TestFindLoop finds a counted loop and the end of its timed region:
// head: DEC ESI; JNE head; RDTSCP.
func TestFindLoop(t *testing.T) {
	in := decode(t, []byte{0x90, 0x4e, 0x75, 0xfc, 0x0f, 0x01, 0xf9}, 32)
	l, err := FindLoop(in, x86asm.ESI)
	require.NoError(t, err)
	assert.Equal(t, Loop{Head: 0, Branch: 2, End: 4, Back: Jump{Start: 1, End: 4, Insts: in[1:3]}}, l)
	_, err = FindLoop(in, x86asm.EDI)
	assert.Error(t, err)
	assert.True(t, IsJump(in[2].Inst))
	assert.False(t, IsJump(in[0].Inst))
}
