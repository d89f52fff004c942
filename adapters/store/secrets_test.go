package store_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/secretbox"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/ports"
)

func keyring(t *testing.T, n int) (*secretbox.Keyring, []string) {
	t.Helper()
	var keys []string
	for range n {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, base64.StdEncoding.EncodeToString(k))
	}
	r, err := secretbox.Parse(strings.Join(keys, ","))
	if err != nil {
		t.Fatal(err)
	}
	return r, keys
}

func openWith(t *testing.T, url string, k *secretbox.Keyring) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), url, store.WithSecrets(k))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

type rawSecrets struct {
	Secret   string
	Previous *string
	Headers  string
}

func rawWebhook(t *testing.T, db *store.DB, id string) rawSecrets {
	t.Helper()
	var r rawSecrets
	if err := db.Gorm().Raw("SELECT secret, previous_secret AS previous, headers FROM webhooks WHERE id = ?", id).Scan(&r).Error; err != nil {
		t.Fatal(err)
	}
	return r
}

// With a keyring, webhook secrets (current and previous) and idempotency
// replays are stored sealed, bound to their row, and read back as they
// were.
func TestSecretsAreSealedAtRest(t *testing.T) {
	t.Parallel()
	storetest.ForEachURL(t, func(t *testing.T, url string) {
		ctx := context.Background()
		k, _ := keyring(t, 1)
		db := openWith(t, url, k)
		ws := newWorkspace(t, db)
		w := newWebhook(t, db, ws, base, "task.created")
		rotated := w.RotateSecret(base.Add(time.Second), time.Hour)
		rotated.Headers = map[string]string{"Authorization": "Bearer gw-credential", "X-Tenant": "acme"}
		if err := db.Webhooks().UpdateWebhook(ctx, rotated); err != nil {
			t.Fatal(err)
		}
		raw := rawWebhook(t, db, w.ID)
		if !strings.HasPrefix(raw.Secret, "wtksealed:v1:") || raw.Previous == nil || !strings.HasPrefix(*raw.Previous, "wtksealed:v1:") ||
			strings.Contains(raw.Secret+*raw.Previous, "whsec_") {
			t.Fatalf("stored: %+v", raw)
		}
		// Custom headers' values may be a gateway's credentials: sealed too.
		if !strings.HasPrefix(raw.Headers, "wtksealed:v1:") || strings.Contains(raw.Headers, "gw-credential") {
			t.Fatalf("headers stored: %q", raw.Headers)
		}
		got, err := db.Webhooks().FindWebhookByID(ctx, ws.ID, w.ID)
		if err != nil || got.Secret != rotated.Secret || got.PreviousSecret != w.Secret || got.Headers["Authorization"] != "Bearer gw-credential" ||
			got.Headers["X-Tenant"] != "acme" || len(got.Headers) != 2 {
			t.Fatalf("read back: %+v %v", got, err)
		}

		// A sealed secret copied onto another webhook's row does not open there.
		other := newWebhook(t, db, ws, base, "task.created")
		if err := db.Gorm().Exec("UPDATE webhooks SET secret = ? WHERE id = ?", raw.Secret, other.ID).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := db.Webhooks().FindWebhookByID(ctx, ws.ID, other.ID); !errors.Is(err, secretbox.ErrCorrupt) {
			t.Fatalf("a moved secret: %v", err)
		}
		if _, err := db.CheckSecrets(ctx); !errors.Is(err, secretbox.ErrCorrupt) {
			t.Fatalf("CheckSecrets misses a moved secret: %v", err)
		}
		// So do sealed headers.
		if err := db.Gorm().Exec("UPDATE webhooks SET secret = ?, headers = ? WHERE id = ?", rawWebhook(t, db, other.ID).Secret, raw.Headers, other.ID).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := db.Webhooks().FindWebhookByID(ctx, ws.ID, other.ID); !errors.Is(err, secretbox.ErrCorrupt) {
			t.Fatalf("moved headers: %v", err)
		}
		if _, err := db.CheckSecrets(ctx); !errors.Is(err, secretbox.ErrCorrupt) {
			t.Fatalf("CheckSecrets misses moved headers: %v", err)
		}
		if err := db.Webhooks().DeleteWebhook(ctx, ws.ID, other.ID); err != nil {
			t.Fatal(err)
		}

		// Idempotency replays.
		idem := db.Idempotency()
		key := newKey(t, db, newUser(t, db, ws, "ada@example.com", base), 0, base)
		rec := &ports.KeyedRequest{APIKeyID: key.ID, Key: "k1", Method: "POST", Path: "/v1/webhooks", BodyHash: "h", At: base}
		body := []byte(`{"secret":"` + rotated.Secret + `"}`)
		if err := db.InTx(ctx, func(ctx context.Context) error {
			if err := idem.ClaimKey(ctx, rec); err != nil {
				return err
			}
			return idem.CommitAnswer(ctx, rec, ports.Answer{Status: 201, Body: body})
		}); err != nil {
			t.Fatal(err)
		}
		var stored []byte
		if err := db.Gorm().Raw("SELECT response_body FROM idempotency_keys").Row().Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(stored), "whsec_") || !secretbox.Sealed(stored) {
			t.Fatalf("a replay is stored in plaintext: %s", stored)
		}
		replay, err := idem.FindIdempotent(ctx, key.ID, "k1", base.Add(-time.Hour))
		if err != nil || replay == nil || string(replay.Body) != string(body) {
			t.Fatalf("replay: %+v %v", replay, err)
		}
		rep, err := db.CheckSecrets(ctx)
		if err != nil || rep.Webhooks != 1 || rep.Replays != 1 {
			t.Fatalf("CheckSecrets: %+v %v", rep, err)
		}
	})
}

