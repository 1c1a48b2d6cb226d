package tasks

import (
	"unsafe"

	"github.com/ptilab/ptilab/linuxabi"
)

// Unix-domain stream socket pairs, as socketpair(AF_UNIX, SOCK_STREAM, 0)
// makes them (net/unix/af_unix.c): two endpoints joined by a byte stream
// each way. Each direction is a channel, a slot of the pipes table with
// its ring; a pair takes two adjacent slots, 2k and 2k+1, and an endpoint
// is the channel it reads from, c, with the channel it writes to, c^1. A
// descriptor of endpoint c is object sockObjBase+c.
//
// What is modelled, after Linux 6.x on x86-64:
//   - read (sock_read_iter, unix_stream_read_generic): 0 for 0 bytes;
//     what is queued, up to n bytes, across skb boundaries; end of file
//     (0) once the peer has closed and the queue is empty; otherwise the
//     task waits. EFAULT for a bad buffer leaves the bytes queued.
//   - write (unix_stream_sendmsg): EPIPE once the peer has closed, even
//     for 0 bytes (SIGPIPE is not modelled: there are no signals); 0 for 0
//     bytes; then one skb per at most skbMaxData bytes, each charged with
//     its truesize (skbTruesize) against the writing endpoint's
//     sk_sndbuf, sndbuf bytes (net.core.wmem_default): a skb is queued
//     while the charge is below sndbuf (sock_alloc_send_pskb), so the
//     last may pass it. A write that can queue nothing waits; it is woken
//     when reads have freed skbs down to a quarter of sndbuf
//     (unix_write_space's unix_writable) or the peer closes.
//   - close: the last descriptor of an endpoint ends its peer's stream
//     (the peer reads end of file, writes fail with EPIPE) and wakes the
//     peer's waiters.
//
// How it differs from Linux: the bytes sit in a ring of the channel's
// (PipeCapacity bytes in a run), which also bounds a queue: for messages
// of up to 384 bytes sk_sndbuf binds first, as in Linux; for longer ones
// the ring may fill before the charge reaches sk_sndbuf and the writer
// waits earlier than Linux's would. A write that queued some bytes and
// then cannot go on returns that short count where Linux's would wait and
// go on. The struct sizes behind truesize are x86-64's (the 32-bit kernel
// uses the same ones: i386's are smaller). The reader's ECONNRESET after
// its peer closed with unread data, SO_SNDBUF, MSG_* flags, descriptor
// passing and credentials are not modelled.

// Linux's figures for the accounting (x86-64, Linux 6.x): linuxabi's.
const (
	sndbuf     = linuxabi.UnixSndbuf
	skbStruct  = linuxabi.SKBStruct
	skbShinfo  = linuxabi.SKBShinfo
	skbMaxHead = linuxabi.SKBMaxHead
	skbMaxData = linuxabi.SKBMaxData
	maxSkbs    = linuxabi.UnixMaxSkbs
)

// Socket pairs' descriptor objects follow the files'.
const sockObjBase = fileObjBase + maxFiles

// sockChan is what a socket pair's channel keeps beside its pipe slot:
// the truesize of its queued skbs, charged to the writing endpoint's
// sk_sndbuf, and the skbs' lengths, n of them from head, the first read
// used bytes into. It is apart from the pipe so that the pipes' code
// stays as it was.
type sockChan struct {
	wmem, used uint64
	head, n    uint16
	len        [maxSkbs]uint16
}

var socks [maxPipes]sockChan

// skbTruesize is the truesize of a unix stream skb of n data bytes
// (unix_stream_sendmsg, alloc_skb_with_frags): a kmalloc'd head of the
// linear bytes and the skb_shared_info, the struct sk_buff, and the page
// fragments of what does not fit in a page's head.
func skbTruesize(n uint64) uint64 {
	var frags uint64
	if n > skbMaxHead {
		frags = min(n, (n-skbMaxHead+4095)&^4095)
	}
	head := (n-frags+63)&^63 + skbShinfo
	alloc := uint64(512) // kmalloc's size classes from 512 up to a page
	for alloc < head {
		alloc *= 2
	}
	return alloc + skbStruct + frags
}

