package events

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// HashTools returns the hex SHA-256 of the canonical JSON of defs, so two
// lists that differ only in object key order hash the same.
func HashTools(defs []ToolDef) string {
	size := 2
	for i := range defs {
		d := &defs[i]
		size += 64 + len(d.Name) + len(d.Title) + len(d.Description) + len(d.InputSchema) + len(d.OutputSchema) + len(d.Annotations) + len(d.Icons)
	}
	if b, ok := appendToolsCanonical(make([]byte, 0, size), defs); ok {
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	}
	b, err := canonicalJSON(defs)
	if err != nil {
		// Fall back to the raw encoding: a schema that is not valid JSON
		// still gets a stable hash.
		b, _ = json.Marshal(defs)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
