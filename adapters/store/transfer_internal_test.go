package store

import (
	"encoding/json"
	"testing"
)

// A file's strings are JSON as encoding/json writes them (but for its HTML
// escaping): every byte string, valid UTF-8 or not, reads back as
// encoding/json would have it.
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "tab\tnew\nline\r", "\x00\x01\x1f\x7f", "é ü 漢字 🎉",
		"\xff\xfe invalid", "line\u2028sep\u2029", "<b>&amp;</b>", string([]byte{0xe2, 0x82}),
	} {
		got := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q wrote %s, which is not JSON: %v", s, got, err)
		}
		var want string
		raw, _ := json.Marshal(s)
		_ = json.Unmarshal(raw, &want)
		if back != want {
			t.Fatalf("%q reads back as %q, encoding/json's as %q", s, back, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("a\"b\\c\x00\xff")
	f.Fuzz(func(t *testing.T, s string) {
		var back, want string
		if err := json.Unmarshal(appendJSONString(nil, s), &back); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		raw, _ := json.Marshal(s)
		_ = json.Unmarshal(raw, &want)
		if back != want {
			t.Fatalf("%q reads back as %q, want %q", s, back, want)
		}
	})
}
