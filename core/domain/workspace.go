package domain

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Workspace is the tenant: every other resource belongs to exactly one.
type Workspace struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// NewWorkspace validates a workspace about to be created.
func NewWorkspace(id, name string, now time.Time) (Workspace, error) {
	name, err := cleanName("name", name, 200)
	if err != nil {
		return Workspace{}, err
	}
	return Workspace{ID: id, Name: name, CreatedAt: Timestamp(now)}, nil
}

// cleanName trims a display name and checks it holds 1..max characters and no
// control characters. The trimmed value is what gets stored.
func cleanName(param, s string, maxLen int) (string, error) {
	s = strings.TrimSpace(s)
	n := utf8.RuneCountInString(s)
	if n == 0 || n > maxLen {
		return "", Invalid(param, "Must be 1 to %d characters after trimming.", maxLen)
	}
	if !utf8.ValidString(s) {
		return "", Invalid(param, "Must be valid UTF-8.")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "", Invalid(param, "Must not contain control characters.")
		}
	}
	return s, nil
}
