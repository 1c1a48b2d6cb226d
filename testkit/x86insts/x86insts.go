// Package x86insts holds helpers over decoded x86 instructions for host
// tests of hand-written entry code: pti's routines in the built image
// (host/image) and the 32-bit kernel's blob (i386pae).
package x86insts

import "golang.org/x/arch/x86/x86asm"

// CR3Writes counts the MOV to CR3 of insts (MOV CR3, r64 in 64-bit code,
// MOV CR3, r32 in 32-bit code).
func CR3Writes(insts []x86asm.Inst) int {
	n := 0
	for _, in := range insts {
		if in.Op == x86asm.MOV && in.Args[0] == x86asm.CR3 {
			n++
		}
	}
	return n
}
