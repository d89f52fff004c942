package secretbox_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/secretbox"
)

func newKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, secretbox.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

func ring(t *testing.T, keys ...string) *secretbox.Keyring {
	t.Helper()
	k, err := secretbox.Parse(strings.Join(keys, ","))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestParse(t *testing.T) {
	a := newKey(t)
	for _, bad := range []string{
		"not base64!",
		base64.StdEncoding.EncodeToString([]byte("sixteen bytes!!!")),
		a + "," + a,
		a + ",",
	} {
		if _, err := secretbox.Parse(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	if k, err := secretbox.Parse(""); err != nil || k.Enabled() {
		t.Fatalf("empty: %v %v", k, err)
	}
	if k := ring(t, " "+a+" , "+newKey(t)); !k.Enabled() {
		t.Fatal("two keys, spaces around them")
	}
}

func TestSealOpen(t *testing.T) {
	k := ring(t, newKey(t))
	sealed := k.Seal([]byte("whsec_abc"), "whk_1")
	if !secretbox.Sealed(sealed) || bytes.Contains(sealed, []byte("whsec_abc")) || !k.Current(sealed) {
		t.Fatalf("sealed: %s", sealed)
	}
	if again := k.Seal([]byte("whsec_abc"), "whk_1"); bytes.Equal(again, sealed) {
		t.Fatal("two seals of one value are equal: the nonce is not fresh")
	}
	plain, err := k.Open(sealed, "whk_1")
	if err != nil || string(plain) != "whsec_abc" {
		t.Fatalf("open: %q %v", plain, err)
	}
	if _, err := k.Open(sealed, "whk_2"); !errors.Is(err, secretbox.ErrCorrupt) {
		t.Fatalf("moved to another row: %v", err)
	}
	damaged := append([]byte{}, sealed...)
	damaged[len(damaged)-3] ^= 1
	if _, err := k.Open(damaged, "whk_1"); !errors.Is(err, secretbox.ErrCorrupt) {
		t.Fatalf("damaged: %v", err)
	}
	if _, err := ring(t, newKey(t)).Open(sealed, "whk_1"); !errors.Is(err, secretbox.ErrNoKey) {
		t.Fatalf("another key: %v", err)
	}
	var none *secretbox.Keyring
	if _, err := none.Open(sealed, "whk_1"); !errors.Is(err, secretbox.ErrNoKey) || none.Holds(sealed) {
		t.Fatalf("no keyring: %v", err)
	}
	if plain, err := none.Open([]byte("whsec_old"), "whk_1"); err != nil || string(plain) != "whsec_old" {
		t.Fatal("a value from before sealing opens as itself")
	}
	if got := none.SealString("whsec_x", "whk_1"); got != "whsec_x" || !none.Current([]byte(got)) {
		t.Fatal("without keys, values are stored as they are")
	}
	if k.SealString("", "whk_1") != "" {
		t.Fatal("an empty secret stays empty")
	}
}

// A new key prepended seals; the old one still opens what it sealed, and
// Current marks what reencrypt must rewrite.
func TestRotation(t *testing.T) {
	oldKey, newKey := newKey(t), newKey(t)
	before := ring(t, oldKey).Seal([]byte("s"), "c")
	both := ring(t, newKey, oldKey)
	if plain, err := both.Open(before, "c"); err != nil || string(plain) != "s" {
		t.Fatalf("the old key opens: %v", err)
	}
	if both.Current(before) || both.Current([]byte("plain")) || !both.Holds(before) {
		t.Fatal("values under the old key, or plaintext, are not current")
	}
	after := both.Seal([]byte("s"), "c")
	if !both.Current(after) {
		t.Fatal("the first key seals")
	}
	if plain, err := ring(t, newKey).Open(after, "c"); err != nil || string(plain) != "s" {
		t.Fatalf("the new key alone opens: %v", err)
	}
	if !ring(t, newKey).Holds(after[:secretbox.HeadLength]) || ring(t, oldKey).Holds(after[:secretbox.HeadLength]) {
		t.Fatal("Holds reads the key id from the head")
	}
}
