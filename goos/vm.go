package goos

// The Go runtime's virtual address space: which ranges it reserved (mmap
// with PROT_NONE), committed (PROT_READ|PROT_WRITE) or released. This file
// is the bookkeeping alone; mm.go backs committed pages with physical
// frames when they are first touched. A reservation costs an entry here,
// no memory.

import "github.com/ptilab/ptilab/linuxabi"

const pageSize = 4096

// maxVMAs bounds the number of distinct ranges. Adjacent ranges with equal
// protections merge, so the runtime's few hundred mmap calls need far
// fewer.
const maxVMAs = 1024

// vma is one range [start, end) with one protection.
type vma struct {
	start, end uint64
	prot       uint8
}

// addressSpace is a sorted set of non-overlapping ranges within [lo, hi).
type addressSpace struct {
	v      [maxVMAs]vma
	n      int
	lo, hi uint64 // where mappings may go
}

// lookup returns the index of the range holding addr.
func (a *addressSpace) lookup(addr uint64) (int, bool) {
	i := a.search(addr)
	if i < a.n && a.v[i].start <= addr {
		return i, true
	}
	return i, false
}

// search returns the first range whose end is above addr.
func (a *addressSpace) search(addr uint64) int {
	lo, hi := 0, a.n
	for lo < hi {
		m := (lo + hi) / 2
		if a.v[m].end <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// isFree reports whether [start, end) lies within [lo, hi) and overlaps no
// range.
func (a *addressSpace) isFree(start, end uint64) bool {
	if start < a.lo || end > a.hi || end <= start {
		return false
	}
	i := a.search(start)
	return i == a.n || a.v[i].start >= end
}

// covered reports whether every byte of [start, end) is in some range.
func (a *addressSpace) covered(start, end uint64) bool {
	i := a.search(start)
	for addr := start; addr < end; i++ {
		if i >= a.n || a.v[i].start > addr {
			return false
		}
		addr = a.v[i].end
	}
	return true
}

// findFree returns a free, page-aligned range of length bytes: at hint if
// [hint, hint+length) is free, otherwise the highest free range, as Linux's
// top-down allocator does.
func (a *addressSpace) findFree(hint, length uint64) (uint64, bool) {
	if hint != 0 && hint%pageSize == 0 && hint+length > hint && a.isFree(hint, hint+length) {
		return hint, true
	}
	top := a.hi
	for i := a.n - 1; i >= -1; i-- {
		bottom := a.lo
		if i >= 0 {
			bottom = a.v[i].end
		}
		if top >= bottom && top-bottom >= length {
			return top - length, true
		}
		if i >= 0 {
			top = a.v[i].start
		}
	}
	return 0, false
}

// insert adds [start, end) with prot; the range must be free. It merges
// with neighbours of equal protection and returns false when the table is
// full.
func (a *addressSpace) insert(start, end uint64, prot uint8) bool {
	i := a.search(start)
	mergeLeft := i > 0 && a.v[i-1].end == start && a.v[i-1].prot == prot
	mergeRight := i < a.n && a.v[i].start == end && a.v[i].prot == prot
	switch {
	case mergeLeft && mergeRight:
		a.v[i-1].end = a.v[i].end
		a.del(i)
	case mergeLeft:
		a.v[i-1].end = end
	case mergeRight:
		a.v[i].start = start
	default:
		if a.n == len(a.v) {
			return false
		}
		copy(a.v[i+1:a.n+1], a.v[i:a.n])
		a.v[i] = vma{start, end, prot}
		a.n++
	}
	return true
}

func (a *addressSpace) del(i int) {
	copy(a.v[i:a.n-1], a.v[i+1:a.n])
	a.n--
	a.v[a.n] = vma{}
}

// remove takes [start, end) out of every range, splitting a range that
// holds it inside; an empty range removes nothing. It returns false (changing nothing) when the table has
// no room for the split.
func (a *addressSpace) remove(start, end uint64) bool {
	if end <= start {
		return true
	}
	i := a.search(start)
	if i < a.n && a.v[i].start < start && a.v[i].end > end {
		if a.n == len(a.v) {
			return false
		}
		r := a.v[i]
		a.v[i].end = start
		copy(a.v[i+2:a.n+1], a.v[i+1:a.n])
		a.v[i+1] = vma{end, r.end, r.prot}
		a.n++
		return true
	}
	for i < a.n && a.v[i].start < end {
		r := &a.v[i]
		switch {
		case r.start < start:
			r.end = start
			i++
		case r.end > end:
			r.start = end
			i++
		default:
			a.del(i)
		}
	}
	return true
}

// protect sets prot on [start, end), which must be covered and not empty.
// It returns false (changing nothing) when it is not covered or the table
// is too full to split.
func (a *addressSpace) protect(start, end uint64, prot uint8) bool {
	if end <= start || !a.covered(start, end) || a.n+2 > len(a.v) {
		return false
	}
	a.remove(start, end)
	return a.insert(start, end, prot)
}

// reserved returns the total bytes in ranges, and in ranges with some
// access.
func (a *addressSpace) reserved() (all, accessible uint64) {
	for i := 0; i < a.n; i++ {
		n := a.v[i].end - a.v[i].start
		all += n
		if a.v[i].prot != linuxabi.PROT_NONE {
			accessible += n
		}
	}
	return
}
