// Package contract is what ptilab's image and its host tool share: the
// tags of the image's serial lines, the run statuses, the QEMU devices the
// runner sets up for the image, and the records a run writes (records.go).
//
// It imports no project package but the model (package experiment, which
// imports the standard library only), so that kernel-mode code of the
// image (goos, board) and the host tool (cmd/ptilab, host/qemu) both use
// it; its constants are safe anywhere, its record types (and their
// canonical keys, key.go) are for Go code outside kernel mode.
package contract

// Tags that start the image's machine-readable serial lines (the design
// notes, "Output contract"). A line whose first word is RecordTag or EndTag
// carries one JSON object after one space.
const (
	RecordTag = "PTILAB"       // one result: "PTILAB {json}", with "kind"
	EndTag    = "PTILAB-END"   // the last line: "PTILAB-END {json}" (type End)
	FaultTag  = "PTILAB-FAULT" // starts the first line of a CPU exception's register dump
)

// Statuses of a run: the "exit" field of PTILAB-END, the image's exit
// status (under QEMU through the debug-exit device), and the exit status
// of `ptilab qemu` and `ptilab bochs`.
const (
	StatusOK          = 0 // every check passed
	StatusFailed      = 1 // a check or benchmark failed
	StatusGoPanic     = 2 // the Go runtime exited with status 2: a panic or fatal error
	StatusFault       = 3 // a fatal CPU exception
	StatusDeadlock    = 4 // no thread of the runtime could run and none waited with a timeout
	StatusBootFailed  = 5 // the kernel could not start the runtime
	StatusOutOfMemory = 6 // the kernel's frame pool was used up
)

// QEMU's isa-debug-exit device as ptilab's runner configures it
// (-device isa-debug-exit,iobase=DebugExitPort,iosize=1): writing v to the
// port makes QEMU exit with status (v<<1)|1. The image writes its status
// plus DebugExitBase, so that QEMU's own failures (exit status 1) never
// read as a status; the runner undoes it.
const (
	DebugExitPort = 0xf4
	DebugExitBase = 0x10
)

// FwCfgIcount is the fw_cfg file (QEMU's -fw_cfg name=...,string=1) by
// which the runner tells the image that QEMU runs with -icount shift=0:
// the TSC counts instructions, and the image labels its figures so.
const FwCfgIcount = "opt/ptilab/icount"