// NewSocketPair makes a socket pair whose one endpoint is descriptor afd
// of process aproc and the other bfd of bproc, with ringA and ringB as
// the buffers of the streams into a and into b (the caller keeps the
// memory, mapped in the kernel side of every process, until Reset). It
// returns the channel a reads (b reads the next one), or -1 when no two
// adjacent slots are free, a descriptor is out of range or taken, or a
// ring is empty.
func NewSocketPair(aproc, afd, bproc, bfd int, ringA, ringB []byte) int {
	if !fdFree(aproc, afd) || !fdFree(bproc, bfd) || aproc == bproc && afd == bfd || len(ringA) == 0 || len(ringB) == 0 {
		return -1
	}
	c := freePair()
	if c < 0 {
		return -1
	}
	openPair(c, uint64(uintptr(unsafe.Pointer(&ringA[0]))), uint64(len(ringA)), uint64(uintptr(unsafe.Pointer(&ringB[0]))), uint64(len(ringB)))
	procs[aproc].fds()[afd] = int16(sockObjBase+c) + 1
	procs[bproc].fds()[bfd] = int16(sockObjBase+c+1) + 1
	return c
}

// freePair returns the first of two adjacent free slots, -1 when none.
func freePair() int {
	for c := 0; c+1 < maxPipes; c += 2 {
		if !pipes[c].used && !pipes[c+1].used {
			return c
		}
	}
	return -1
}

// openPair makes channels c and c+1 a socket pair's, with their rings.
func openPair(c int, ringA, sizeA, ringB, sizeB uint64) {
	pipes[c] = pipe{used: true, readers: 1, writers: 1, rwait: waitList{-1, -1}, wwait: waitList{-1, -1}, ring: ringA, size: sizeA}
	pipes[c+1] = pipe{used: true, readers: 1, writers: 1, rwait: waitList{-1, -1}, wwait: waitList{-1, -1}, ring: ringB, size: sizeB}
	socks[c].wmem, socks[c].used, socks[c].head, socks[c].n = 0, 0, 0, 0
	socks[c+1].wmem, socks[c+1].used, socks[c+1].head, socks[c+1].n = 0, 0, 0, 0
}

// Rings for the socket pairs tasks make with socketpair(2): the kernel
// cannot allocate, so the run gives it rings beforehand (SetSocketRings).
var (
	spareRings [2 * maxPipes]uint64
	spareSize  uint64
	nspare     int
)

// SetSocketRings gives socketpair(2) rings of size bytes each, two per
// pair, at the addresses in rings (memory the caller keeps, mapped in the
// kernel side of every process); Reset forgets them.
func SetSocketRings(rings []uint64, size uint64) {
	nspare = copy(spareRings[:], rings)
	spareSize = size
}

// socketpair is socketpair(2) for the running task: an AF_UNIX
// SOCK_STREAM pair on the two lowest free descriptors, stored as two ints
// at sv. Errors as Linux's __sys_socketpair and unix_create:
// EAFNOSUPPORT for another family (Linux answers EOPNOTSUPP for families
// it has without socketpair), EINVAL for flags other than SOCK_CLOEXEC
// and SOCK_NONBLOCK, ESOCKTNOSUPPORT for another type (Linux also has
// SOCK_DGRAM and SOCK_SEQPACKET pairs; not modelled), EPROTONOSUPPORT
// for a protocol other than 0 or PF_UNIX, EMFILE without two free
// descriptors, ENFILE without a free pair or rings for it, EFAULT when sv
// is not the task's (the descriptors are not opened). SOCK_NONBLOCK is
// not modelled: EINVAL. SOCK_CLOEXEC is accepted (there is no exec).
func socketpair(domain, typ, protocol, sv uint64) int64 {
	if cur < 0 {
		return -linuxabi.EBADF
	}
	switch {
	case int32(domain) != linuxabi.AF_UNIX:
		return -linuxabi.EAFNOSUPPORT
	case uint32(typ)&^(linuxabi.SOCK_TYPE_MASK|linuxabi.SOCK_CLOEXEC) != 0:
		return -linuxabi.EINVAL
	case uint32(typ)&linuxabi.SOCK_TYPE_MASK != linuxabi.SOCK_STREAM:
		return -linuxabi.ESOCKTNOSUPPORT
	case int32(protocol) != 0 && int32(protocol) != linuxabi.AF_UNIX:
		return -linuxabi.EPROTONOSUPPORT
	}
	proc := int(tasks[cur].proc)
	fda, fdb := -1, -1
	for fd := 0; fd < int(procs[proc].nfds) && fdb < 0; fd++ {
		if procs[proc].fds()[fd] == 0 {
			if fda < 0 {
				fda = fd
			} else {
				fdb = fd
			}
		}
	}
	if fdb < 0 {
		return -linuxabi.EMFILE
	}
	c := freePair()
	if c < 0 || nspare < 2 {
		return -linuxabi.ENFILE
	}
	out := userBuf(sv, 8)
	if out == nil {
		return -linuxabi.EFAULT
	}
	nspare -= 2
	openPair(c, spareRings[nspare], spareSize, spareRings[nspare+1], spareSize)
	procs[proc].fds()[fda] = int16(sockObjBase+c) + 1
	procs[proc].fds()[fdb] = int16(sockObjBase+c+1) + 1
	*(*int32)(unsafe.Pointer(&out[0])) = int32(fda)
	*(*int32)(unsafe.Pointer(&out[4])) = int32(fdb)
	return 0
}

