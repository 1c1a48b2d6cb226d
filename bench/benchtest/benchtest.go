// Package benchtest holds the host tests' helpers for the plan keys of
// the engine (package bench) and of the benchmark families: each family
// tests its own keys' values and errors with them.
package benchtest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/bench"
)

// PlanWith returns bench.DefaultPlan changed by f.
func PlanWith(f func(*bench.Plan)) bench.Plan {
	p := bench.DefaultPlan()
	f(&p)
	return p
}

// Valid is a plan text and the plan it must parse into without an error.
type Valid struct {
	Name, In string
	Want     bench.Plan
}

// Rejected is a plan line that must be rejected with an error containing
// Err.
type Rejected struct{ Name, Line, Err string }

// CheckValid parses each case's text and checks it gives no error and
// the plan wanted.
func CheckValid(t *testing.T, cases []Valid) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			p, errs := bench.ParsePlan([]byte(tt.In))
			assert.Empty(t, errs)
			assert.Equal(t, tt.Want, p)
		})
	}
}

// CheckErrors is CheckRejected of plan lines and the error each must
// give (a substring), each case named by its line.
func CheckErrors(t *testing.T, errs map[string]string) {
	t.Helper()
	var cases []Rejected
	for line, err := range errs {
		cases = append(cases, Rejected{Name: line, Line: line, Err: err})
	}
	CheckRejected(t, cases)
}

// CheckRejected checks that a plan of each case's one line keeps every
// default and reports the line, its number (1) and what is wrong with it.
func CheckRejected(t *testing.T, cases []Rejected) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			p, errs := bench.ParsePlan([]byte(tt.Line + "\n"))
			assert.Equal(t, bench.DefaultPlan(), p)
			require.Len(t, errs, 1, "%v", errs)
			assert.Equal(t, bench.PlanError{Line: 1, Text: tt.Line, Err: errs[0].Err}, errs[0])
			assert.Contains(t, errs[0].Err, tt.Err)
			assert.Equal(t, fmt.Sprintf("plan line 1 %q: %s", tt.Line, errs[0].Err), errs[0].Error())
		})
	}
}
