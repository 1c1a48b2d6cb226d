package test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	diskfs "github.com/diskfs/go-diskfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/host/bochs"
	"github.com/ptilab/ptilab/host/qemu"
	"github.com/ptilab/ptilab/host/report"
	"github.com/ptilab/ptilab/host/usbimage"
)

// usbPlan replaces the stick's hardware-sized plan in the USB boot tests:
// the self-checks and a few null-call rows.
const usbPlan = `# the USB boot tests' plan
benchmarks = null
modes = off,on
flavours = minimal
global = off
n = 100
r = 2
warmup = 1
`

// usbTimeout bounds a boot of the stick image with usbPlan: such a boot
// takes about 15 s alone here; 4 minutes leaves room for a loaded machine.
const usbTimeout = 4 * time.Minute

// stickImage writes the stick image as `make usb` does (ptilab usb, with
// the hardware-sized plan), then puts usbPlan in the plan's place.
func stickImage(t *testing.T) string {
	t.Helper()
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	efi, err := os.ReadFile(efiPath)
	require.NoError(t, err)
	img := filepath.Join(t.TempDir(), "ptilab.img")
	require.NoError(t, usbimage.Write(img, efi, nil))
	plan, err := usbimage.ReadFile(img, usbimage.PlanPath)
	require.NoError(t, err)
	require.Equal(t, string(usbimage.HardwarePlan), string(plan))
	require.NoError(t, usbimage.ReplaceFile(img, usbimage.PlanPath, []byte(usbPlan)))
	return img
}

// bootStick boots the stick image with opts (Disk and Timeout filled in).
func bootStick(t *testing.T, img string, opts qemu.Options) *qemu.Result {
	t.Helper()
	opts.Disk = img
	opts.Timeout = usbTimeout
	res, err := qemu.Run(t.Context(), opts)
	require.NoError(t, err)
	t.Logf("booted the stick image under QEMU (read-only %v, serial %v): image status %d after %v; %s",
		opts.DiskReadOnly, !opts.NoSerial, res.ImageStatus, res.Duration.Round(time.Millisecond), endLine(res))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serial output:\n%s\nQEMU stderr:\n%s", strings.Join(res.Lines(), "\n"), res.Stderr)
		}
	})
	require.False(t, res.TimedOut, "QEMU killed after %v", opts.Timeout)
	return res
}

// resultsFiles returns the results files on the stick image, oldest first.
func resultsFiles(t *testing.T, img string) (names []string, files []qemu.Serial) {
	t.Helper()
	names, err := usbimage.Results(img)
	require.NoError(t, err)
	for _, n := range names {
		b, err := usbimage.ReadFile(img, n)
		require.NoError(t, err)
		files = append(files, qemu.Serial(b))
	}
	return names, files
}

// fromBoot returns the lines of a serial log from ptilab's first line on
// (the firmware's own output comes before it).
func fromBoot(t *testing.T, lines []string) []string {
	t.Helper()
	return lines[lineIndex(t, lines, "ptilab: booting"):]
}

// rawRecords returns a log's records as their JSON text.
func rawRecords(t *testing.T, log qemu.Serial) []string {
	t.Helper()
	recs, err := log.Records()
	require.NoError(t, err)
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Raw))
	}
	return out
}

// TestUSBImage boots the `make usb` image as a raw disk, twice: each run
// leaves a new results file on its ESP holding what the serial console
// got, from ptilab's first line to PTILAB-END.
func TestUSBImage(t *testing.T) {
	t.Parallel()
	img := stickImage(t)
	var first string
	for boot := 1; boot <= 2; boot++ {
		res := bootStick(t, img, qemu.Options{})
		requireOK(t, res)
		names, files := resultsFiles(t, img)
		require.Len(t, names, boot, "boot %d adds one results file", boot)
		end := ended(t, res)
		require.NotNil(t, end.ResultsFile)
		assert.Empty(t, end.ResultsFile.Error)
		// Names sort by date and time; two boots within a second share a
		// base name, the second with a suffix.
		name := end.ResultsFile.Path
		assert.Contains(t, names, name)
		assert.Regexp(t, `^ptilab-results/\d{8}-\d{6}-[a-z0-9]+-\d+-\d+-\d+(-\d+)?\.log$`, name)
		got := files[slicesIndex(names, name)]
		assert.Equal(t, fromBoot(t, res.Lines()), got.Lines(), "the results file holds the serial log from ptilab's first line")
		assert.Equal(t, rawRecords(t, res.Serial), rawRecords(t, got))
		fileEnd, ok := got.Ended()
		require.True(t, ok, "the results file ends with PTILAB-END")
		assert.Equal(t, "ok", fileEnd.Status)
		// The END line counts what the file held before it, and a flush
		// after each record at least.
		body := strings.TrimSuffix(string(got), "\n")
		assert.Equal(t, uint64(strings.LastIndex(body, "\n")+1), end.ResultsFile.Bytes)
		assert.GreaterOrEqual(t, end.ResultsFile.Flushes, uint64(end.Records))
		t.Logf("results file: %d bytes, %d flushes, %.1f ms in the firmware before PTILAB-END", end.ResultsFile.Bytes, end.ResultsFile.Flushes, end.ResultsFile.WriteMs)
		if boot == 1 {
			first = string(got)
		} else {
			old, err := usbimage.ReadFile(img, names[slicesIndex(names, name)^1])
			require.NoError(t, err)
			assert.Equal(t, first, string(old), "the second boot leaves the first file as it was")
		}
	}
}

