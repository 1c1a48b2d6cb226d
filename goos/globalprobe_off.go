//go:build !ptilab_global_probe

package goos

import "github.com/ptilab/ptilab/board"

// plantGlobalProbe does nothing in every image but the test one: see
// globalprobe_on.go.
func plantGlobalProbe(board.EndAction) {}
