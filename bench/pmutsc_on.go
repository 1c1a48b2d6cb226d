//go:build ptilab_pmu_tsc

package bench

// pmuTSCStandIn: see pmutsc.go. Only test images are built with the tag
// ptilab_pmu_tsc (host/image.Build's tags).
const pmuTSCStandIn = true
