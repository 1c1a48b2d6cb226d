package qemu

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ovmfBoot is the start of a real OVMF 2022.11 (Debian 12) serial log,
// followed by image output written with CRLF and colour sequences as the
// UEFI console driver emits them.
const ovmfBoot = "\x1b[2J\x1b[01;01H\x1b[=3h\x1b[2J\x1b[01;01H\x1b[2J\x1b[01;01H\x1b[=3h\x1b[2J\x1b[01;01H" +
	"\x1b[2J\x1b[01;01H\x1b[=3h\x1b[2J\x1b[01;01HBdsDxe: failed to load Boot0001 \"UEFI QEMU DVD-ROM QM00005 \" " +
	"from PciRoot(0x0)/Pci(0x1F,0x2)/Sata(0x2,0xFFFF,0x0): Not Found\r\n" +
	"BdsDxe: loading Boot0002 \"UEFI QEMU HARDDISK QM00001 \" from PciRoot(0x0)/Pci(0x1F,0x2)/Sata(0x0,0xFFFF,0x0)\r\n" +
	"BdsDxe: starting Boot0002 \"UEFI QEMU HARDDISK QM00001 \" from PciRoot(0x0)/Pci(0x1F,0x2)/Sata(0x0,0xFFFF,0x0)\r\n" +
	"\x1b[0m\x1b[37m\x1b[40mptilab: booting\r\n" +
	"\x1b(B\x1b]0;title\x07\x1b[1;33mPTILAB {\"test\":\"tsc\",\"cycles\":18446744073709551615}\x1b[0m\r\n" +
	"PTILAB-END {\"status\":\"ok\"}\r\n"

var ovmfLines = []string{
	`BdsDxe: failed to load Boot0001 "UEFI QEMU DVD-ROM QM00005 " from PciRoot(0x0)/Pci(0x1F,0x2)/Sata(0x2,0xFFFF,0x0): Not Found`,
	`BdsDxe: loading Boot0002 "UEFI QEMU HARDDISK QM00001 " from PciRoot(0x0)/Pci(0x1F,0x2)/Sata(0x0,0xFFFF,0x0)`,
	`BdsDxe: starting Boot0002 "UEFI QEMU HARDDISK QM00001 " from PciRoot(0x0)/Pci(0x1F,0x2)/Sata(0x0,0xFFFF,0x0)`,
	`ptilab: booting`,
	`PTILAB {"test":"tsc","cycles":18446744073709551615}`,
	`PTILAB-END {"status":"ok"}`,
}

func TestLinesStripsOVMFEscapes(t *testing.T) {
	r := &Result{Serial: []byte(ovmfBoot)}
	assert.Equal(t, ovmfLines, r.Lines())
}

func TestLinesEdgeCases(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", nil},
		{"unterminated last line", "a\r\nb", []string{"a", "b"}},
		{"blank lines kept", "a\n\nb\n", []string{"a", "", "b"}},
		{"OSC ended by ST", "x\x1b]2;t\x1b\\y\n", []string{"xy"}},
		{"OSC interrupted by CSI", "x\x1b]2;t\x1b[0my\n", []string{"xy"}},
		{"two-byte escapes", "\x1bca\x1b7b\x1b8\n", []string{"ab"}},
		{"CSI with intermediates", "a\x1b[?25l\x1b[1 qb\n", []string{"ab"}},
		{"malformed CSI ends at newline", "a\x1b[12\nb\n", []string{"a", "b"}},
		{"bare CR removed", "50%\r100%\n", []string{"50%100%"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, (&Result{Serial: []byte(tt.in)}).Lines())
		})
	}
}

func TestPlainWriterSplitWrites(t *testing.T) {
	var out bytes.Buffer
	w := PlainWriter(&out)
	for i := range len(ovmfBoot) { // one byte at a time: sequences span writes
		n, err := w.Write([]byte{ovmfBoot[i]})
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	assert.Equal(t, strings.Join(ovmfLines, "\n")+"\n", out.String())
}

func TestRecordsAndEnd(t *testing.T) {
	r := &Result{Serial: []byte(ovmfBoot)}
	recs, err := r.Records()
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, 5, recs[0].Line)
	assert.JSONEq(t, `{"test":"tsc","cycles":18446744073709551615}`, string(recs[0].Raw))
	assert.Equal(t, "tsc", recs[0].Fields["test"])
	assert.Equal(t, json.Number("18446744073709551615"), recs[0].Fields["cycles"], "numbers keep every digit")

	end, ok := r.End()
	require.True(t, ok)
	assert.Equal(t, 6, end.Line)
	assert.Equal(t, "ok", end.Fields["status"])
	_, faulted := r.Fault()
	assert.False(t, faulted)
}

func TestRecordsMalformed(t *testing.T) {
	tests := []struct{ name, line, want string }{
		{"bad JSON", `PTILAB {"a":}`, "serial line 3: malformed record"},
		{"array", `PTILAB [1,2]`, "serial line 3: malformed record"},
		{"trailing text", `PTILAB {"a":1} junk`, "text after the JSON object"},
		{"no payload", `PTILAB`, "no JSON payload"},
		{"null", `PTILAB null`, "not a JSON object"},
		{"bad END", `PTILAB-END {status:ok}`, "serial line 3: malformed record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Result{Serial: []byte("hello\r\nPTILAB {\"a\":1}\r\n" + tt.line + "\r\nPTILAB-FAULT x\r\n")}
			_, err := r.Records()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "qemu", "a saved log need not be QEMU's")

			recs, damaged := r.Scan()
			require.Len(t, damaged, 1, "Scan skips the damaged line")
			assert.Contains(t, damaged[0].Error(), tt.want)
			require.Len(t, recs, 1, "and keeps the others")
			assert.Equal(t, 2, recs[0].Line)
		})
	}
}

// TestScanDamagedMiddle: a record damaged in the middle of a log (a
// USB-serial overrun) costs that record; the ones after it, and a last
// line cut short, are read as without it.
func TestScanDamagedMiddle(t *testing.T) {
	r := Serial("PTILAB {\"a\":1}\nPTILAB {\"b\":2,\"c\nPTILAB {\"d\":4}\nPTILAB-END {\"status\":\"ok\"}\nPTILAB {\"cut")
	recs, damaged := r.Scan()
	require.Len(t, damaged, 1)
	assert.EqualError(t, damaged[0], "serial line 2: malformed record: unexpected EOF")
	require.Len(t, recs, 2)
	assert.Equal(t, []int{1, 3}, []int{recs[0].Line, recs[1].Line})
	_, ended := r.Ended()
	assert.True(t, ended)
}

func TestEndMissingOrLast(t *testing.T) {
	r := &Result{Serial: []byte("PTILAB {\"a\":1}\nPTILAB-ENDING soon\nPTILAB-FAULT #PF at 0x0\nrip=0x1234\n")}
	_, ok := r.End()
	assert.False(t, ok, "no END line")
	recs, err := r.Records()
	require.NoError(t, err, "PTILAB-ENDING and PTILAB-FAULT are not records")
	assert.Len(t, recs, 1)
	fault, ok := r.Fault()
	assert.True(t, ok)
	assert.Equal(t, "PTILAB-FAULT #PF at 0x0", fault)

	r = &Result{Serial: []byte("PTILAB-END {\"status\":\"retry\"}\nPTILAB-END {\"status\":\"ok\"}\nPTILAB-END {broken\n")}
	end, ok := r.End()
	require.True(t, ok)
	assert.Equal(t, "ok", end.Fields["status"], "last well-formed END wins")
	assert.Equal(t, 2, end.Line)
}
