//go:build !ptilab_global_probe

package board

// checkGlobalProbe does nothing in every image but the test one: see
// globalprobe_on.go.
func checkGlobalProbe() {}
