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

// parse finds name among rows (by their names) and returns its index.
func parse(what, name string, names []string) (int, error) {
	for i, n := range names {
		if n == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q (one of %s)", what, name, strings.Join(names, ", "))
}

// nameOf returns names[i], or what(i) for an index beyond the rows.
func nameOf(what string, i int, names []string) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("%s(%d)", what, i)
}
