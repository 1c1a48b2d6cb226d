package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
)

// lines splits the output into lines, requiring a final newline.
func lines(t *testing.T, out string) []string {
	t.Helper()
	require.True(t, strings.HasSuffix(out, "\n"), "output ends with a newline: %q", out)
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// decode parses a `PREFIX {json}` line.
func decode(t *testing.T, line, prefix string) map[string]any {
	t.Helper()
	require.True(t, strings.HasPrefix(line, prefix+" {"), "line %q starts with %q", line, prefix+" {")
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, prefix+" ")), &m), line)
	return m
}

func TestPrintf(t *testing.T) {
	var out bytes.Buffer
	r := NewReporter(&out)
	r.Printf("cpu %s, %d MHz", "x", 3400)
	r.Printf("no args")
	assert.Equal(t, "cpu x, 3400 MHz\nno args\n", out.String())
}

func TestRecord(t *testing.T) {
	tests := []struct {
		name string
		rec  contract.Record
		want string // the exact line
	}{
		{"empty record", contract.OutOfMemory{}, `PTILAB {"kind":"oom","pool_bytes":0,"address":""}`},
		{
			"kind first, then the fields in order",
			contract.PlanError{Line: 3, Text: "n = x", Error: "bad", Consequence: "using the default"},
			`PTILAB {"kind":"plan-error","line":3,"text":"n = x","error":"bad","consequence":"using the default"}`,
		},
		{
			"nested values and escaping",
			contract.SyscallCounts{Counts: map[string]uint64{"write": 3, "mmap": 2}, Distinct: 2, Total: 5},
			`PTILAB {"kind":"syscalls","counts":{"mmap":2,"write":3},"distinct":2,"total":5,"enosys":0}`,
		},
		{
			"escaping",
			contract.Error{Name: "a \"q\"\n<b>", Error: "x"},
			`PTILAB {"kind":"error","name":"a \"q\"\n\u003cb\u003e","error":"x"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			r := NewReporter(&out)
			r.Record(tt.rec)
			ls := lines(t, out.String())
			require.Len(t, ls, 1, "one line")
			assert.Equal(t, tt.want, ls[0])
			m := decode(t, ls[0], "PTILAB")
			assert.Equal(t, tt.rec.Kind(), m["kind"])
			back, err := contract.Decode(tt.rec.Kind(), []byte(strings.TrimPrefix(ls[0], "PTILAB ")))
			require.NoError(t, err)
			assert.Equal(t, tt.rec, back, "the record decodes as written")
		})
	}
}

func TestRecordUnencodable(t *testing.T) {
	tests := []struct {
		name  string
		value float64
	}{
		{"NaN", math.NaN()},
		{"infinity", math.Inf(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			r := NewReporter(&out)
			r.Record(contract.Seed{Stats: contract.Stats{Mean: tt.value}})
			ls := lines(t, out.String())
			require.Len(t, ls, 1)
			m := decode(t, ls[0], "PTILAB")
			assert.Equal(t, "error", m["kind"])
			assert.Equal(t, "record seed", m["name"])
			assert.NotEmpty(t, m["error"])
			assert.Equal(t, 1, r.records, "still counted as a record")
		})
	}
}

func TestCheck(t *testing.T) {
	var out bytes.Buffer
	r := NewReporter(&out)
	r.Check("goroutines", true, "100 of 100", map[string]any{"n": 100})
	r.Check("sleep", false, "slept 3 ms", nil)
	r.Check("maps", true, "", nil)
	r.Check("alloc", false, "64 MiB", map[string]any{"mib": 64})

	ls := lines(t, out.String())
	require.Len(t, ls, 8, "a human line and a record per check")

	assert.Equal(t, "check goroutines   ok     100 of 100", ls[0])
	m := decode(t, ls[1], "PTILAB")
	assert.Equal(t, map[string]any{"kind": "check", "name": "goroutines", "ok": true, "detail": "100 of 100", "n": float64(100)}, m)

	assert.Equal(t, "check sleep        FAILED slept 3 ms", ls[2])
	m = decode(t, ls[3], "PTILAB")
	assert.Equal(t, map[string]any{"kind": "check", "name": "sleep", "ok": false, "detail": "slept 3 ms"}, m)

	assert.True(t, strings.HasPrefix(ls[4], "check maps"), ls[4])
	assert.Contains(t, ls[4], " ok ")
	m = decode(t, ls[5], "PTILAB")
	assert.Equal(t, true, m["ok"])

	assert.Contains(t, ls[6], "FAILED")
	m = decode(t, ls[7], "PTILAB")
	assert.Equal(t, "alloc", m["name"])
	assert.Equal(t, false, m["ok"])
	assert.Equal(t, float64(64), m["mib"])

	assert.Equal(t, []string{"sleep", "alloc"}, r.Failed(), "failures in order")
	assert.Equal(t, 4, r.checks)
	assert.Equal(t, 4, r.records)
}

func TestFailedEmpty(t *testing.T) {
	r := NewReporter(&bytes.Buffer{})
	assert.Empty(t, r.Failed())
	r.Check("a", true, "", nil)
	assert.Empty(t, r.Failed())
}

func TestEnd(t *testing.T) {
	type check struct {
		name string
		ok   bool
	}
	tests := []struct {
		name    string
		checks  []check
		records int // extra plain records
		fields  contract.End
		extra   map[string]any // fields wants besides the counts
		status  string
		exit    int
		passed  int
		failed  []any
	}{
		{"no checks", nil, 0, contract.End{}, nil, "ok", 0, 0, []any{}},
		{"all passed", []check{{"a", true}, {"b", true}}, 1, contract.End{ElapsedMs: 1234}, map[string]any{"elapsed_ms": 1234}, "ok", 0, 2, []any{}},
		{"one failed", []check{{"a", true}, {"b", false}, {"c", true}}, 2, contract.End{}, nil, "failed", 1, 2, []any{"b"}},
		{
			"failed names sorted",
			[]check{{"zeta", false}, {"alpha", false}, {"mid", true}, {"beta", false}},
			0, contract.End{UptimeMs: 5, PoolPeakMiB: 70, NMIs: 3}, map[string]any{"uptime_ms": 5, "pool_peak_mib": 70},
			"failed", 1, 1, []any{"alpha", "beta", "zeta"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			r := NewReporter(&out)
			for i := 0; i < tt.records; i++ {
				r.Record(contract.Timing{})
			}
			for _, c := range tt.checks {
				r.Check(c.name, c.ok, "", nil)
			}
			out.Reset()

			code := r.End(tt.fields)
			assert.Equal(t, tt.exit, code)

			ls := lines(t, out.String())
			require.Len(t, ls, 1, "exactly one line")
			m := decode(t, ls[0], "PTILAB-END")
			assert.Equal(t, tt.status, m["status"])
			assert.Equal(t, float64(tt.exit), m["exit"])
			assert.Equal(t, float64(len(tt.checks)), m["checks"])
			assert.Equal(t, float64(tt.passed), m["passed"])
			assert.Equal(t, tt.failed, m["failed"])
			assert.Equal(t, float64(tt.records+len(tt.checks)), m["records"])
			for k, v := range tt.extra {
				assert.EqualValues(t, v, m[k], "extra field %s", k)
			}
			assert.EqualValues(t, tt.fields.NMIs, m["nmis"], "nmis is always there, 0 too")
			assert.EqualValues(t, 0, m["failed_benchmarks"], "no benchmark failed")
			// kind, status, exit, records, checks, passed,
			// failed_benchmarks, failed, plan_errors, nmis and the
			// extras.
			assert.Len(t, m, 10+len(tt.extra), "no other fields: %v", m)
		})
	}
}

// TestEndCountsBenchmarksApart: failed benchmarks are counted apart from
// the checks, so that passed never goes below zero (it said -23 when a
// storm of NMIs failed the benchmarks of a run with 13 checks).
func TestEndCountsBenchmarksApart(t *testing.T) {
	var out bytes.Buffer
	r := NewReporter(&out)
	r.Check("a", true, "", nil)
	r.Check("b", false, "", nil)
	for _, n := range []string{"null", "lseek", "pingpong"} {
		r.Fail(contract.Error{Name: n, Error: "NMI storm"})
	}
	out.Reset()
	assert.Equal(t, contract.StatusFailed, r.End(contract.End{}))
	m := decode(t, lines(t, out.String())[0], "PTILAB-END")
	assert.Equal(t, "failed", m["status"])
	assert.EqualValues(t, 2, m["checks"])
	assert.EqualValues(t, 1, m["passed"])
	assert.EqualValues(t, 3, m["failed_benchmarks"])
	assert.Equal(t, []any{"b", "lseek", "null", "pingpong"}, m["failed"])
}

func TestEndDoesNotReorderFailed(t *testing.T) {
	r := NewReporter(&bytes.Buffer{})
	r.Check("b", false, "", nil)
	r.Check("a", false, "", nil)
	r.End(contract.End{})
	assert.Equal(t, []string{"b", "a"}, r.Failed(), "End sorts a copy")
}

// TestComputedFieldsWin checks that extra fields cannot replace what Check
// and End compute.
func TestComputedFieldsWin(t *testing.T) {
	var out bytes.Buffer
	r := NewReporter(&out)
	r.Check("sleep", false, "slept 3 ms", map[string]any{"ok": true, "name": "other", "detail": "x"})
	code := r.End(contract.End{Status: "ok", Exit: 0, Checks: 7, Passed: 7, BootMs: 9})
	ls := lines(t, out.String())
	require.Len(t, ls, 3)
	c := decode(t, ls[1], "PTILAB")
	assert.Equal(t, false, c["ok"])
	assert.Equal(t, "sleep", c["name"])
	assert.Equal(t, "slept 3 ms", c["detail"])
	e := decode(t, ls[2], "PTILAB-END")
	assert.Equal(t, 1, code)
	assert.Equal(t, "failed", e["status"])
	assert.EqualValues(t, 1, e["exit"])
	assert.EqualValues(t, 1, e["checks"])
	assert.EqualValues(t, 0, e["passed"])
	assert.EqualValues(t, 9, e["boot_ms"])
}