// reencrypt seals what was stored before the keyring, and moves what an
// old key sealed under the new one; CheckSecrets refuses a ring that opens
// nothing stored, and one missing the key of a replay.
func TestReencryptSecrets(t *testing.T) {
	t.Parallel()
	storetest.ForEachURL(t, func(t *testing.T, url string) {
		ctx := context.Background()
		plain := openWith(t, url, nil)
		ws := newWorkspace(t, plain)
		w := newWebhook(t, plain, ws, base, "task.created")
		w.Headers = map[string]string{"Authorization": "Bearer gw-credential"}
		if err := plain.Webhooks().UpdateWebhook(ctx, w); err != nil {
			t.Fatal(err)
		}
		if raw := rawWebhook(t, plain, w.ID); raw.Secret != w.Secret || raw.Headers != `{"Authorization":"Bearer gw-credential"}` {
			t.Fatalf("without a keyring the secret and headers are stored as they are: %+v", raw)
		}
		oldRing, oldKeys := keyring(t, 1)
		sealed := openWith(t, url, oldRing)
		rep, err := sealed.ReencryptSecrets(ctx)
		if err != nil || rep.Webhooks != 1 || rep.Rewritten != 1 {
			t.Fatalf("reencrypt plaintext: %+v %v", rep, err)
		}
		if raw := rawWebhook(t, plain, w.ID); !strings.HasPrefix(raw.Headers, "wtksealed:v1:") || strings.Contains(raw.Headers, "gw-credential") {
			t.Fatalf("reencrypt left the headers as they were: %q", raw.Headers)
		}
		if rep, _ := sealed.ReencryptSecrets(ctx); rep.Rewritten != 0 {
			t.Fatalf("reencrypt again rewrote %d", rep.Rewritten)
		}
		underOld := rawWebhook(t, plain, w.ID).Secret

		_, newKeys := keyring(t, 1)
		both, err := secretbox.Parse(newKeys[0] + "," + oldKeys[0])
		if err != nil {
			t.Fatal(err)
		}
		rotating := openWith(t, url, both)
		if rep, err := rotating.ReencryptSecrets(ctx); err != nil || rep.Rewritten != 1 {
			t.Fatalf("reencrypt under the new key: %+v %v", rep, err)
		}
		if after := rawWebhook(t, plain, w.ID).Secret; after == underOld || !both.Current([]byte(after)) {
			t.Fatal("the secret was not rewritten under the new key")
		}
		newOnly, _ := secretbox.Parse(newKeys[0])
		got, err := openWith(t, url, newOnly).Webhooks().FindWebhookByID(ctx, ws.ID, w.ID)
		if err != nil || got.Secret != w.Secret || got.Headers["Authorization"] != "Bearer gw-credential" {
			t.Fatalf("the new key alone: %v", err)
		}
		if _, err := openWith(t, url, oldRing).CheckSecrets(ctx); !errors.Is(err, secretbox.ErrNoKey) {
			t.Fatalf("the old key alone: %v", err)
		}
		if _, err := plain.CheckSecrets(ctx); !errors.Is(err, secretbox.ErrNoKey) {
			t.Fatalf("no key: %v", err)
		}
	})
}
