package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		name   string
		kind   string
		fields map[string]any
		want   string // the exact line
	}{
		{"nil fields", "start", nil, `PTILAB {"kind":"start"}`},
		{"empty fields", "start", map[string]any{}, `PTILAB {"kind":"start"}`},
		{
			"keys sorted",
			"machine",
			map[string]any{"tsc_hz": uint64(3400000000), "cpu": "AMD EPYC", "pcid": true, "a": 1.5},
			`PTILAB {"a":1.5,"cpu":"AMD EPYC","kind":"machine","pcid":true,"tsc_hz":3400000000}`,
		},
		{
			"kind argument wins over a kind field",
			"check",
			map[string]any{"kind": "bogus", "x": 1},
			`PTILAB {"kind":"check","x":1}`,
		},
		{
			"nested values and escaping",
			"syscalls",
			map[string]any{"counts": map[string]int{"write": 3, "mmap": 2}, "s": "a \"q\"\n<b>"},
			`PTILAB {"counts":{"mmap":2,"write":3},"kind":"syscalls","s":"a \"q\"\n\u003cb\u003e"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			r := NewReporter(&out)
			r.Record(tt.kind, tt.fields)
			ls := lines(t, out.String())
			require.Len(t, ls, 1, "one line")
			assert.Equal(t, tt.want, ls[0])
			m := decode(t, ls[0], "PTILAB")
			assert.Equal(t, tt.kind, m["kind"])
		})
	}
}

func TestRecordDoesNotChangeFields(t *testing.T) {
	var out bytes.Buffer
	r := NewReporter(&out)
	fields := map[string]any{"x": 1}
	r.Record("k", fields)
	assert.Equal(t, map[string]any{"x": 1}, fields)
}

func TestRecordUnencodable(t *testing.T) {
	tests := []struct {
		name  string
		value any
	}{
		{"NaN", math.NaN()},
		{"infinity", math.Inf(1)},
		{"channel", make(chan int)},
		{"function", func() {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			r := NewReporter(&out)
			r.Record("measure", map[string]any{"v": tt.value})
			ls := lines(t, out.String())
			require.Len(t, ls, 1)
			m := decode(t, ls[0], "PTILAB")
			assert.Equal(t, "error", m["kind"])
			assert.Equal(t, "measure", m["of"])
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
		fields  map[string]any
		status  string
		exit    int
		passed  int
		failed  []any
	}{
		{"no checks", nil, 0, nil, "ok", 0, 0, []any{}},
		{"all passed", []check{{"a", true}, {"b", true}}, 1, map[string]any{"elapsed_ms": 1234}, "ok", 0, 2, []any{}},
		{"one failed", []check{{"a", true}, {"b", false}, {"c", true}}, 2, nil, "failed", 1, 2, []any{"b"}},
		{
			"failed names sorted",
			[]check{{"zeta", false}, {"alpha", false}, {"mid", true}, {"beta", false}},
			0, map[string]any{"uptime_ms": 5, "pool_peak_mib": 70},
			"failed", 1, 1, []any{"alpha", "beta", "zeta"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			r := NewReporter(&out)
			for i := 0; i < tt.records; i++ {
				r.Record("info", nil)
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
			for k, v := range tt.fields {
				assert.EqualValues(t, v, m[k], "extra field %s", k)
			}
			assert.Len(t, m, 6+len(tt.fields), "no other fields: %v", m)
		})
	}
}

func TestEndDoesNotReorderFailed(t *testing.T) {
	r := NewReporter(&bytes.Buffer{})
	r.Check("b", false, "", nil)
	r.Check("a", false, "", nil)
	r.End(nil)
	assert.Equal(t, []string{"b", "a"}, r.Failed(), "End sorts a copy")
}

// TestComputedFieldsWin checks that extra fields cannot replace what Check
// and End compute.
func TestComputedFieldsWin(t *testing.T) {
	var out bytes.Buffer
	r := NewReporter(&out)
	r.Check("sleep", false, "slept 3 ms", map[string]any{"ok": true, "name": "other", "detail": "x"})
	code := r.End(map[string]any{"status": "ok", "exit": 0, "checks": 7, "passed": 7, "note": "kept"})
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
	assert.Equal(t, "kept", e["note"])
}
