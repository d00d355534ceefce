package loader

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// fields reads one server entry decoded generically (from JSON or TOML),
// recording a problem for every field of the wrong type instead of failing
// the whole entry at the first one.
type fields struct {
	m        map[string]any
	problems *[]string
}

func (f fields) bad(key, want string) {
	*f.problems = append(*f.problems, fmt.Sprintf("%q must be %s", key, want))
}

func (f fields) has(key string) bool {
	v, ok := f.m[key]
	return ok && v != nil
}

// str reads a string. Numbers and booleans are not strings.
func (f fields) str(key string) string {
	v, ok := f.m[key]
	if !ok || v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		f.bad(key, "a string")
		return ""
	}
	return s
}

// strs reads an array of strings.
func (f fields) strs(key string) []string {
	v, ok := f.m[key]
	if !ok || v == nil {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		f.bad(key, "an array of strings")
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, a := range arr {
		s, ok := a.(string)
		if !ok {
			f.bad(key, "an array of strings")
			return nil
		}
		out = append(out, s)
	}
	return out
}

// strMap reads an object of strings. Numbers and booleans are accepted and
// kept as their text, as people write "PORT": 3000.
func (f fields) strMap(key string) map[string]string {
	v, ok := f.m[key]
	if !ok || v == nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		f.bad(key, "an object of strings")
		return nil
	}
	out := make(map[string]string, len(obj))
	for k, a := range obj {
		s, ok := scalarText(a)
		if !ok {
			f.bad(key+"."+k, "a string")
			continue
		}
		out[k] = s
	}
	return out
}

// scalarText returns the text of a string, number or boolean.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int64:
		return strconv.FormatInt(x, 10), true
	}
	return "", false
}

// boolean reads a boolean; "true", "false", "1" and "0" are accepted too.
func (f fields) boolean(key string) *bool {
	v, ok := f.m[key]
	if !ok || v == nil {
		return nil
	}
	var b bool
	switch x := v.(type) {
	case bool:
		b = x
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "1":
			b = true
		case "false", "0":
			b = false
		default:
			f.bad(key, "a boolean")
			return nil
		}
	default:
		f.bad(key, "a boolean")
		return nil
	}
	return &b
}

// number reads a number; numeric strings are accepted too.
func (f fields) number(key string) (float64, bool) {
	v, ok := f.m[key]
	if !ok || v == nil {
		return 0, false
	}
	var n float64
	switch x := v.(type) {
	case float64:
		n = x
	case int64:
		n = float64(x)
	case string:
		p, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			f.bad(key, "a number")
			return 0, false
		}
		n = p
	default:
		f.bad(key, "a number")
		return 0, false
	}
	if math.IsNaN(n) || math.IsInf(n, 0) {
		f.bad(key, "a finite number")
		return 0, false
	}
	return n, true
}

// millis reads a non-negative duration given in units of scale
// milliseconds (1 for ms, 1000 for seconds).
func (f fields) millis(key string, scale float64) *int64 {
	n, ok := f.number(key)
	if !ok {
		return nil
	}
	ms := n * scale
	if ms < 0 || ms > math.MaxInt64/2 {
		f.bad(key, "a non-negative number")
		return nil
	}
	v := int64(math.Round(ms))
	return &v
}

// byteCount reads a non-negative whole number of bytes.
func (f fields) byteCount(key string) *int64 {
	n, ok := f.number(key)
	if !ok {
		return nil
	}
	if n < 0 || n != math.Trunc(n) || n > math.MaxInt64/2 {
		f.bad(key, "a non-negative whole number of bytes")
		return nil
	}
	v := int64(n)
	return &v
}
