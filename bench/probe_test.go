package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/pti"
)

// The deferred modes' area is present (a protection fault, P=1) under
// those modes only, off included among the others (P=0: not mapped).
func TestProbeDeferredArea(t *testing.T) {
	target := ProbeTarget{Name: "defer area", Address: pti.EntryTrampStack, Kind: DeferredArea}
	for _, m := range experiment.Modes() {
		fault := func(ec uint64) Exit {
			return Exit{Faulted: true, Vector: amd64.VectorPF, ErrorCode: ec, CS: 0x33, CR2: pti.EntryTrampStack}
		}
		present, absent := fault(amd64.PF_P|amd64.PF_U), fault(amd64.PF_U)
		assert.Equal(t, m.Deferred(), target.expected(m, present), "%v: P=1", m)
		assert.Equal(t, !m.Deferred(), target.expected(m, absent), "%v: P=0", m)
		assert.False(t, target.expected(m, Exit{Exited: true}), "%v: a read that succeeds", m)
	}
}
