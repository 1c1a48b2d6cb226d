package qemu

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
)

// Machine code for the test images. Neither uses absolute addresses, so the
// image needs no base relocations and loads anywhere.
var (
	// writeKExit5 writes "K\n" to COM1, then status 5 to the debug-exit port.
	writeKExit5 = []byte{
		0x66, 0xba, 0xf8, 0x03, // mov dx, 0x3f8
		0xb0, 'K', // mov al, 'K'
		0xee,       // out dx, al
		0xb0, '\n', // mov al, '\n'
		0xee,                   // out dx, al
		0x66, 0xba, 0xf4, 0x00, // mov dx, 0xf4
		0xb0, 0x15, // mov al, 0x15: status 5 + contract.DebugExitBase
		0xee,       // out dx, al
		0xf4,       // hlt
		0xeb, 0xfd, // jmp back to hlt
	}
	// spin halts forever.
	spin = []byte{0xf4, 0xeb, 0xfd} // hlt; jmp back to hlt
)

// writeEFI writes a minimal PE32+ EFI application (one .text section at RVA
// 0x1000 holding code, entry point at its start) and returns its path.
func writeEFI(t *testing.T, code []byte) string {
	t.Helper()
	const (
		fileAlign = 0x200
		sectAlign = 0x1000
		textRVA   = 0x1000
	)
	le := binary.LittleEndian
	var buf bytes.Buffer
	dos := make([]byte, 0x40)
	copy(dos, "MZ")
	le.PutUint32(dos[0x3c:], 0x40) // e_lfanew
	buf.Write(dos)
	buf.WriteString("PE\x00\x00")
	oh := pe.OptionalHeader64{
		Magic:               0x20b,
		SizeOfCode:          fileAlign,
		AddressOfEntryPoint: textRVA,
		BaseOfCode:          textRVA,
		ImageBase:           0x10000000,
		SectionAlignment:    sectAlign,
		FileAlignment:       fileAlign,
		SizeOfImage:         textRVA + sectAlign,
		SizeOfHeaders:       fileAlign,
		Subsystem:           pe.IMAGE_SUBSYSTEM_EFI_APPLICATION,
		NumberOfRvaAndSizes: 16,
	}
	require.NoError(t, binary.Write(&buf, le, pe.FileHeader{
		Machine:              pe.IMAGE_FILE_MACHINE_AMD64,
		NumberOfSections:     1,
		SizeOfOptionalHeader: uint16(binary.Size(oh)),
		Characteristics:      pe.IMAGE_FILE_EXECUTABLE_IMAGE | pe.IMAGE_FILE_LARGE_ADDRESS_AWARE,
	}))
	require.NoError(t, binary.Write(&buf, le, oh))
	sh := pe.SectionHeader32{
		VirtualSize:      uint32(len(code)),
		VirtualAddress:   textRVA,
		SizeOfRawData:    fileAlign,
		PointerToRawData: fileAlign,
		Characteristics:  pe.IMAGE_SCN_CNT_CODE | pe.IMAGE_SCN_MEM_EXECUTE | pe.IMAGE_SCN_MEM_READ,
	}
	copy(sh.Name[:], ".text")
	require.NoError(t, binary.Write(&buf, le, sh))
	require.LessOrEqual(t, buf.Len(), fileAlign)
	buf.Write(make([]byte, fileAlign-buf.Len()))
	buf.Write(code)
	buf.Write(make([]byte, 2*fileAlign-buf.Len()))

	path := filepath.Join(t.TempDir(), "test.efi")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	f, err := pe.Open(path) // sanity check of the hand-made headers
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return path
}

// TestRunBoot boots a hand-made EFI image under QEMU and OVMF. It needs
// qemu-system-x86_64 and OVMF and fails, rather than skips, without them.
func TestRunBoot(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "serial.log")
	var echo bytes.Buffer
	res, err := Run(t.Context(), Options{
		Image:   writeEFI(t, writeKExit5),
		Plan:    []byte("mode = test\n"),
		Files:   map[string][]byte{"data/blob.bin": {0xaa}},
		Timeout: 60 * time.Second,
		LogPath: logPath,
		Echo:    &echo,
	})
	require.NoError(t, err)
	t.Logf("QEMU status %d after %v; serial:\n%s", res.QEMUStatus, res.Duration, strings.Join(res.Lines(), "\n"))

	assert.Equal(t, (5+contract.DebugExitBase)<<1|1, res.QEMUStatus)
	assert.True(t, res.DebugExit)
	assert.Equal(t, 5, res.ImageStatus)
	assert.False(t, res.TimedOut)
	assert.Equal(t, 5, ExitCode(res))
	assert.Contains(t, res.Lines(), "K")
	assert.Contains(t, string(res.Serial), "BdsDxe", "firmware output is captured too")
	assert.Equal(t, []byte(res.Serial), echo.Bytes(), "Echo gets the raw serial")
	logged, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Equal(t, []byte(res.Serial), logged, "LogPath gets the raw serial")
	_, ok := res.End()
	assert.False(t, ok)
}

// TestRunTimeout checks that a run that never ends is killed and reported
// as timed out.
func TestRunTimeout(t *testing.T) {
	t.Parallel()
	start := time.Now()
	res, err := Run(t.Context(), Options{Image: writeEFI(t, spin), Timeout: 2 * time.Second})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 20*time.Second)
	assert.True(t, res.TimedOut)
	assert.False(t, res.DebugExit)
	assert.Equal(t, -1, res.QEMUStatus)
	assert.Equal(t, -1, res.ImageStatus)
	assert.Equal(t, 124, ExitCode(res))
	assert.GreaterOrEqual(t, res.Duration, 2*time.Second)
}
