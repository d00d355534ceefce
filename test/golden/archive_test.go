package golden

import (
	"bytes"
	"strings"
)

// archive is a txtar archive: a free-form comment followed by named
// sections. The format is that of golang.org/x/tools/txtar:
//
//	comment lines
//	-- name --
//	section data
//	-- other --
//	...
//
// A line is a section marker when it starts with "-- ", ends with " --" and
// names something in between. Everything before the first marker is the
// comment.
type archive struct {
	Comment string
	Files   []archiveFile
}

// archiveFile is one section of an [archive].
type archiveFile struct {
	Name string
	Data string
}

// parseArchive parses data as a txtar archive. It never fails: text that
// holds no marker is all comment.
func parseArchive(data []byte) *archive {
	a := &archive{}
	var cur *archiveFile
	var buf strings.Builder
	flush := func() {
		if cur == nil {
			a.Comment = buf.String()
		} else {
			cur.Data = buf.String()
			a.Files = append(a.Files, *cur)
		}
		buf.Reset()
	}
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		if name, ok := marker(line); ok {
			flush()
			cur = &archiveFile{Name: name}
			continue
		}
		buf.Write(line)
	}
	flush()
	return a
}

// marker reports whether line is a section marker and returns its name.
func marker(line []byte) (string, bool) {
	s := strings.TrimRight(string(line), "\r\n")
	if !strings.HasPrefix(s, "-- ") || !strings.HasSuffix(s, " --") || len(s) < len("-- x --") {
		return "", false
	}
	name := strings.TrimSpace(s[3 : len(s)-3])
	return name, name != ""
}

// Format returns the archive as txtar text. Every section and a non-empty
// comment end with a newline.
func (a *archive) Format() []byte {
	var b bytes.Buffer
	b.WriteString(withNewline(a.Comment))
	for _, f := range a.Files {
		b.WriteString("-- " + f.Name + " --\n")
		b.WriteString(withNewline(f.Data))
	}
	return b.Bytes()
}

// Get returns the data of the named section.
func (a *archive) Get(name string) (string, bool) {
	for _, f := range a.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return "", false
}

// Set replaces the data of the named section, or appends the section.
func (a *archive) Set(name, data string) {
	for i := range a.Files {
		if a.Files[i].Name == name {
			a.Files[i].Data = data
			return
		}
	}
	a.Files = append(a.Files, archiveFile{Name: name, Data: data})
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
