package events

import (
	"crypto/sha256"
	"encoding/hex"
)

// HashTools returns the hex SHA-256 of the canonical JSON of defs, so two
// lists that differ only in object key order hash the same. Schemas that
// are canonical already (as marshalled ones are) are taken as they are;
// otherwise it is [HashList] of defs, which gives the same bytes.
func HashTools(defs []ToolDef) string {
	size := 2
	for i := range defs {
		d := &defs[i]
		size += 64 + len(d.Name) + len(d.Title) + len(d.Description) + len(d.InputSchema) + len(d.OutputSchema) + len(d.Annotations) + len(d.Icons)
	}
	if b, ok := appendToolsCanonical(make([]byte, 0, size), defs); ok {
		return hashBytes(b)
	}
	return HashList(defs)
}

// hashBytes returns the hex SHA-256 of b.
func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
