//go:build !ptilab_fw_pcide

package efi

// firmwarePCIDE is 0 in every image but the test one: see fw_pcide.go.
const firmwarePCIDE = 0
