package pathlength

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/contract"
)

// TestExact: the exact paths are found by their records' subjects, with
// global pages or without; a path with REP string instructions or Go
// code, or none in the tables, has no exact length.
func TestExact(t *testing.T) {
	for _, tt := range []struct {
		s    contract.Subject
		want int64
		ok   bool
	}{
		{contract.Subject{Bench: "null", Width: 64, Mode: "off", Flavour: "minimal"}, 15, true},
		{contract.Subject{Bench: "null", Width: 64, Mode: "on", Flavour: "linux", Global: true}, 92, true},
		{contract.Subject{Bench: "null", Width: 64, Mode: "on+pcid", Flavour: "minimal"}, 23, true},
		{contract.Subject{Bench: "null32", Width: 32, Mode: "on", Entry: "int80", Flavour: "minimal", Global: true}, 19, true},
		{contract.Subject{Bench: "null32", Width: 32, Mode: "off", Entry: "sysenter", Flavour: "linux", Copy: "direct"}, 69, true},
		{contract.Subject{Bench: "null32", Width: 32, Mode: "off", Entry: "sysenter", Flavour: "linux", Copy: "movsl"}, 101, false},
		{contract.Subject{Bench: "null32", Width: 32, Mode: "off", Entry: "sysenter", Flavour: "linux", Copy: "direct", Stamps: true}, 0, false},
		{contract.Subject{Bench: "lseek", Width: 64, Mode: "off", Flavour: "linux"}, 245, false},
		{contract.Subject{Bench: "work", Width: 64, Mode: "off", Flavour: "minimal"}, 0, false},
	} {
		got, ok := Exact(tt.s)
		assert.Equal(t, tt.ok, ok, "%+v", tt.s)
		if ok {
			assert.Equal(t, tt.want, got, "%+v", tt.s)
		}
	}
	for k, p := range ICount {
		if p.Exact {
			assert.False(t, strings.Contains(k, "movs") || strings.Contains(k, "trim8"), "%s: REP string instructions", k)
		}
	}
}
