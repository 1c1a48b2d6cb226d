// Package hosttables is a page-table memory for host tests: the tables the
// code under test builds live in Go memory, keyed by made-up physical
// addresses, so that the same code that builds tables in frames in the
// image can be walked and checked on the host (gVisor's pagetables do the
// same with their allocator).
//
// It does not import amd64, so that amd64's own tests can use it: the table
// type is a parameter (amd64.Table).
package hosttables

import (
	"testing"
	"unsafe"
)

// Memory hands out zeroed tables of type T at addresses going up from a
// base in steps of T's size (a 4 KiB table: a page). It implements
// amd64.TableMemory, and pti.TableMemory with NewTablePair.
type Memory[T any] struct {
	// Tables holds the tables handed out, by address: tests count and
	// look them up.
	Tables map[uint64]*T

	tb    testing.TB
	next  uint64
	limit int
}

// New returns a Memory whose first table is at base and which hands out at
// most limit tables (limit < 0: no limit). Looking up an address where no
// table was handed out fails the test tb.
func New[T any](tb testing.TB, base uint64, limit int) *Memory[T] {
	return &Memory[T]{Tables: map[uint64]*T{}, tb: tb, next: base, limit: limit}
}

// size is the size of a table, the step between two addresses.
func (m *Memory[T]) size() uint64 { return uint64(unsafe.Sizeof(*new(T))) }

// NewTable returns the address of a new zeroed table, or false when limit
// tables are out.
func (m *Memory[T]) NewTable() (uint64, bool) {
	if m.limit >= 0 && len(m.Tables) >= m.limit {
		return 0, false
	}
	pa := m.next
	m.next += m.size()
	m.Tables[pa] = new(T)
	return pa, true
}

// NewTablePair returns the address of the first of two contiguous new
// tables, aligned to twice a table's size (it skips a table's worth of
// addresses when needed), or false when fewer than two tables are left.
func (m *Memory[T]) NewTablePair() (uint64, bool) {
	if m.limit >= 0 && len(m.Tables)+2 > m.limit {
		return 0, false
	}
	pair := 2 * m.size()
	m.next = (m.next + pair - 1) &^ (pair - 1)
	pa, _ := m.NewTable()
	m.NewTable()
	return pa, true
}

// Table returns the table at pa.
func (m *Memory[T]) Table(pa uint64) *T {
	tb, ok := m.Tables[pa]
	if !ok {
		m.tb.Fatalf("Table(%#x): no table at that address", pa)
	}
	return tb
}

// NewPageTable returns the page table that newPT (amd64.New,
// i386pae.New) makes in a new Memory (New(tb, base, limit)), and that
// Memory; newPT finding no table for the root fails tb.
func NewPageTable[T, P any](tb testing.TB, base uint64, limit int, newPT func(*Memory[T]) (P, bool)) (P, *Memory[T]) {
	tb.Helper()
	mem := New[T](tb, base, limit)
	pt, ok := newPT(mem)
	if !ok {
		tb.Fatalf("no table for the page table's root (at most %d tables)", limit)
	}
	return pt, mem
}

// Walked returns the mappings that walk, a page table's Walk
// (amd64.PageTable.Walk), reports, in its order.
func Walked[M any](walk func(func(M))) []M {
	var ms []M
	walk(func(m M) { ms = append(ms, m) })
	return ms
}
