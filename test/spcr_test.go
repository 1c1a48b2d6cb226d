package test

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/host/qemu"
)

// spcrCOM2 is a real SPCR table (Hyper-V's, board/testdata) moved to COM2:
// a 16550 at I/O port 0x2f8, 115200 baud.
func spcrCOM2(t *testing.T) []byte {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "board", "testdata", "spcr-hyperv-gen2.txt"))
	require.NoError(t, err)
	var tab []byte
	for _, line := range strings.Split(string(text), "\n") {
		if _, data, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			b, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(data), " ", ""))
			require.NoError(t, err)
			tab = append(tab, b...)
		}
	}
	require.Len(t, tab, 80)
	require.Equal(t, []byte{0xf8, 0x03}, tab[44:46], "the base address, COM1")
	tab[45] = 0x02
	tab[9] = 0
	sum := byte(0)
	for _, b := range tab {
		sum += b
	}
	tab[9] = -sum // ACPI 6.5, 5.2.6: all bytes sum to 0
	return tab
}

// TestSPCR gives QEMU an SPCR table naming COM2 (-acpitable) and a second
// serial port: the console goes to COM2 too (found by its probe from the
// first line on, then named by the table) to PTILAB-END, and the machine
// record lists both ports.
func TestSPCR(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "spcr.bin")
	require.NoError(t, os.WriteFile(table, spcrCOM2(t), 0o644))
	com2 := filepath.Join(dir, "com2.log")
	res := boot(t, qemu.Options{
		Plan:      []byte("benchmarks = none\n"),
		ExtraArgs: []string{"-acpitable", "file=" + table, "-serial", "file:" + com2},
	})
	requireOK(t, res)
	lines := res.Lines()
	const said = "ptilab: ACPI SPCR table: serial console on the 16550 at I/O port 0x2f8, 115200 baud"
	at := lineIndex(t, lines, said)
	out, err := os.ReadFile(com2)
	require.NoError(t, err)
	got := qemu.Serial(out).Lines()
	// COM2 gets the firmware's own lines too (OVMF's terminal), then
	// every one of ptilab's.
	const first = "ptilab: booting"
	assert.Equal(t, lines[lineIndex(t, lines, first):], got[lineIndex(t, got, first):], "COM2 gets every line from ptilab's first")
	assert.Less(t, lineIndex(t, lines, "ptilab: COM2: serial console on the 16550 at I/O port 0x2f8, 115200 baud"), at)
	m := recordsOf[contract.Machine](t, res)
	require.Len(t, m, 1)
	assert.Equal(t, []string{"io 0x3f8 115200 baud (com1)", "io 0x2f8 115200 baud (com2) (spcr)"}, m[0].SerialPorts)
	assert.True(t, strings.HasPrefix(got[len(got)-1], "PTILAB-END "), "COM2's last line is PTILAB-END")
}
