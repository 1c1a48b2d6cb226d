//go:build ptilab_fw_pcide

package efi

// firmwarePCIDE makes enter play a firmware that runs with CR4.PCIDE and
// CR4.PGE set and a PCID in its CR3 (fwPCID): before it records the
// firmware's state it sets CR4.PCIDE and CR4.PGE where the CPU has PCID
// (CPUID.01H:ECX[17]) and PGE (CPUID.01H:EDX[13]) and CR3's bits 11:0
// are 0, then loads CR3 with fwPCID in them. For the Bochs test of boot
// clearing PCIDE and dropping the firmware's global entries, of the
// gate's order of CR4 and CR3, and of the global pages dropped before
// the return (test/bochs_test.go, TestBochsFirmwarePCIDE): only test images are
// built with the tag ptilab_fw_pcide (host/image.Build's tags). No
// emulator's firmware runs with PCIDE, and QEMU's TCG has no PCID.
const firmwarePCIDE = 1
