//go:build ptilab_bug_pcide

package pti

// bugPCIDBeforePCIDE makes Start hand enterUser the kernel side's CR3 with
// its PCID in bits 11:0 (KernelCR3) where the PML4 alone belongs, so that
// CR4.PCIDE is then set while CR3[11:0] is not 0: MOV to CR4 raises #GP(0)
// (SDM Vol. 2B, MOV to/from control registers; Vol. 3A, 4.10.1). A bug
// planted on purpose, for the Bochs test that shows the suite catches it
// (test/bochs_test.go, TestBochsPCIDEOrder): only test images are built with
// the tag ptilab_bug_pcide (host/image.Build's tags). QEMU's TCG, which
// has no PCID, never runs this path.
const bugPCIDBeforePCIDE = true
