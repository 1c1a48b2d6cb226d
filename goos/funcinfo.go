package goos

import "unsafe"

// What the Go runtime knows about a function of the image, for the fault
// path: whether its unwinder can walk through it.

// findfunc is the runtime's lookup of the function containing pc
// (runtime/symtab.go; exported to linkname by the runtime itself, "do not
// change the type signature", go.dev/issue/67401). It reads only static
// tables: safe in kernel mode.
//
//go:linkname findfunc runtime.findfunc
func findfunc(pc uintptr) funcInfo

// funcInfo mirrors the runtime's funcInfo: a *_func and a *moduledata.
type funcInfo struct {
	fn    *funcHeader
	datap unsafe.Pointer
}

// funcHeader mirrors the fixed head of the runtime's _func
// (runtime/runtime2.go, Go 1.26): entryOff, nameOff, args, deferreturn,
// pcsp, pcfile, pcln, npcdata, cuOffset, startLine (32 bits each), then
// the funcID and flag bytes. TestSPWrite checks the layout against the
// toolchain's own flags.
type funcHeader struct {
	_      [10]uint32
	funcID uint8
	flag   uint8
}

// funcFlagSPWrite is internal/abi.FuncFlagSPWrite: the function writes SP
// other than by adding or subtracting a constant (it switches stacks),
// which the unwinder's tables cannot describe.
const funcFlagSPWrite = 1 << 1

// spWrite reports whether pc lies in a function of the image flagged
// SPWRITE: assembly that switches stacks or worlds, such as pti's
// enterUser and runExit or goos's syscallEntry. The Go unwinder cannot
// walk through such a frame: a panic started below it makes the runtime
// throw "traceback: unexpected SPWRITE function" (runtime/traceback.go,
// unwinder.resolveInternal).
func spWrite(pc uint64) bool {
	f := findfunc(uintptr(pc))
	return f.fn != nil && f.fn.flag&funcFlagSPWrite != 0
}
