// Package report reads ptilab's results (serial logs, the results files
// the image writes to its boot volume, a directory of them, or the USB
// disk image itself) and turns them into the tables, comparisons and plots
// of `ptilab report`, `ptilab compare` and `ptilab plot`.
//
// A run's records are the image's `PTILAB {json}` lines decoded with
// package contract, through host/qemu's Serial; the reference lines
// under the tables are package reference's, as the image prints them.
package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	diskfs "github.com/diskfs/go-diskfs"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/host/qemu"
	"github.com/ptilab/ptilab/host/usbimage"
)

// ResultsDir is the directory of the boot volume where the image writes
// a results file per run (`ptilab-results/<date>-<time>-<cpu>.log`).
const ResultsDir = "ptilab-results"

// resultsExt is the extension of a results file.
const resultsExt = ".log"

// Run is one run's records: a serial log or a results file.
type Run struct {
	// Source names where the run was read: a file, or IMAGE:/path for a
	// file inside a disk image.
	Source  string
	Machine *contract.Machine // the machine record; nil if the log has none
	Timing  *contract.Timing  // the timing record; nil if the log has none
	Records []Record          // every PTILAB record, in output order
	// End is the PTILAB-END line; nil when the log was cut short.
	End *contract.End
	// Lines is the number of lines of the log.
	Lines int
	// Unknown counts the records of kinds this tool does not know (a
	// newer image's), by kind; they are left out of the tables.
	Unknown map[string]int
	// Damaged are the record lines that could not be read (a line
	// garbled in transit, a record its kind's type refuses), each "serial
	// line N: why"; the run is the rest of the log.
	Damaged []string
}

// Warnings returns a line per damaged record line of the run, naming
// its source and line, and one when the run was cut short.
func (r *Run) Warnings() []string {
	var out []string
	for _, d := range r.Damaged {
		out = append(out, r.Source+": "+d+" (record skipped)")
	}
	if r.CutShort() {
		out = append(out, fmt.Sprintf("%s: cut short: no PTILAB-END line after its %d lines (the tables hold what it printed)", r.Source, r.Lines))
	}
	return out
}

// Record is a decoded PTILAB record, its line in the log, and its fields
// as printed (for fields the contract types do not carry).
type Record struct {
	contract.Record
	Line   int
	Fields map[string]any
}

// CutShort reports whether the log ends without a PTILAB-END line.
func (r *Run) CutShort() bool { return r.End == nil }

// Emulated reports whether the run's figures come from an emulator (the
// timing record says so; without one, the machine record's emulator).
func (r *Run) Emulated() bool {
	if r.Timing != nil {
		return r.Timing.Emulated
	}
	return r.Machine != nil && r.Machine.Emulator != ""
}

// Parse reads one run from a serial log or a results file's bytes; source
// names it in errors. A damaged record line (malformed, or refused by its
// kind's type) is skipped and listed in Run.Damaged. An empty file, a
// file without any PTILAB line and one whose every record line is damaged
// are errors.
func Parse(source string, data []byte) (*Run, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty file", source)
	}
	serial := qemu.Serial(data)
	raws, damaged := serial.Scan()
	run := &Run{Source: source, Lines: len(serial.Lines()), Unknown: map[string]int{}}
	for _, err := range damaged {
		run.Damaged = append(run.Damaged, err.Error())
	}
	if end, ok := serial.Ended(); ok {
		run.End = &end
	}
	if len(raws) == 0 && run.End == nil && len(damaged) == 0 {
		return nil, fmt.Errorf("%s: not a ptilab log (no PTILAB record lines)", source)
	}
	known := contract.Kinds()
	for _, raw := range raws {
		kind, _ := raw.Fields["kind"].(string)
		if !slices.Contains(known, kind) {
			run.Unknown[kind]++
			continue
		}
		rec, err := raw.Decode()
		if err != nil {
			run.Damaged = append(run.Damaged, err.Error())
			continue
		}
		switch m := rec.(type) {
		case contract.Machine:
			run.Machine = &m
		case contract.Timing:
			run.Timing = &m
		}
		run.Records = append(run.Records, Record{Record: rec, Line: raw.Line, Fields: raw.Fields})
	}
	if len(run.Records) == 0 && len(run.Damaged) > 0 {
		more := ""
		if n := len(run.Damaged) - 1; n > 0 {
			more = fmt.Sprintf(" (and %d more damaged lines)", n)
		}
		return nil, fmt.Errorf("%s: no record could be read: %s%s", source, run.Damaged[0], more)
	}
	return run, nil
}

