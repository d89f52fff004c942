package store

import "testing"

func TestTextArrayLiteralQuotesEveryElement(t *testing.T) {
	v, err := pgTextArray{"plain", `a"b`, `c\d`, "é"}.Value()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"plain","a\"b","c\\d","é"}`; v != want {
		t.Fatalf("literal %s, want %s", v, want)
	}
	if v, _ := (pgTextArray{}).Value(); v != "{}" {
		t.Fatalf("empty array %s", v)
	}
}
