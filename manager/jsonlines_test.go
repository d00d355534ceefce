package manager

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/iotest"
)

func TestJSONLinesSkipsWhatCannotBeJSON(t *testing.T) {
	big := `{"jsonrpc":"2.0","result":"` + strings.Repeat("x", 200<<10) + `"}` + "\n"
	in := "Server starting on stdio...\n" +
		`{"jsonrpc":"2.0","id":1}` + "\n" +
		"\n   \r\n" +
		"  [1,2]\n" +
		"DEBUG: {not at the start}\n" +
		big +
		"trailing banner without newline"
	want := `{"jsonrpc":"2.0","id":1}` + "\n" + "[1,2]\n" + big
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"one byte": iotest.OneByteReader(strings.NewReader(in)),
		"halves":   iotest.HalfReader(strings.NewReader(in)),
	} {
		f := newJSONLines(r, slog.New(slog.DiscardHandler))
		got, err := io.ReadAll(iotest.OneByteReader(f))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, []byte(want)) {
			t.Errorf("%s: got %d bytes %.80q…, want %d bytes", name, len(got), got, len(want))
		}
		if f.dropped != 3 {
			t.Errorf("%s: dropped %d lines, want 3", name, f.dropped)
		}
	}
}

func TestJSONLinesPassesReadErrors(t *testing.T) {
	f := newJSONLines(iotest.ErrReader(io.ErrUnexpectedEOF), slog.New(slog.DiscardHandler))
	if _, err := f.Read(make([]byte, 8)); err != io.ErrUnexpectedEOF {
		t.Fatalf("err = %v", err)
	}
}
