//go:build 386

package main

import (
	"unsafe"

	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/linuxabi"
)

// Unix-domain stream socket pairs: package tasks's socket.go ported to
// layout.KState, with the same model of Linux's af_unix and its sk_sndbuf
// accounting (x86-64 Linux's struct sizes: i386's are smaller, which is
// not modelled) and the same differences from Linux; see there. A pair is
// pipe slots c and c+1, each the stream into one endpoint; descriptor
// layout.FDSocket+c is the endpoint that reads c and writes c^1.

// Linux's figures for the accounting: linuxabi's, as package tasks's.
const (
	sndbuf     = linuxabi.UnixSndbuf
	skbStruct  = linuxabi.SKBStruct
	skbShinfo  = linuxabi.SKBShinfo
	skbMaxHead = linuxabi.SKBMaxHead
	skbMaxData = linuxabi.SKBMaxData
)

// taskFrameVA is where the linux trampolines keep the running task's
// pt_regs frame: the top of the task stack (main.go's taskFrame).
const taskFrameVA = layout.KernelStackTop - uint32(unsafe.Sizeof(layout.PtRegs{}))

// skbTruesize is the truesize of a unix stream skb of n data bytes.
//
//go:nosplit
func skbTruesize(n uint32) uint32 {
	var frags uint32
	if n > skbMaxHead {
		frags = min(n, (n-skbMaxHead+4095)&^4095)
	}
	head := (n-frags+63)&^63 + skbShinfo
	alloc := uint32(512)
	for alloc < head {
		alloc *= 2
	}
	return alloc + skbStruct + frags
}

// sockWritable reports whether a writer to channel c may queue a skb.
//
//go:nosplit
func sockWritable(k *layout.KState, c uint32) bool {
	pp, sc := &k.Pipes[c], &k.Socks[c]
	return sc.WMem < sndbuf && pp.WPos-pp.RPos < layout.PipeSize && sc.N < layout.MaxSkbs
}

// sockWrite is write(2) on the endpoint that writes channel c.
//
//go:nosplit
func sockWrite(k *layout.KState, c, buf, n uint32) uint32 {
	pp, sc := &k.Pipes[c], &k.Socks[c]
	if pp.Readers == 0 {
		return neg(linuxabi.EPIPE)
	}
	if n == 0 {
		return 0
	}
	if !sockWritable(k, c) {
		block(k, layout.WaitSockWrite, c)
		return 0
	}
	wasEmpty := pp.WPos == pp.RPos
	var sent uint32
	for sent < n && sockWritable(k, c) {
		m := min(n-sent, skbMaxData, layout.PipeSize-(pp.WPos-pp.RPos))
		if !userOK(k, buf+sent, m, false) {
			if sent == 0 {
				return neg(linuxabi.EFAULT)
			}
			break
		}
		off := pp.WPos & (layout.PipeSize - 1)
		first := min(m, layout.PipeSize-off)
		copyBytes(pp.Ring+off, buf+sent, first)
		copyBytes(pp.Ring, buf+sent+first, m-first) // the ring wraps
		pp.WPos += m
		sc.Len[(sc.Head+sc.N)%layout.MaxSkbs] = uint16(m)
		sc.N++
		sc.WMem += skbTruesize(m)
		sent += m
	}
	if wasEmpty { // readers wait only on an empty queue
		wake(k, &pp.ReadHead, &pp.ReadTail)
	}
	return sent
}

// sockRead is read(2) on the endpoint that reads channel c: a pipe's
// read, then the skbs it took whole are freed and the writers woken when
// the charge has fallen to a quarter of sndbuf (unix_write_space).
//
//go:nosplit
func sockRead(k *layout.KState, c, buf, n uint32) uint32 {
	pp, sc := &k.Pipes[c], &k.Socks[c]
	if n == 0 {
		return 0
	}
	avail := pp.WPos - pp.RPos
	if avail == 0 {
		if pp.Writers == 0 {
			return 0
		}
		block(k, layout.WaitRead, c)
		return 0
	}
	m := min(n, avail)
	if !userOK(k, buf, m, true) {
		return neg(linuxabi.EFAULT)
	}
	off := pp.RPos & (layout.PipeSize - 1)
	first := min(m, layout.PipeSize-off)
	copyBytes(buf, pp.Ring+off, first)
	copyBytes(buf+first, pp.Ring, m-first) // the ring wraps
	pp.RPos += m
	sc.Used += m
	freed := false
	for sc.N > 0 && sc.Used >= uint32(sc.Len[sc.Head]) {
		l := uint32(sc.Len[sc.Head])
		sc.Used -= l
		sc.WMem -= skbTruesize(l)
		sc.Head = (sc.Head + 1) % layout.MaxSkbs
		sc.N--
		freed = true
	}
	if freed && sc.WMem<<2 <= sndbuf {
		wake(k, &pp.WriteHead, &pp.WriteTail)
	}
	return m
}

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
	proc := k.Tasks[k.Cur].Proc
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
	for c+1 < k.MappedRings && (k.Pipes[c].Ring != 0 || k.Pipes[c+1].Ring != 0) {
		c += 2
	}
	if c+1 >= k.MappedRings {
		return neg(linuxabi.ENFILE)
	}
	if !userOK(k, sv, 8, true) {
		return neg(linuxabi.EFAULT)
	}
	k.OpenPair(c)
	k.FDSlots[p.FDBase+fda] = layout.FDSocket + c
	k.FDSlots[p.FDBase+fdb] = layout.FDSocket + c + 1
	*(*uint32)(ptr(sv)) = fda
	*(*uint32)(ptr(sv + 4)) = fdb
	return 0
}
