//go:build 386

package main

import (
	"unsafe"

	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/linuxabi"
)

// Unix-domain stream socket pairs: their streams are package
// tasks/core's (the model of Linux's af_unix and its sk_sndbuf accounting,
// and how it differs from Linux, are written there); here, socketpair(2)
// makes a pair. A pair is pipe slots c and c+1, each the stream into one
// endpoint; descriptor layout.FDSocket+c is the endpoint that reads c and
// writes c^1.

// taskFrameVA is where the linux trampolines keep the running task's
// pt_regs frame: the top of the task stack (main.go's taskFrame).
const taskFrameVA = layout.KernelStackTop - uint32(unsafe.Sizeof(layout.PtRegs{}))

// socketpair is socketpair(2) (i386's direct call, 360) for the running
// task: as tasks/socket.go's, its two channels taken among the slots whose
// rings are mapped (KState.MappedRings).
//
//go:nosplit
func socketpair(k *layout.KState, domain, typ, protocol, sv uint32) uint32 {
	switch {
	case domain != linuxabi.AF_UNIX:
		return neg(linuxabi.EAFNOSUPPORT)
	case typ&^(linuxabi.SOCK_TYPE_MASK|linuxabi.SOCK_CLOEXEC) != 0:
		return neg(linuxabi.EINVAL)
	case typ&linuxabi.SOCK_TYPE_MASK != linuxabi.SOCK_STREAM:
		return neg(linuxabi.ESOCKTNOSUPPORT)
	case protocol != 0 && protocol != linuxabi.AF_UNIX:
		return neg(linuxabi.EPROTONOSUPPORT)
	}
	proc := k.Tasks[k.Core.Cur].Proc
	p := &k.Procs[proc]
	fda, fdb := uint32(0xffffffff), uint32(0xffffffff)
	for fd := uint32(0); fd < p.NFDs && fdb == 0xffffffff; fd++ {
		if k.FDSlots[p.FDBase+fd] == 0 {
			if fda == 0xffffffff {
				fda = fd
			} else {
				fdb = fd
			}
		}
	}
	if fdb == 0xffffffff {
		return neg(linuxabi.EMFILE)
	}
	c := uint32(0)
	for c+1 < k.MappedRings && (k.Rings[c] != 0 || k.Rings[c+1] != 0) {
		c += 2
	}
	if c+1 >= k.MappedRings {
		return neg(linuxabi.ENFILE)
	}
	if userRoom(k, sv, true) < 8 {
		return neg(linuxabi.EFAULT)
	}
	// layout's KState.OpenPair, inline: its call of core's would put a
	// routine of package layout into the text.
	k.Rings[c], k.Rings[c+1] = layout.PipeBase+c*layout.PipeSize, layout.PipeBase+(c+1)*layout.PipeSize
	k.Core.OpenPair(c)
	k.FDSlots[p.FDBase+fda] = layout.FDSocket + c
	k.FDSlots[p.FDBase+fdb] = layout.FDSocket + c + 1
	*(*uint32)(ptr(sv)) = fda
	*(*uint32)(ptr(sv + 4)) = fdb
	return 0
}
