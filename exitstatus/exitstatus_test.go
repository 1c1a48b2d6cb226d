package exitstatus

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestName(t *testing.T) {
	seen := map[string]uint64{}
	for s := uint64(PingWriteFailed); s <= MsgReadFailed; s++ {
		name, ok := Name(s)
		assert.True(t, ok, "status %d", s)
		if prev, dup := seen[name]; dup {
			t.Errorf("statuses %d and %d are both %q", prev, s, name)
		}
		seen[name] = s
	}
	for _, s := range []uint64{0, MsgReadFailed + 1, 1 << 40} {
		_, ok := Name(s)
		assert.False(t, ok, "status %d", s)
	}
}
