//go:build !ptilab_fw_cs

package efi

// pretendFirmwareCS does nothing in every image but the test one: see
// fw_cs.go.
func pretendFirmwareCS() {}
