//go:build !ptilab_pmu_tsc

package bench

// pmuTSCStandIn is false in every image but the test one: see pmutsc.go.
const pmuTSCStandIn = false