// Load reads the runs of each path: a serial log or results file, a
// directory of results files (a mounted stick's ptilab-results, or the
// stick's root holding it), or a GPT disk image whose EFI System Partition
// holds /ptilab-results. It keeps going past what it cannot read: a path
// or a results file that gives no run (missing, empty, not a log, every
// record damaged) is left out with a warning, as is each damaged record
// line of the runs read and each run cut short (Run.Warnings); every
// warning is one line naming the file, and the line where there is one.
// It fails, with every reason in one line, only when no run at all could
// be read.
func Load(paths ...string) (runs []*Run, warnings []string, err error) {
	var reasons []string
	for _, p := range paths {
		rs, skipped, err := load(p)
		if err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		for _, s := range skipped {
			reasons = append(reasons, s.Error())
		}
		runs = append(runs, rs...)
	}
	if len(runs) == 0 {
		return nil, nil, errors.New(strings.Join(reasons, "; "))
	}
	for _, r := range reasons {
		warnings = append(warnings, r+" (skipped)")
	}
	for _, r := range runs {
		warnings = append(warnings, r.Warnings()...)
	}
	return runs, warnings, nil
}

// load reads the runs of p, and the results files it had to skip.
func load(p string) (runs []*Run, skipped []error, err error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, nil, err
	}
	if st.IsDir() {
		return loadDir(p)
	}
	// A disk image is told by its first sectors, not read whole: a stick
	// read as /dev/sdX may hold tens of GB.
	head, err := readHead(p, diskHeadBytes)
	if err != nil {
		return nil, nil, err
	}
	if isDiskImage(head) {
		return loadImage(p)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s: not a serial log or results file, and no disk image (no GPT or MBR)", p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, nil, err
	}
	run, err := Parse(p, data)
	if err != nil {
		return nil, nil, err
	}
	return []*Run{run}, nil, nil
}

// loadDir reads the results files of dir, or of dir/ptilab-results.
func loadDir(dir string) ([]*Run, []error, error) {
	fsys := os.DirFS(dir)
	if st, err := fs.Stat(fsys, ResultsDir); err == nil && st.IsDir() {
		return loadResults(fsys, ResultsDir, filepath.Join(dir, ResultsDir))
	}
	return loadResults(fsys, ".", dir)
}

// loadResults reads the results files (*.log) in dir of fsys, by name;
// name is what errors call dir. A file that gives no run is skipped, its
// error returned in skipped; dir without any results file is an error.
func loadResults(fsys fs.FS, dir, name string) (runs []*Run, skipped []error, err error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	var files []string
	for _, e := range ents {
		if !e.IsDir() && strings.EqualFold(path.Ext(e.Name()), resultsExt) && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, e.Name())
		}
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("%s: no results files (%s/*%s) in it", name, ResultsDir, resultsExt)
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := usbimage.ReadFS(fsys, path.Join(dir, f))
		if err != nil {
			skipped = append(skipped, fmt.Errorf("%s: %w", filepath.Join(name, f), err))
			continue
		}
		run, err := Parse(filepath.Join(name, f), data)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		runs = append(runs, run)
	}
	return runs, skipped, nil
}

// gptSignature starts a GPT header, in LBA 1 (UEFI 2.10, 5.3.2).
const gptSignature = "EFI PART"

// isDiskImage reports whether data starts as a disk image: a GPT header
// at LBA 1 (512- or 4096-byte sectors), or a protective or legacy MBR's
// boot signature 55 AA at byte 510 without any text line before it.
// diskHeadBytes is how much of a file isDiskImage reads: the protective
// MBR and the GPT header at LBA 1 of 512- and 4096-byte sectors.
const diskHeadBytes = 8192

// readHead reads at most n bytes from the start of file p.
func readHead(p string, n int) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	k, err := io.ReadFull(f, b)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil
	}
	return b[:k], err
}

func isDiskImage(data []byte) bool {
	for _, lba := range []int{512, 4096} {
		if len(data) >= lba+len(gptSignature) && string(data[lba:lba+len(gptSignature)]) == gptSignature {
			return true
		}
	}
	return len(data) >= 512 && data[510] == 0x55 && data[511] == 0xaa && !bytes.Contains(data[:510], []byte("PTILAB"))
}

// loadImage reads the results files of a disk image: in its GPT's EFI
// System Partition (FAT32 or FAT16), the directory /ptilab-results.
func loadImage(img string) ([]*Run, []error, error) {
	d, fsys, err := usbimage.OpenESP(img, diskfs.ReadOnly)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	if st, err := fs.Stat(fsys, ResultsDir); err != nil || !st.IsDir() {
		return nil, nil, fmt.Errorf("%s: no results: the EFI System Partition has no /%s directory", img, ResultsDir)
	}
	return loadResults(fsys, ResultsDir, img+":/"+ResultsDir)
}
