// Package sites is the constants-only part of the experiment model
// (package experiment) that the runtime-free 32-bit kernel
// (i386pae/kernel32) and both worlds' assembly take: one numbering of the
// speculation-mitigation knobs and of the trampoline and context-switch
// sites that turn them on.
//
// Knob k is bit k of experiment.Knobs, and its site, where it has one, is
// the same bit of the trampoline's site word (pti's entryData.Sites, the
// 32-bit kernel's layout.CPUData.Sites): a world's assembly tests
// const_siteX from its own go_asm.h, whose value is this package's SiteX,
// so that the 64-bit and 32-bit sites can never be numbered differently.
//
// It holds constants only: importing it links no code into the blob.
package sites

// The knobs, in the model's order (experiment.Mitigation).
const (
	VERW      = iota // VERW before the return to ring 3 (Linux's CLEAR_CPU_BUFFERS)
	IBRS             // IA32_SPEC_CTRL.IBRS on entry, cleared before the return (IBRS_ENTER/IBRS_EXIT)
	IBPB             // IA32_PRED_CMD.IBPB on a switch to another process
	RSB              // the return stack buffer stuffed on a switch to another process
	BHB              // clear_bhb_loop on entry
	LFENCE           // LFENCE after the entry's SWAPGS
	Retpoline        // the dispatch's indirect call through a retpoline thunk
	L1D              // IA32_FLUSH_CMD.L1D_FLUSH on the asi modes' way back to the nonsensitive table

	// Knobs is the number of knobs.
	Knobs
)

// The site bits: bit k turns on knob k's site.
const (
	SiteVERW      = 1 << VERW
	SiteIBRS      = 1 << IBRS
	SiteIBPB      = 1 << IBPB
	SiteRSB       = 1 << RSB
	SiteBHB       = 1 << BHB
	SiteLFENCE    = 1 << LFENCE
	SiteRetpoline = 1 << Retpoline
	SiteL1D       = 1 << L1D
)
