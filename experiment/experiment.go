// Package experiment is ptilab's experiment as data: a row per isolation
// mode, trampoline flavour, speculation-mitigation knob, way into the
// kernel (entry) and pt_regs copy method, one Config type for both worlds
// and one canonical key.
//
// It is imported by the 64-bit image (packages pti, i386pae, tasks,
// bench), which turns a Config into what to switch, and by the host tool
// (the records' subjects, the report, compare, the path-length bounds and
// the tests), which names and groups figures by Config.Key. The
// runtime-free 32-bit kernel takes only constants, from package
// experiment/sites.
//
// What a mode, flavour, knob, entry or copy means is its row here and
// nothing else: no code elsewhere ranges over an enum's order or tests a
// name's prefix. A new mode is a row of modeRows, its trampoline
// instantiation in each world that has it, and its path-length bounds.
//
// The package imports the standard library only.
package experiment

import (
	"fmt"
	"strings"
)

// Width is a world: 64 (long mode, package pti) or 32 (PAE, package
// i386pae). It is the records' "width".
type Width uint8

// The two worlds.
const (
	W64 Width = 64
	W32 Width = 32
)

// Worlds is a set of worlds.
type Worlds uint8

// The worlds as set members.
const (
	In64 Worlds = 1 << iota
	In32
)

// Has reports whether ws holds world w.
func (ws Worlds) Has(w Width) bool {
	switch w {
	case W64:
		return ws&In64 != 0
	case W32:
		return ws&In32 != 0
	}
	return false
}

// table is a row type's rows with their names: what the Parse, Row and
// String functions of Mode, Flavour, Mitigation, Entry and Copy look up.
type table[T ~uint8, R any] struct {
	what  string // the row type, as errors name it
	rows  []R
	names []string
}

func newTable[T ~uint8, R any](what string, rows []R, name func(R) string) table[T, R] {
	t := table[T, R]{what: what, rows: rows, names: make([]string, len(rows))}
	for i, r := range rows {
		t.names[i] = name(r)
	}
	return t
}

// all returns every value, in the rows' order.
func (t table[T, R]) all() []T {
	out := make([]T, len(t.rows))
	for i := range out {
		out[i] = T(i)
	}
	return out
}

// row returns i's row, or the zero row for an index beyond the rows.
func (t table[T, R]) row(i T) R {
	if int(i) < len(t.rows) {
		return t.rows[i]
	}
	var zero R
	return zero
}

// name returns i's name, or its type's name and number ("mode(9)")
// beyond the rows.
func (t table[T, R]) name(i T) string {
	if int(i) < len(t.names) {
		return t.names[i]
	}
	typ := fmt.Sprintf("%T", i)
	return fmt.Sprintf("%s(%d)", strings.ToLower(typ[strings.LastIndex(typ, ".")+1:]), i)
}

// parse returns the value named name, or an error listing the names.
func (t table[T, R]) parse(name string) (T, error) {
	for i, n := range t.names {
		if n == name {
			return T(i), nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q (one of %s)", t.what, name, strings.Join(t.names, ", "))
}
