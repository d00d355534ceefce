package toolsearch

import (
	"bytes"
	"encoding/json"
	"math"
	"unicode/utf8"

	"github.com/mcplife/mcplife/events"
)

// EstimateTokens returns an estimate of the number of tokens a model reads
// for def: its name, a newline, its description, a newline and its input
// schema as compact JSON. To count a tool as an agent sees it, pass a copy
// of its definition whose Name is the exposed name.
//
// The estimate follows how byte-pair tokenizers of the cl100k_base and
// o200k_base kind cut text (see the package documentation); it reads no
// vocabulary, so it is fast and deterministic. An input schema that is not
// valid JSON is counted as it is.
func EstimateTokens(def events.ToolDef) int {
	var e estimator
	e.add(def.Name)
	e.add("\n")
	e.add(def.Description)
	e.add("\n")
	if len(def.InputSchema) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, def.InputSchema); err == nil {
			e.addBytes(buf.Bytes())
		} else {
			e.addBytes(def.InputSchema)
		}
	}
	return e.total()
}

// EstimateTextTokens returns an estimate of the number of tokens of text,
// by the same rules as [EstimateTokens].
func EstimateTextTokens(text string) int {
	var e estimator
	e.add(text)
	return e.total()
}

// estimator sums fractional token costs of the pieces of a text; fractions
// are the average number of tokens a piece of that kind and length takes.
type estimator struct {
	sum float64
}

func (e *estimator) total() int { return int(math.Round(e.sum)) }

func (e *estimator) add(s string) { e.addBytes([]byte(s)) }

func (e *estimator) addBytes(b []byte) {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case isLetter(c):
			j := i
			for j < len(b) && isLetter(b[j]) {
				j++
			}
			e.letters(b[i:j])
			i = j
		case isDigit(c):
			j := i
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			e.sum += float64((j - i + 2) / 3) // digits are cut in groups of up to three
			i = j
		case c == ' ' && i+1 < len(b) && b[i+1] != ' ' && !isSpace(b[i+1]) && !isDigit(b[i+1]) && b[i+1] < utf8.RuneSelf:
			i++ // a single space joins the word or punctuation that follows it
		case isSpace(c):
			j := i
			for j < len(b) && isSpace(b[j]) {
				j++
			}
			e.sum++
			i = j
		case c >= utf8.RuneSelf:
			_, n := utf8.DecodeRune(b[i:])
			e.sum++
			i += n
		default:
			j := i
			for j < len(b) && b[j] < utf8.RuneSelf && !isLetter(b[j]) && !isDigit(b[j]) && !isSpace(b[j]) {
				j++
			}
			switch {
			case j-i == 1 && j < len(b) && isLetter(b[j]):
				// One punctuation character joins the word that
				// follows it ("_directory", ".org").
			default:
				e.sum += punctCost(j - i)
				for j < len(b) && (b[j] == '\n' || b[j] == '\r') {
					j++ // line ends join the punctuation before them
				}
			}
			i = j
		}
	}
}

// letters adds the cost of a run of ASCII letters, cut at case changes as
// camelCase words are.
func (e *estimator) letters(w []byte) {
	for len(w) > 0 {
		n := camelSegment(w)
		e.sum += wordCost(w[:n])
		w = w[n:]
	}
}

// camelSegment returns the length of the first segment of w: an uppercase
// run that is not followed by a lowercase letter ("HTTP" of "HTTPServer"),
// or an optional uppercase letter and a lowercase run ("Server").
func camelSegment[T string | []byte](w T) int {
	i := 0
	for i < len(w) && isUpper(w[i]) {
		i++
	}
	if i == len(w) {
		return i
	}
	if i > 1 {
		return i - 1 // the last capital starts the next word
	}
	for i < len(w) && !isUpper(w[i]) {
		i++
	}
	return i
}

// wordCost is the average number of tokens of a word of ASCII letters.
func wordCost(w []byte) float64 {
	n := len(w)
	if isUpper(w[0]) && (n == 1 || isUpper(w[n-1])) { // an acronym
		if n <= 3 {
			return 1
		}
		return 1 + float64(n-3)/3
	}
	switch {
	case n <= 6:
		return 1
	case n <= 11:
		return 1.05
	default:
		return 1 + float64(n-8)/6
	}
}

// punctCost is the average number of tokens of a run of n punctuation
// characters.
func punctCost(n int) float64 {
	switch n {
	case 1, 2:
		return 1
	case 3:
		return 1.07
	case 4:
		return 1.15
	default:
		return float64(n) / 2.3
	}
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isUpper(c byte) bool  { return 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isSpace(c byte) bool  { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