// sockWritable reports whether a writer to channel c may queue a skb:
// the charge is below sndbuf, and the ring and the skb queue have room.
func sockWritable(c int) bool {
	pp, sc := &pipes[c], &socks[c]
	return sc.wmem < sndbuf && pp.wpos-pp.rpos < pp.size && sc.n < maxSkbs
}

// sockWrite is write(2) on the endpoint that writes channel c.
func sockWrite(c int, buf, n uint64) int64 {
	pp, sc := &pipes[c], &socks[c]
	if pp.readers == 0 {
		return -linuxabi.EPIPE
	}
	if n == 0 {
		return 0
	}
	if !sockWritable(c) {
		block(waitSockWrite, c, &pp.wwait)
		return 0
	}
	wasEmpty := pp.wpos == pp.rpos
	var sent uint64
	for sent < n && sockWritable(c) {
		k := min(n-sent, skbMaxData, pp.size-(pp.wpos-pp.rpos))
		src := userBuf(buf+sent, k)
		if src == nil {
			if sent == 0 {
				return -linuxabi.EFAULT
			}
			break
		}
		ring := pp.buf()
		if m := copy(ring[pp.wpos%pp.size:], src); m < len(src) {
			copy(ring, src[m:]) // the ring wraps
		}
		pp.wpos += k
		sc.len[(int(sc.head)+int(sc.n))%maxSkbs] = uint16(k)
		sc.n++
		sc.wmem += skbTruesize(k)
		sent += k
	}
	if wasEmpty { // readers wait only on an empty queue
		wake(&pp.rwait)
	}
	return int64(sent)
}

// sockRead is read(2) on the endpoint that reads channel c: a pipe's
// read, then the skbs it took whole are freed and the writers woken when
// the charge has fallen to a quarter of sndbuf (unix_write_space).
func sockRead(c int, buf, n uint64) int64 {
	pp, sc := &pipes[c], &socks[c]
	if n == 0 {
		return 0
	}
	avail := pp.wpos - pp.rpos
	if avail == 0 {
		if pp.writers == 0 {
			return 0
		}
		block(waitRead, c, &pp.rwait)
		return 0
	}
	k := min(n, avail)
	dst := userBuf(buf, k)
	if dst == nil {
		return -linuxabi.EFAULT
	}
	ring := pp.buf()
	if m := copy(dst, ring[pp.rpos%pp.size:]); m < len(dst) {
		copy(dst[m:], ring) // the ring wraps
	}
	pp.rpos += k
	sc.used += k
	freed := false
	for sc.n > 0 && sc.used >= uint64(sc.len[sc.head]) {
		l := uint64(sc.len[sc.head])
		sc.used -= l
		sc.wmem -= skbTruesize(l)
		sc.head = (sc.head + 1) % maxSkbs
		sc.n--
		freed = true
	}
	if freed && sc.wmem<<2 <= sndbuf {
		wake(&pp.wwait)
	}
	return int64(k)
}
