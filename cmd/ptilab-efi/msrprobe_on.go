//go:build ptilab_msr_probe

package main

// msrProbeOn: see msrprobe.go. Only test images are built with the tag
// ptilab_msr_probe (host/image.Build's tags).
const msrProbeOn = true