func slicesIndex(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

// TestUSBReadOnly boots the stick write-protected: the run ends ok, says
// on the console that it has no results file and why, and PTILAB-END
// carries the error.
func TestUSBReadOnly(t *testing.T) {
	t.Parallel()
	img := stickImage(t)
	res := bootStick(t, img, qemu.Options{DiskReadOnly: true})
	requireOK(t, res)
	end := ended(t, res)
	require.NotNil(t, end.ResultsFile)
	assert.Empty(t, end.ResultsFile.Path)
	assert.Contains(t, end.ResultsFile.Error, "read-only file system")
	lineIndex(t, res.Lines(), "ptilab: no results file on the boot volume: creating ptilab-results: read-only file system; the run goes on")
	names, _ := resultsFiles(t, img)
	assert.Empty(t, names)
}

// TestUSBKilled kills QEMU in the middle of the run: the results file
// holds a prefix of the serial log's records, every one whole, and no
// PTILAB-END.
func TestUSBKilled(t *testing.T) {
	t.Parallel()
	img := stickImage(t)
	res := bootStick(t, img, qemu.Options{StopAt: regexp.MustCompile(`PTILAB \{"kind":"syscall"`)})
	require.True(t, res.Stopped, "the run reached the null call's rows")
	_, ok := res.End()
	require.False(t, ok, "the run was killed before its end")
	names, files := resultsFiles(t, img)
	require.Len(t, names, 1)
	_, ok = files[0].End()
	assert.False(t, ok, "the results file has no PTILAB-END")
	serial, file := rawRecords(t, res.Serial), rawRecords(t, files[0])
	require.NotEmpty(t, file, "the records before the kill reached the file")
	require.LessOrEqual(t, len(file), len(serial))
	assert.Equal(t, serial[:len(file)], file, "the file's records are the serial's first ones")
	assert.True(t, strings.HasSuffix(string(files[0]), "\n"), "the file ends with a whole line")
	t.Logf("killed after %d records on serial; %d in the results file", len(serial), len(file))

	// What `ptilab report IMAGE` reads of the stick: the cut run, said
	// to be cut short, with the tables it had.
	runs, warnings, err := report.Load(img)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.True(t, runs[0].CutShort())
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "cut short: no PTILAB-END line")
	rep := report.Build(runs[0])
	assert.Regexp(t, fmt.Sprintf(`^CUT SHORT: no PTILAB-END line; the log holds \d+ lines, %d records`, len(file)), rep.Status)
}

// TestUSBNoSerial boots with no serial port at all: the results file is
// then the only record, and it is whole.
func TestUSBNoSerial(t *testing.T) {
	t.Parallel()
	img := stickImage(t)
	res := bootStick(t, img, qemu.Options{NoSerial: true})
	require.True(t, res.DebugExit)
	assert.Equal(t, 0, res.ImageStatus)
	assert.Empty(t, res.Serial)
	names, files := resultsFiles(t, img)
	require.Len(t, names, 1)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("results file %s:\n%s", names[0], files[0])
		}
	})
	end, ok := files[0].Ended()
	require.True(t, ok, "the results file ends with PTILAB-END")
	assert.Equal(t, "ok", end.Status)
	require.NotNil(t, end.ResultsFile)
	assert.Equal(t, names[0], end.ResultsFile.Path)
	recs := rawRecords(t, files[0])
	assert.Equal(t, end.Records, len(recs), "every record the run counted is in the file")
	var machine contract.Machine
	for _, r := range mustDecode(t, files[0]) {
		if m, ok := r.(contract.Machine); ok {
			machine = m
		}
	}
	assert.False(t, machine.Serial, "the machine record says there was no serial port")
}

func mustDecode(t *testing.T, log qemu.Serial) []contract.Record {
	t.Helper()
	recs, err := log.Decoded()
	require.NoError(t, err)
	return recs
}

// TestBochsUSBImage boots the same stick image under Bochs, as its first
// ATA disk: it ends ok and leaves its results file, holding the serial
// log's records.
func TestBochsUSBImage(t *testing.T) {
	img := stickImage(t)
	res := bootBochs(t, bochs.Options{Disk: img, Timeout: bochsFaultTimeout})
	requireEndOK(t, res)
	names, files := resultsFiles(t, img)
	require.Len(t, names, 1)
	end := ended(t, res)
	require.NotNil(t, end.ResultsFile)
	assert.Equal(t, names[0], end.ResultsFile.Path)
	assert.Equal(t, rawRecords(t, res.Serial), rawRecords(t, files[0]))
	fileEnd, ok := files[0].Ended()
	require.True(t, ok, "the results file ends with PTILAB-END")
	assert.Equal(t, "ok", fileEnd.Status)
}

