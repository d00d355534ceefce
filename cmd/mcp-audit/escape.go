package main

import (
	"strings"
	"unicode/utf8"
)

// Servers choose their names for themselves, their tool names, their error
// texts and what they write to stderr; config files and recorded events
// carry text from elsewhere too. Human output passes all such text through
// escapeLine or escapeText, so none of it can move the cursor, clear the
// screen, set the window title or reorder what is shown around it.
//
// JSON output goes through escapeJSON: encoding/json already escapes C0
// controls and replaces bytes that are not UTF-8, but writes DEL, C1
// controls and bidirectional controls as they are.

// escapeLine returns s for a single line or a table cell: every control
// character (C0, tab and newline included, DEL, C1), every bidirectional
// embedding, override or isolate (U+202A–U+202E, U+2066–U+2069) and every
// byte that is not UTF-8 is written as an escape: \t, \n, \r, \x1b, \x7f,
// \u009b, \u202e, or \xff for a stray byte. Everything else is kept,
// backslashes included: the result is for reading, not for parsing back.
func escapeLine(s string) string { return escape(s, false) }

// escapeText is [escapeLine] for text printed over several lines, such as
// a tool's output: newlines and tabs are kept as they are.
func escapeText(s string) string { return escape(s, true) }

func escape(s string, keepLayout bool) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if mustEscape(r, size, keepLayout) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case !mustEscape(r, size, keepLayout):
			b.WriteString(s[i : i+size])
		case r == utf8.RuneError:
			writeHex(&b, `\x`, uint32(s[i]), 2)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < utf8.RuneSelf:
			writeHex(&b, `\x`, uint32(r), 2)
		default:
			writeHex(&b, `\u`, uint32(r), 4)
		}
		i += size
	}
	return b.String()
}

// mustEscape reports whether the rune r, size bytes long in the input,
// must be escaped.
func mustEscape(r rune, size int, keepLayout bool) bool {
	switch {
	case r == utf8.RuneError:
		return size == 1 // not UTF-8; a real U+FFFD is kept
	case r == '\n' || r == '\t':
		return !keepLayout
	}
	return isControl(r) || isBidiControl(r)
}

// isControl reports C0 controls, DEL and C1 controls.
func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }

// isBidiControl reports the bidirectional embeddings, overrides and
// isolates, which reorder the text displayed after them.
func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

func writeHex(b *strings.Builder, prefix string, v uint32, digits int) {
	const hex = "0123456789abcdef"
	b.WriteString(prefix)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hex[v>>shift&0xf])
	}
}

// escapeJSON rewrites encoded JSON so that DEL, C1 controls and
// bidirectional controls appear as \u escapes: the same JSON value, with
// nothing a terminal would act on. Encoded JSON holds such characters only
// inside strings, where \u escapes mean the same characters.
func escapeJSON(b []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		// C0 controls are escaped already (and the newlines outside
		// strings are the layout).
		if r >= 0x7f && (isControl(r) || isBidiControl(r)) {
			if out == nil {
				out = make([]byte, 0, len(b)+16)
			}
			out = append(out, b[last:i]...)
			var sb strings.Builder
			writeHex(&sb, `\u`, uint32(r), 4)
			out = append(out, sb.String()...)
			last = i + size
		}
		i += size
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// clip shortens s to at most n runes, ending it with "…" when cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut, count := 0, 0
	for i := range s {
		if count == n-1 {
			cut = i
			break
		}
		count++
	}
	return s[:cut] + "…"
}
