package goos

import "github.com/ptilab/ptilab/amd64"

// ASI's sensitive frames (package pti, mode asi): frames for user data
// (the processes' pages, the tasks kernel's pipe and socket rings, and
// the leak oracle's sensitive secret that stands for them), carved
// from 2 MiB blocks of the pool that hold nothing else, so that the
// nonsensitive kernel table (pti.SyncNonsensitive) leaves each block out
// with one PD entry. The blocks are never given back.

// maxSensitiveBlocks bounds the sensitive blocks (256 MiB).
const maxSensitiveBlocks = 128

var sensitive struct {
	blocks    [maxSensitiveBlocks]uint64 // physical addresses, in order taken
	n         int
	next, end uint64 // the free part of the last run of blocks
}

// AllocSensitiveFrames returns n zeroed, contiguous 4 KiB frames in the
// sensitive blocks, taking new blocks (contiguous, 2 MiB-aligned) from
// the pool when the last ones have no room; false when the pool or
// maxSensitiveBlocks runs out. Go code may call it.
func AllocSensitiveFrames(n uint64) (uint64, bool) {
	size := n * pageSize
	if n == 0 {
		return 0, false
	}
	if sensitive.end-sensitive.next < size {
		nb := (size + amd64.PageSize2M - 1) / amd64.PageSize2M
		if uint64(sensitive.n)+nb > maxSensitiveBlocks {
			return 0, false
		}
		pa, ok := pool.allocContig(nb*amd64.PageSize2M/pageSize, amd64.PageSize2M)
		if !ok {
			return 0, false
		}
		for i := range nb {
			sensitive.blocks[sensitive.n] = pa + i*amd64.PageSize2M
			sensitive.n++
		}
		sensitive.next, sensitive.end = pa, pa+nb*amd64.PageSize2M
	}
	pa := sensitive.next
	sensitive.next += size
	return pa, true
}

// SensitiveBlocks returns the physical addresses of the sensitive blocks
// taken so far, each amd64.PageSize2M long.
func SensitiveBlocks() []uint64 { return sensitive.blocks[:sensitive.n] }
