//go:build !386 || kernel32host

package core

// The ring copies in Go, over copyBytes (mem_amd64.go's, or the 32-bit
// kernel's host tests' in mem_host.go); the blob's are assembly
// (mem_386.s).

// fromRing copies c bytes (at most RingSize) from the ring at ring, from
// position pos, to buf: up to the ring's end, then from its start.
//
//go:nosplit
func fromRing(buf, ring uintptr, pos uint32, c uintptr) {
	off := uintptr(pos & (RingSize - 1))
	first := min(c, RingSize-off)
	copyBytes(buf, ring+off, first)
	if c > first { // the ring wraps
		copyBytes(buf+first, ring, c-first)
	}
}

// toRing copies c bytes (at most RingSize) from buf into the ring at
// ring, from position pos: up to the ring's end, then from its start.
//
//go:nosplit
func toRing(ring uintptr, pos uint32, buf, c uintptr) {
	off := uintptr(pos & (RingSize - 1))
	first := min(c, RingSize-off)
	copyBytes(ring+off, buf, first)
	if c > first { // the ring wraps
		copyBytes(ring, buf+first, c-first)
	}
}
