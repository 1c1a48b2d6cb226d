//go:build ptilab_selfnmi

package all

import (
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/bench/isolation"
)

// The test images' own benchmark (build tag ptilab_selfnmi): it comes
// after the others (this file's init runs after all.go's).
func init() { bench.Register(isolation.Ring3NMI) }
