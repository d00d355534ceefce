package golden

import "golang.org/x/tools/txtar"

// section returns the data of the section of a named name, and whether a
// has one.
func section(a *txtar.Archive, name string) (string, bool) {
	for _, f := range a.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
}

// setSection replaces the data of the section of a named name, or appends
// the section.
func setSection(a *txtar.Archive, name, data string) {
	for i := range a.Files {
		if a.Files[i].Name == name {
			a.Files[i].Data = []byte(data)
			return
		}
	}
	a.Files = append(a.Files, txtar.File{Name: name, Data: []byte(data)})
}
