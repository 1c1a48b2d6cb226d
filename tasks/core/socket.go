package core

import "github.com/ptilab/ptilab/linuxabi"

// Unix-domain stream socket pairs, as socketpair(AF_UNIX, SOCK_STREAM, 0)
// makes them (net/unix/af_unix.c): two endpoints joined by a byte stream
// each way. Each direction is a channel, a slot of the pipes table with
// its ring; a pair takes two adjacent slots, 2k and 2k+1, and an endpoint
// is the channel it reads from, c, with the channel it writes to, c^1.
//
// What is modelled, after Linux 6.x on x86-64:
//   - read (sock_read_iter, unix_stream_read_generic): 0 for 0 bytes;
//     what is queued, up to n bytes, across skb boundaries; end of file
//     (0) once the peer has closed and the queue is empty; otherwise the
//     task waits. EFAULT for a bad buffer leaves the bytes queued.
//   - write (unix_stream_sendmsg): EPIPE once the peer has closed, even
//     for 0 bytes (SIGPIPE is not modelled: there are no signals); 0 for 0
//     bytes; then one skb per at most SKBMaxData bytes, each charged with
//     its truesize (skbTruesize) against the writing endpoint's
//     sk_sndbuf, UnixSndbuf bytes (net.core.wmem_default): a skb is
//     queued while the charge is below it (sock_alloc_send_pskb), so the
//     last may pass it. A write that can queue nothing waits; it is woken
//     when reads have freed skbs down to a quarter of sk_sndbuf
//     (unix_write_space's unix_writable) or the peer closes.
//   - close: the last descriptor of an endpoint ends its peer's stream
//     (the peer reads end of file, writes fail with EPIPE) and wakes the
//     peer's waiters.
//
// How it differs from Linux: the bytes sit in a ring of the channel's
// (RingSize bytes), which also bounds a queue: for messages of up to 384
// bytes sk_sndbuf binds first, as in Linux; for longer ones the ring may
// fill before the charge reaches sk_sndbuf and the writer waits earlier
// than Linux's would. A write that queued some bytes and then cannot go
// on returns that short count where Linux's would wait and go on. The
// struct sizes behind truesize are x86-64's (the 32-bit kernel uses the
// same ones: i386's are smaller). The reader's ECONNRESET after its peer
// closed with unread data, SO_SNDBUF, MSG_* flags, descriptor passing
// and credentials are not modelled.

// Sock is what a socket pair's channel keeps beside its pipe slot
// (Kernel.Socks, by slot): the truesize of its queued skbs, charged to
// the writing endpoint's sk_sndbuf (WMem), and the skbs' lengths, N of
// them in Len from Head, the first read Used bytes into.
type Sock struct {
	WMem, Used, Head, N uint32
	Len                 [MaxSkbs]uint16
}

// skbTruesize is the truesize of a unix stream skb of n data bytes
// (unix_stream_sendmsg, alloc_skb_with_frags): a kmalloc'd head of the
// linear bytes and the skb_shared_info, the struct sk_buff, and the page
// fragments of what does not fit in a page's head.
//
//go:nosplit
func skbTruesize(n uint32) uint32 {
	var frags uint32
	if n > linuxabi.SKBMaxHead {
		frags = min(n, (n-linuxabi.SKBMaxHead+4095)&^4095)
	}
	head := (n-frags+63)&^63 + linuxabi.SKBShinfo
	alloc := uint32(512) // kmalloc's size classes from 512 up to a page
	for alloc < head {
		alloc *= 2
	}
	return alloc + linuxabi.SKBStruct + frags
}

// OpenPair makes channels c and c+1 a socket pair's, open at both ends.
//
//go:nosplit
func (k *Kernel) OpenPair(c uint32) {
	for i := c; i < c+2; i++ {
		k.OpenPipe(i)
		k.Pipes[i].Sock = 1
		sc := &k.Socks[i]
		sc.WMem, sc.Used, sc.Head, sc.N = 0, 0, 0, 0
	}
}

// CloseSocket drops a reference to the endpoint that reads channel c and
// writes c^1: the last one ends both streams at this end (the peer's
// reader sees the end of file, its writer EPIPE).
//
//go:nosplit
func (k *Kernel) CloseSocket(c uint32) {
	k.CloseRead(c)
	k.CloseWrite(c ^ 1)
}

// sockWritable reports whether a writer to channel c may queue a skb: the
// charge is below sk_sndbuf, and the ring and the skb queue have room.
//
//go:nosplit
func (k *Kernel) sockWritable(c uint32) bool {
	pp, sc := &k.Pipes[c], &k.Socks[c]
	return sc.WMem < linuxabi.UnixSndbuf && pp.WPos-pp.RPos < RingSize && sc.N < MaxSkbs
}

// SockWrite is write(2) of n bytes from buf on the endpoint that writes
// channel c, whose ring is at ring (buf and room as PipeWrite's).
//
//go:nosplit
func (k *Kernel) SockWrite(c uint32, ring, buf, room, n uintptr) int32 {
	pp, sc := &k.Pipes[c], &k.Socks[c]
	if pp.Readers == 0 {
		return -linuxabi.EPIPE
	}
	if n == 0 {
		return 0
	}
	if !k.sockWritable(c) {
		k.block(WaitSockWrite, c)
		return 0
	}
	wasEmpty := pp.WPos == pp.RPos
	var sent uintptr
	for sent < n && k.sockWritable(c) {
		m := min(n-sent, linuxabi.SKBMaxData, uintptr(RingSize-(pp.WPos-pp.RPos)))
		if sent+m > room {
			if sent == 0 {
				return -linuxabi.EFAULT
			}
			break
		}
		toRing(ring, pp.WPos, buf+sent, m)
		pp.WPos += uint32(m)
		sc.Len[(sc.Head+sc.N)%MaxSkbs] = uint16(m)
		sc.N++
		sc.WMem += skbTruesize(uint32(m))
		sent += m
	}
	if wasEmpty { // readers wait only on an empty queue
		k.wake(&pp.ReadQ)
	}
	return int32(sent)
}

// sockRead is the end of a read of m bytes from socket channel c (Read):
// the skbs it took whole are freed and the writers woken when the charge
// has fallen to a quarter of sk_sndbuf (unix_write_space).
//
//go:nosplit
func (k *Kernel) sockRead(c, m uint32) {
	sc := &k.Socks[c]
	sc.Used += m
	freed := false
	for sc.N > 0 && sc.Used >= uint32(sc.Len[sc.Head]) {
		l := uint32(sc.Len[sc.Head])
		sc.Used -= l
		sc.WMem -= skbTruesize(l)
		sc.Head = (sc.Head + 1) % MaxSkbs
		sc.N--
		freed = true
	}
	if freed && sc.WMem<<2 <= linuxabi.UnixSndbuf {
		k.wake(&k.Pipes[c].WriteQ)
	}
}
