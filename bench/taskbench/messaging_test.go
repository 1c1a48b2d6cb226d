package taskbench

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMessageAndChecksum(t *testing.T) {
	m := message(41, 7, 3, 100)
	require.Len(t, m, 100)
	assert.Equal(t, uint32(7|3<<24), binary.LittleEndian.Uint32(m), "the loop number and the receiver")
	assert.Equal(t, uint32(41), binary.LittleEndian.Uint32(m[4:]), "the sender")
	assert.Equal(t, byte((41*7+99)%256), m[99], "the sender's pattern")
	assert.NotEqual(t, message(40, 7, 3, 100)[50], m[50], "senders' patterns differ")

	tests := []struct {
		name string
		m    []byte
		want uint64
	}{
		{"8 bytes: the quadword twice", []byte{1, 0, 0, 0, 0, 0, 0, 0}, 2},
		{"16 bytes: the last quadword twice", []byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}, 1 + 2 + 2},
		{"13 bytes: the tail overlaps", []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3}, 1 + (3 << 56)},
		{"carries wrap", append(binary.LittleEndian.AppendUint64(nil, 1<<63), make([]byte, 8)...), 1 << 63},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, msgSum(tc.m)) })
	}

	// A receiver's expected sum covers every message of its group once:
	// a lost, doubled or corrupted message changes it.
	want := expectedSum(1, 4, 3, 100)
	var got uint64
	for s := 20; s < 40; s++ {
		for l := 0; l < 3; l++ {
			got += msgSum(message(s, l, 4, 100))
		}
	}
	assert.Equal(t, want, got)
	assert.NotEqual(t, want, got-msgSum(message(25, 2, 4, 100)), "a lost message")
	assert.NotEqual(t, want, got+msgSum(message(25, 2, 4, 100)), "a doubled message")
	bad := message(25, 2, 4, 100)
	bad[60]++
	assert.NotEqual(t, want, got-msgSum(message(25, 2, 4, 100))+msgSum(bad), "a corrupted byte")
	assert.NotEqual(t, expectedSum(0, 4, 3, 100), want, "groups' senders differ")
	assert.NotEqual(t, expectedSum(1, 5, 3, 100), want, "a message for the receiver beside it")
}

func TestMessagingLayout(t *testing.T) {
	for _, threads := range []bool{false, true} {
		l := msgLayout{threads: threads, groups: 3, slot: 128}
		require.Equal(t, 120, l.workers())
		// Task 1 is group 0's first receiver, task 21 its first sender,
		// task 41 group 1's first receiver.
		for w, want := range map[int][3]any{1: {true, 0, 0}, 20: {true, 0, 19}, 21: {false, 0, 0}, 40: {false, 0, 19}, 41: {true, 1, 0}, 120: {false, 2, 19}} {
			recv, g, i := l.role(w)
			assert.Equal(t, want, [3]any{recv, g, i}, "task %d", w)
		}
		recv, _, _ := l.role(0)
		assert.False(t, recv, "task 0 is the starter")

		// The buffers and results do not overlap each other, the start
		// TSC or the starter's buffer, and fit the data pages. With
		// processes, the starter and each worker have pages of their own.
		type span struct{ lo, hi uint64 }
		starter := []span{{0, 8}, {msgStarterBuf, msgStarterBuf + uint64(l.workers())}}
		var workers []span
		for w := 1; w <= l.workers(); w++ {
			workers = append(workers, span{l.buf(w), l.buf(w) + l.slot})
			if r, _, _ := l.role(w); r {
				workers = append(workers, span{l.result(w), l.result(w) + 16})
			}
		}
		groups := [][]span{append(starter, workers...)}
		if !threads {
			groups = [][]span{starter, workers[:2]} // task 1 receives: its buffer and results
		}
		for _, spans := range groups {
			for i, a := range spans {
				assert.LessOrEqual(t, a.hi, uint64(l.dataPages()*4096), "span %d fits", i)
				for _, b := range spans[i+1:] {
					assert.True(t, a.hi <= b.lo || b.hi <= a.lo, "threads=%v: %v and %v overlap", threads, a, b)
				}
			}
		}
		if threads {
			assert.Equal(t, 5, l.dataPages(), "120 buffers of 128 bytes and 60 results")
		} else {
			assert.Equal(t, 1, l.dataPages())
		}
	}
}
