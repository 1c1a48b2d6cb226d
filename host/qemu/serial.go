package qemu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ptilab/ptilab/contract"
)

// Serial is a run's raw serial output (escape sequences and CRs
// included), from QEMU, from Bochs or from a saved log; its methods parse
// it.
type Serial []byte

// Record is one machine-readable line of the image's serial output.
type Record struct {
	// Line is the 1-based index of the line in Result.Lines.
	Line int
	// Raw is the JSON text as printed.
	Raw json.RawMessage
	// Fields is Raw decoded; numbers are json.Number so that 64-bit
	// counters and addresses keep every digit.
	Fields map[string]any

	end bool // the PTILAB-END line
}

// Decode decodes the record into its kind's type (package contract); the
// PTILAB-END line decodes as a contract.End. A kind contract does not know
// is an error naming the record's line.
func (rec Record) Decode() (contract.Record, error) {
	kind, _ := rec.Fields["kind"].(string)
	if kind == "" && rec.end {
		kind = contract.End{}.Kind()
	}
	d, err := contract.Decode(kind, rec.Raw)
	if err != nil {
		return nil, fmt.Errorf("serial line %d: %w", rec.Line, err)
	}
	return d, nil
}

// Decoded returns the "PTILAB {json}" records decoded into their kinds'
// types (package contract), in output order.
func (r Serial) Decoded() ([]contract.Record, error) {
	recs, err := r.Records()
	if err != nil {
		return nil, err
	}
	out := make([]contract.Record, 0, len(recs))
	for _, rec := range recs {
		d, err := rec.Decode()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Ended returns the last well-formed PTILAB-END line decoded; ok is false
// when there is none (the run was cut short) or it does not decode.
func (r Serial) Ended() (e contract.End, ok bool) {
	rec, found := r.End()
	if !found {
		return contract.End{}, false
	}
	d, err := rec.Decode()
	if err != nil {
		return contract.End{}, false
	}
	return d.(contract.End), true
}

// Lines returns the serial output split into lines, with ANSI/VT100 escape
// sequences and carriage returns removed. A final line without a newline
// (output cut short) is included.
func (r Serial) Lines() []string {
	var plain bytes.Buffer
	var s stripper
	s.strip(&plain, r)
	text := plain.String()
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// Records returns the "PTILAB {json}" records in output order. A record
// line, or a "PTILAB-END" line, whose payload is not a single JSON object
// is an error naming its line number (Scan skips it instead).
func (r Serial) Records() ([]Record, error) {
	recs, damaged := r.Scan()
	if len(damaged) > 0 {
		return nil, damaged[0]
	}
	return recs, nil
}

// Scan returns the "PTILAB {json}" records in output order, and an error
// for each record or "PTILAB-END" line it skipped because its payload is
// not a single JSON object ("serial line N: malformed record: ..."): a
// line damaged in transit (a USB-serial overrun) costs that record, not
// the log. A last line cut without its newline (a log cut short) is
// skipped without an error.
func (r Serial) Scan() (recs []Record, damaged []error) {
	lines := r.Lines()
	for i, line := range lines {
		tag, payload, _ := strings.Cut(line, " ")
		if tag != contract.RecordTag && tag != contract.EndTag {
			continue
		}
		rec, err := parseRecord(i+1, payload)
		if err != nil && i == len(lines)-1 && !r.endsWithNewline() {
			break // the log was cut in the middle of its last line
		}
		if err != nil {
			damaged = append(damaged, err)
			continue
		}
		if tag == contract.RecordTag {
			recs = append(recs, rec)
		}
	}
	return recs, damaged
}

func (r Serial) endsWithNewline() bool {
	return len(r) > 0 && r[len(r)-1] == '\n'
}

// End returns the last well-formed "PTILAB-END {json}" record; ok is false
// when there is none, i.e. the run was cut short.
func (r Serial) End() (rec *Record, ok bool) {
	lines := r.Lines()
	for i := len(lines) - 1; i >= 0; i-- {
		if tag, payload, _ := strings.Cut(lines[i], " "); tag == contract.EndTag {
			if rec, err := parseRecord(i+1, payload); err == nil {
				rec.end = true
				return &rec, true
			}
		}
	}
	return nil, false
}

// Fault returns the first line of a kernel fault dump (the first line
// starting with "PTILAB-FAULT"), if any.
func (r Serial) Fault() (line string, ok bool) {
	for _, l := range r.Lines() {
		if strings.HasPrefix(l, contract.FaultTag) {
			return l, true
		}
	}
	return "", false
}

// parseRecord decodes the JSON object in payload, found on line n.
func parseRecord(n int, payload string) (Record, error) {
	dec := json.NewDecoder(strings.NewReader(payload))
	dec.UseNumber()
	var fields map[string]any
	err := dec.Decode(&fields)
	switch {
	case err == nil && fields == nil:
		err = errors.New("not a JSON object")
	case err == nil && dec.More():
		err = errors.New("text after the JSON object")
	case errors.Is(err, io.EOF):
		err = errors.New("no JSON payload")
	}
	if err != nil {
		return Record{}, fmt.Errorf("serial line %d: malformed record: %v", n, err)
	}
	return Record{Line: n, Raw: json.RawMessage(strings.TrimSpace(payload)), Fields: fields}, nil
}

// PlainWriter returns a writer that forwards serial output to w with
// ANSI/VT100 escape sequences and carriage returns removed, so that firmware
// screen control (e.g. ESC[2J) does not clear a terminal. Sequences split
// across writes are handled. It reports the whole input as written unless
// w fails.
func PlainWriter(w io.Writer) io.Writer {
	return &plainWriter{w: w}
}

type plainWriter struct {
	w   io.Writer
	s   stripper
	buf bytes.Buffer
}

func (p *plainWriter) Write(b []byte) (int, error) {
	p.buf.Reset()
	p.s.strip(&p.buf, b)
	if _, err := p.w.Write(p.buf.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}

// stripper removes escape sequences and CRs from a byte stream; its state
// carries over between calls to strip.
type stripper struct{ state stripState }

type stripState uint8

const (
	sText    stripState = iota
	sEsc                // after ESC
	sCSI                // in ESC [ params intermediates final
	sOSC                // in ESC ] ... (BEL or ESC \)
	sOSCEsc             // ESC inside an OSC string
	sCharset            // after ESC ( and similar: one designator byte follows
)

const (
	esc = 0x1b
	bel = 0x07
)

// strip appends the text bytes of in to out.
func (s *stripper) strip(out *bytes.Buffer, in []byte) {
	for _, c := range in {
		switch s.state {
		case sText:
			switch c {
			case esc:
				s.state = sEsc
			case '\r':
			default:
				out.WriteByte(c)
			}
		case sEsc:
			switch c {
			case '[':
				s.state = sCSI
			case ']':
				s.state = sOSC
			case '(', ')', '*', '+', '-', '.', '/', '#', '%':
				s.state = sCharset
			default: // two-byte sequence such as ESC c or ESC 7
				s.state = sText
			}
		case sCSI:
			switch {
			case c >= 0x40 && c <= 0x7e: // final byte
				s.state = sText
			case c < 0x20: // malformed: end the sequence, keep the control byte
				s.state = sText
				s.strip(out, []byte{c})
			}
		case sOSC:
			switch c {
			case bel:
				s.state = sText
			case esc:
				s.state = sOSCEsc
			case '\n': // malformed: an OSC string never spans lines
				s.state = sText
				out.WriteByte(c)
			}
		case sOSCEsc:
			s.state = sText
			if c != '\\' { // not ST: the ESC began a new sequence
				s.state = sEsc
				s.strip(out, []byte{c})
			}
		case sCharset:
			s.state = sText
		}
	}
}
