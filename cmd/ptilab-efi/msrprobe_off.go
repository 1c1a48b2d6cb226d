//go:build !ptilab_msr_probe

package main

// msrProbeOn is false in every image but the test one: see msrprobe.go.
const msrProbeOn = false
