package toolsearch

import "strings"

// appendTerms appends the index terms of text to out: text is cut into
// words at every character that is not an ASCII letter or digit, at case
// changes (camelCase, PascalCase, "HTTPServer" → http, server) and between
// letters and digits; each word is lowercased and stemmed, and stop words
// and single letters are dropped. A short word that mixes letters and
// digits ("s3", "ec2", "k8s") is also kept whole.
func appendTerms(out []string, text string) []string {
	ws := words[string]{text: text}
	for w, ok := ws.next(); ok; w, ok = ws.next() {
		if t := wordTerm(w); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// words yields the words of a text as [appendTerms] cuts them, before
// lowercasing.
type words[T string | []byte] struct {
	text  T
	i     int // where the next chunk starts
	chunk T   // the current chunk of letters and digits
	k     int // where the next word of chunk starts
	mixed bool
}

// next returns the next word, and false at the end.
func (ws *words[T]) next() (T, bool) {
	for {
		if ws.k < len(ws.chunk) {
			n := wordLen(ws.chunk[ws.k:])
			if n < len(ws.chunk) {
				ws.mixed = true
			}
			w := ws.chunk[ws.k : ws.k+n]
			ws.k += n
			return w, true
		}
		if ws.mixed && len(ws.chunk) <= 5 && hasDigit(ws.chunk) {
			ws.mixed = false
			return ws.chunk, true // "s3", "ec2", "k8s" as written
		}
		for ws.i < len(ws.text) && !isLetter(ws.text[ws.i]) && !isDigit(ws.text[ws.i]) {
			ws.i++
		}
		if ws.i == len(ws.text) {
			var zero T
			return zero, false
		}
		j := ws.i
		for j < len(ws.text) && (isLetter(ws.text[j]) || isDigit(ws.text[j])) {
			j++
		}
		ws.chunk, ws.k, ws.mixed = ws.text[ws.i:j], 0, false
		ws.i = j
	}
}

// analyser numbers the terms of the documents it analyses and remembers
// the term of every word it has seen: the tools of one server repeat the
// same words again and again.
type analyser struct {
	words map[string]int32 // word as written → term number, -1 when dropped
	ids   map[string]int32 // term → term number
	terms []string         // term number → term
}

func newAnalyser() *analyser {
	return &analyser{words: make(map[string]int32, 1024), ids: make(map[string]int32, 1024)}
}

// appendIDs appends the term numbers of the terms of text.
func appendIDs[T string | []byte](a *analyser, out []int32, text T) []int32 {
	ws := words[T]{text: text}
	for w, ok := ws.next(); ok; w, ok = ws.next() {
		id, ok := a.words[string(w)]
		if !ok {
			word := string(w)
			id = -1
			if t := wordTerm(word); t != "" {
				if id, ok = a.ids[t]; !ok {
					id = int32(len(a.terms))
					a.ids[t] = id
					a.terms = append(a.terms, t)
				}
			}
			a.words[word] = id
		}
		if id >= 0 {
			out = append(out, id)
		}
	}
	return out
}

// wordLen returns the length of the first word of an ASCII letter-digit
// chunk: a digit run, or a letter run cut as [camelSegment] cuts it.
func wordLen[T string | []byte](s T) int {
	if isDigit(s[0]) {
		n := 1
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		return n
	}
	n := 1
	for n < len(s) && isLetter(s[n]) {
		n++
	}
	return camelSegment(s[:n])
}

func hasDigit[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			return true
		}
	}
	return false
}

// wordTerm returns the term of one word: lowercased and stemmed, or "" for
// a stop word or a single letter.
func wordTerm(w string) string {
	if len(w) < 2 && !isDigit(w[0]) {
		return ""
	}
	var buf [64]byte
	lw := append(buf[:0], w...)
	for i, c := range lw {
		if isUpper(c) {
			lw[i] = c + 'a' - 'A'
		}
	}
	if stopWords[string(lw)] {
		return ""
	}
	return stem(string(lw))
}

// stem strips common English suffixes from a lowercase word so that forms
// of one word meet: plurals ("issues", "queries", "branches"), -ing and -ed
// ("creating", "created", "stopped"), -ment and -tion ("deployment",
// "connection"), and a final e ("create" and "created" both become
// "creat"). It is a small deterministic rule set, not a full stemmer.
func stem(w string) string {
	if len(w) <= 3 || isDigit(w[0]) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	switch {
	case strings.HasSuffix(w, "ied") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ing") && len(w) >= 6 && hasVowel(w[:len(w)-3]):
		w = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ed") && len(w) >= 5 && hasVowel(w[:len(w)-2]):
		w = undouble(w[:len(w)-2])
	case strings.HasSuffix(w, "ment") && len(w) >= 9:
		w = w[:len(w)-4]
	case strings.HasSuffix(w, "tion") && len(w) >= 7:
		w = w[:len(w)-3]
	}
	if strings.HasSuffix(w, "e") && len(w) > 3 {
		w = w[:len(w)-1]
	}
	return w
}

// undouble drops the last letter of a doubled final consonant ("stopp" →
// "stop"), except l, s and z ("install", "process").
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !isVowel(w[n-1]) && !strings.ContainsRune("lsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

func isVowel(c byte) bool { return strings.IndexByte("aeiouy", c) >= 0 }

func hasVowel(s string) bool {
	for i := 0; i < len(s); i++ {
		if isVowel(s[i]) {
			return true
		}
	}
	return false
}

// stopWords are dropped from documents and queries: function words and the
// filler of requests ("please", "can you").
var stopWords = setOf(
	"a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with",
	"by", "from", "at", "as", "is", "are", "be", "been", "being", "was",
	"were", "it", "its", "this", "that", "these", "those", "i", "me", "my",
	"we", "our", "us", "you", "your", "he", "she", "they", "them", "their",
	"what", "whats", "which", "who", "whom", "when", "where", "why", "how",
	"do", "does", "did", "can", "could", "should", "would", "will", "shall",
	"may", "might", "must", "has", "have", "had", "not", "no", "any", "some",
	"all", "please", "about", "into", "onto", "than", "then", "there",
	"here", "so", "if", "but", "just", "also", "let", "lets", "want",
	"need", "via", "e", "g", "eg", "ie", "etc", "s", "t", "re", "ll", "ve",
	"m", "d", "im", "up", "out", "only", "such", "other", "each", "both",
	"more", "most", "very", "too", "own", "same", "now", "right", "one",
	"thing", "things", "something",
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