// fillESP fills the stick image's ESP but for leave bytes, as a FAT
// driver that reads the FAT (OVMF's) counts free space: clusters 2 to
// the data area's last whose FAT32 entry is 0 (Microsoft FAT
// specification, "FAT Data Structure"). go-diskfs allocates the lowest free
// clusters first but counts some beyond the data area as free, so its own
// "no space left" is not the measure.
func fillESP(t *testing.T, img string, leave int) {
	t.Helper()
	data, err := os.ReadFile(img)
	require.NoError(t, err)
	bs := data[usbimage.ESPStart:]
	le16 := func(o int) int { return int(bs[o]) | int(bs[o+1])<<8 }
	le32 := func(b []byte) uint32 { return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24 }
	bps, spc, reserved, nfats := le16(11), int(bs[13]), le16(14), int(bs[16])
	total, fatsz := int(le32(bs[32:])), int(le32(bs[36:]))
	clusters := (total - reserved - nfats*fatsz) / spc
	fat := bs[reserved*bps:]
	free := 0
	for c := 2; c < clusters+2; c++ {
		if le32(fat[4*c:])&0x0fffffff == 0 {
			free++
		}
	}
	size := free*spc*bps - leave
	require.Positive(t, size)
	assert.Equal(t, size, growFile(t, img, size))
}

// growFile writes /filler.bin on the image's ESP, up to limit bytes (no
// limit when negative) or until the volume is full, in chunks of 1 MiB
// down to a sector, and returns its size.
func growFile(t *testing.T, img string, limit int) int {
	t.Helper()
	d, err := diskfs.Open(img, diskfs.WithOpenMode(diskfs.ReadWriteExclusive))
	require.NoError(t, err)
	defer d.Close()
	fs, err := d.GetFilesystem(usbimage.ESPIndex)
	require.NoError(t, err)
	f, err := fs.OpenFile("/filler.bin", os.O_CREATE|os.O_RDWR)
	require.NoError(t, err)
	n := 0
	for chunk := 1 << 20; chunk >= usbimage.SectorSize; chunk /= 2 {
		for limit < 0 || n+chunk <= limit {
			k, err := f.Write(make([]byte, chunk))
			n += k
			if err != nil {
				break
			}
		}
	}
	require.NoError(t, f.Close())
	return n
}

// TestUSBFull boots the stick with 4 KiB left on its ESP: the run creates
// its results file, fills the volume, says so on the console once and
// goes on to end ok; PTILAB-END names the error, and the file holds the
// serial log's beginning.
func TestUSBFull(t *testing.T) {
	t.Parallel()
	img := stickImage(t)
	fillESP(t, img, 4096)
	res := bootStick(t, img, qemu.Options{})
	requireOK(t, res)
	end := ended(t, res)
	require.NotNil(t, end.ResultsFile)
	assert.Equal(t, "writing: volume full", end.ResultsFile.Error)
	require.NotEmpty(t, end.ResultsFile.Path)
	lines := res.Lines()
	lineIndex(t, lines, "ptilab: writing the results file failed: volume full; the run goes on without it")
	got, err := usbimage.ReadFile(img, end.ResultsFile.Path)
	require.NoError(t, err)
	require.NotEmpty(t, got)
	serial := strings.Join(fromBoot(t, lines), "\n")
	assert.True(t, strings.HasPrefix(serial, string(got)), "the file holds a beginning of the serial log")
	t.Logf("results file %s: %d bytes before the volume filled", end.ResultsFile.Path, len(got))
}

// TestUSBFault makes the run fault in Go code: the register dump, the Go
// traceback and the kernel's own PTILAB-END reach the results file as
// they reach the serial port.
func TestUSBFault(t *testing.T) {
	t.Parallel()
	img := stickImage(t)
	require.NoError(t, usbimage.ReplaceFile(img, usbimage.PlanPath, []byte("fault = pf\n")))
	res := bootStick(t, img, qemu.Options{})
	require.True(t, res.DebugExit)
	assert.Equal(t, contract.StatusFault, res.ImageStatus)
	names, files := resultsFiles(t, img)
	require.Len(t, names, 1)
	assert.Equal(t, fromBoot(t, res.Lines()), files[0].Lines(), "the results file holds the serial log from ptilab's first line")
	_, ok := files[0].Fault()
	assert.True(t, ok, "the results file holds the fault dump")
	end, ok := files[0].Ended()
	require.True(t, ok, "the results file ends with the kernel's PTILAB-END")
	assert.Equal(t, "fault", end.Status)
}
