package test

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
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

// TestPCISerial boots with QEMU's pci-serial (1b36:0002) as the only
// serial port, no ISA COM1 (qemu.Options.PCISerial), and a second one
// that says it is a 16950 (programming interface 06h, which OVMF's serial
// driver does not take, so that only ptilab writes it): the run's log is
// what ptilab wrote to the first PCI UART after the firmware's lines,
// each of its lines once from the first to PTILAB-END; the second gets
// the same lines and nothing else; the machine record lists both ports
// where the boot lines found them.
func TestPCISerial(t *testing.T) {
	second := filepath.Join(t.TempDir(), "pci16950.log")
	res := boot(t, qemu.Options{Plan: []byte("benchmarks = none\n"), PCISerial: true,
		ExtraArgs: []string{"-chardev", "file,id=pci16950,path=" + second, "-device", "pci-serial,chardev=pci16950,prog_if=6"}})
	requireOK(t, res)
	lines := res.Lines()
	count := func(prefix string) (n int) {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				n++
			}
		}
		return n
	}
	for _, once := range []string{"ptilab: booting", "ptilab machine:", `PTILAB {"kind":"machine"`, contract.EndTag + " "} {
		assert.Equal(t, 1, count(once), "lines starting %q", once)
	}
	found := regexp.MustCompile(`^ptilab: PCI (00:[0-9a-f]{2}\.0 1b36:0002) serial controller \(programming interface (0[26])h\), BAR 0: ` +
		`serial console on the 16550 at I/O port (0x[0-9a-f]+), 115200 baud(; its decode was off: turned on for the run)?$`)
	var want, progIFs []string
	for _, l := range lines {
		if m := found.FindStringSubmatch(l); m != nil {
			t.Logf("found: %s", l)
			s := "io " + m[3] + " 115200 baud (pci " + m[1]
			if m[4] != "" {
				s += ", decode turned on"
			}
			want, progIFs = append(want, s+")"), append(progIFs, m[2])
		}
	}
	assert.Equal(t, []string{"02", "06"}, progIFs, "both PCI UARTs found, in bus order")
	rec := recordsOf[contract.Machine](t, res)
	require.Len(t, rec, 1)
	assert.Equal(t, want, rec[0].SerialPorts)
	assert.True(t, rec[0].Serial)

	out, err := os.ReadFile(second)
	require.NoError(t, err)
	assert.Equal(t, lines[lineIndex(t, lines, "ptilab: booting"):], qemu.Serial(out).Lines(),
		"the second PCI UART gets every line of ptilab's, and only those")
}
