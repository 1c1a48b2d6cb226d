//go:build ptilab_fw_pcide

package efi

// firmwarePCIDE makes enter play a firmware that runs with CR4.PCIDE set
// and a PCID in its CR3 (fwPCID): before it records the firmware's state
// it sets CR4.PCIDE where the CPU has PCID (CPUID.01H:ECX[17]) and CR3's
// bits 11:0 are 0, then loads CR3 with fwPCID in them. For the Bochs test
// of boot clearing PCIDE and of the gate's order of CR4 and CR3
// (test/bochs_test.go, TestBochsFirmwarePCIDE): only test images are
// built with the tag ptilab_fw_pcide (host/image.Build's tags). No
// emulator's firmware runs with PCIDE, and QEMU's TCG has no PCID.
const firmwarePCIDE = 1
