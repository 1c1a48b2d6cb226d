//go:build 386

package main

import (
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/internal/linuxabi"
)

// Unix-domain stream socket pairs: package tasks's socket.go ported to
// layout.KState, with the same model of Linux's af_unix and its sk_sndbuf
// accounting (x86-64 Linux's struct sizes: i386's are smaller, which is
// not modelled) and the same differences from Linux; see there. A pair is
// pipe slots c and c+1, each the stream into one endpoint; descriptor
// layout.FDSocket+c is the endpoint that reads c and writes c^1.

// Linux's figures for the accounting (tasks/socket.go).
const (
	sndbuf     = 212992
	skbStruct  = 256
	skbShinfo  = 320
	skbMaxHead = 4096 - skbShinfo
	skbMaxData = skbMaxHead + 32768
)

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

// sockWritable reports whether a writer to channel pp may queue a skb.
//
//go:nosplit
func sockWritable(pp *layout.Pipe) bool {
	return pp.WMem < sndbuf && pp.WPos-pp.RPos < layout.PipeSize && pp.SkbN < layout.MaxSkbs
}

// sockWrite is write(2) on the endpoint that writes channel c.
//
//go:nosplit
func sockWrite(k *layout.KState, c, buf, n uint32) uint32 {
	pp := &k.Pipes[c]
	if pp.Readers == 0 {
		return neg(linuxabi.EPIPE)
	}
	if n == 0 {
		return 0
	}
	if !sockWritable(pp) {
		block(k, layout.WaitWrite, c)
		return 0
	}
	wasEmpty := pp.WPos == pp.RPos
	var sent uint32
	for sent < n && sockWritable(pp) {
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
		pp.Skb[(pp.SkbHead+pp.SkbN)%layout.MaxSkbs] = uint16(m)
		pp.SkbN++
		pp.WMem += skbTruesize(m)
		sent += m
	}
	if wasEmpty { // readers wait only on an empty queue
		wake(k, &pp.ReadHead, &pp.ReadTail)
	}
	return sent
}

// sockConsumed frees the skbs of channel pp that reads took whole (n
// more bytes read) and wakes its writers when the charge has fallen to a
// quarter of sndbuf.
//
//go:nosplit
func sockConsumed(k *layout.KState, pp *layout.Pipe, n uint32) {
	pp.HeadUsed += n
	freed := false
	for pp.SkbN > 0 && pp.HeadUsed >= uint32(pp.Skb[pp.SkbHead]) {
		l := uint32(pp.Skb[pp.SkbHead])
		pp.HeadUsed -= l
		pp.WMem -= skbTruesize(l)
		pp.SkbHead = (pp.SkbHead + 1) % layout.MaxSkbs
		pp.SkbN--
		freed = true
	}
	if freed && pp.WMem<<2 <= sndbuf {
		wake(k, &pp.WriteHead, &pp.WriteTail)
	}
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
