//go:build !ptilab_bug_pcide

package pti

// bugPCIDBeforePCIDE is false in every image but the test one: see
// bug_pcide.go.
const bugPCIDBeforePCIDE = false
