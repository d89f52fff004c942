package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/internal/proctest"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "worktrack-bin")
	if err != nil {
		panic(err)
	}
	if binary, err = proctest.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	storetest.Main(m, func() { os.RemoveAll(dir) })
}

// startServe runs `worktrack serve` in dir with env and waits until it
// listens.
func startServe(t *testing.T, dir string, env ...string) *proctest.Server {
	t.Helper()
	return proctest.Serve(t, binary, dir, env...)
}

var secretRe = proctest.SecretRe

// runCmd runs a sub-command and returns stdout, stderr and the exit code.
func runCmd(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"DATABASE_URL=", "REDIS_URL="}, env...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}

func get(t *testing.T, client *http.Client, url, key string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, body
}

// The README's first experience: serve on the embedded default prints the
// bootstrap key once, the key works, and a second start prints none.
func TestFirstStartBootstrapsOnce(t *testing.T) {
	dir := t.TempDir()
	p := startServe(t, dir)
	secrets := secretRe.FindAllString(p.Stderr.String(), -1)
	// Not a terminal: JSON mode, where the key is a record's api_key.
	if len(secrets) == 0 || !strings.Contains(p.Stderr.String(), `"api_key":"`+secrets[0]+`"`) {
		t.Fatalf("no bootstrap record:\n%s", p.Stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "worktrack.db")); err != nil {
		t.Fatalf("the embedded default must create worktrack.db in the working directory: %v", err)
	}
	if n := strings.Count(p.Stderr.String(), "WORKTRACK_SECRETS_KEY is not set"); n != 1 {
		t.Fatalf("without WORKTRACK_SECRETS_KEY, serve warns once that secrets are stored in plaintext; %d warnings:\n%s", n, p.Stderr.String())
	}
	code, me := get(t, http.DefaultClient, p.Base+"/v1/users/me", secrets[0])
	if code != 200 || me["email"] != "admin@example.com" || me["role"] != "admin" {
		t.Fatalf("bootstrap key: %d %v", code, me)
	}
	if code, _ := get(t, http.DefaultClient, p.Base+"/healthz", ""); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	if code, _ := get(t, http.DefaultClient, p.Base+"/readyz", ""); code != 200 {
		t.Fatalf("readyz %d", code)
	}
	// GraphQL is mounted at /graphql behind the same keys.
	req, err := http.NewRequest(http.MethodPost, p.Base+"/graphql", strings.NewReader(`{"query":"{ me { email role } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secrets[0])
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(body) != "{\"data\":{\"me\":{\"email\":\"admin@example.com\",\"role\":\"ADMIN\"}}}\n" {
		t.Fatalf("graphql: %d %s", res.StatusCode, body)
	}
	// One JSON log line per request on stderr, within the log's 100 ms
	// flush interval.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.Stderr.String(), `"msg":"request"`) || !strings.Contains(p.Stderr.String(), `"path":"/v1/users/me"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no access log line after 5s:\n%s", p.Stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c := p.Stop(t); c != 0 {
		t.Fatalf("exit code after SIGTERM: %d\n%s", c, p.Stderr.String())
	}

	// In JSON mode every line serve wrote to stderr is one JSON object.
	for _, line := range strings.Split(strings.TrimSpace(p.Stderr.String()), "\n") {
		if !json.Valid([]byte(line)) || !strings.HasPrefix(line, "{") {
			t.Fatalf("a line that is not one JSON object in JSON mode: %q", line)
		}
	}

	again := startServe(t, dir)
	if secretRe.MatchString(again.Stderr.String()) || strings.Contains(again.Stderr.String(), "api_key") {
		t.Fatalf("a second start printed a key:\n%s", again.Stderr.String())
	}
	if code, _ := get(t, http.DefaultClient, again.Base+"/v1/users/me", secrets[0]); code != 200 {
		t.Fatalf("the bootstrap key stopped working: %d", code)
	}
	again.Stop(t)
}

// The operator makes scoped and project-restricted keys, and changes a
// user's role; bad scopes are refused with one line.
func TestOperatorScopedKeysAndRoles(t *testing.T) {
	dir := t.TempDir()
	env := []string{"DATABASE_URL=sqlite:" + filepath.Join(dir, "ops.db")}
	out, errOut, code := runCmd(t, dir, env, "workspace", "create", "--name", "Ops")
	var ws map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &ws) != nil {
		t.Fatalf("workspace create: %d %s %s", code, out, errOut)
	}
	out, errOut, code = runCmd(t, dir, env, "user", "create", "--workspace", ws["id"].(string), "--email", "op@ops.test", "--name", "Op", "--role", "member")
	var user map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &user) != nil {
		t.Fatalf("user create: %d %s %s", code, out, errOut)
	}
	uid := user["id"].(string)
	out, errOut, code = runCmd(t, dir, env, "key", "create", "--user", uid, "--scopes", "tasks:read,projects:read")
	var key map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &key) != nil || fmt.Sprint(key["scopes"]) != "[tasks:read projects:read]" ||
		key["name"] != "cli" || key["project_ids"] != nil {
		t.Fatalf("key create --scopes: %d %s %s", code, out, errOut)
	}
	_, errOut, code = runCmd(t, dir, env, "key", "create", "--user", uid, "--scopes", "tasks:delete")
	if code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "scopes") {
		t.Fatalf("an unknown scope: %d %q", code, errOut)
	}
	_, errOut, code = runCmd(t, dir, env, "key", "create", "--user", uid, "--projects", "prj_nope")
	if code == 0 || !strings.Contains(errOut, "project_ids") {
		t.Fatalf("an unknown project: %d %q", code, errOut)
	}
	out, errOut, code = runCmd(t, dir, env, "user", "update", uid, "--role", "guest")
	if code != 0 || json.Unmarshal([]byte(out), &user) != nil || user["role"] != "guest" {
		t.Fatalf("user update: %d %s %s", code, out, errOut)
	}
	_, errOut, code = runCmd(t, dir, env, "user", "update", uid, "--role", "owner")
	if code == 0 || !strings.Contains(errOut, "role") {
		t.Fatalf("an unknown role: %d %q", code, errOut)
	}
}

// Operator commands print JSON; a key revoked by the command stops working in
// a running server within 10 seconds.
func TestOperatorCommandsAndCrossProcessRevocation(t *testing.T) {
	dir := t.TempDir()
	env := []string{"DATABASE_URL=sqlite:" + filepath.Join(dir, "ops.db")}
	out, errOut, code := runCmd(t, dir, env, "migrate")
	var migrated struct{ Applied []int64 }
	if code != 0 || json.Unmarshal([]byte(out), &migrated) != nil || len(migrated.Applied) == 0 {
		t.Fatalf("migrate: %d %s %s", code, out, errOut)
	}
	out, _, _ = runCmd(t, dir, env, "migrate")
	if strings.Join(strings.Fields(out), "") != `{"applied":[]}` {
		t.Fatalf("second migrate: %s", out)
	}

	out, errOut, code = runCmd(t, dir, env, "workspace", "create", "--name", "Ops")
	var ws map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &ws) != nil || !strings.HasPrefix(ws["id"].(string), "wsp_") || ws["object"] != "workspace" || ws["name"] != "Ops" {
		t.Fatalf("workspace create: %d %s %s", code, out, errOut)
	}
	out, errOut, code = runCmd(t, dir, env, "user", "create", "--workspace", ws["id"].(string), "--email", "op@ops.test", "--name", "Op", "--role", "member")
	var user map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &user) != nil || user["object"] != "user" || user["role"] != "member" {
		t.Fatalf("user create: %d %s %s", code, out, errOut)
	}
	out, errOut, code = runCmd(t, dir, env, "key", "create", "--user", user["id"].(string), "--name", "ci", "--expires-in", "720h")
	var key map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &key) != nil || !secretRe.MatchString(fmt.Sprint(key["secret"])) || key["expires_at"] == nil {
		t.Fatalf("key create: %d %s %s", code, out, errOut)
	}
	out, _, code = runCmd(t, dir, env, "key", "list", "--user", user["id"].(string))
	if code != 0 || strings.Contains(out, key["secret"].(string)) || strings.Contains(out, `"secret"`) || !strings.Contains(out, key["id"].(string)) {
		t.Fatalf("key list must list keys without secrets: %s", out)
	}
	// Errors are one line on stderr and a non-zero exit.
	_, errOut, code = runCmd(t, dir, env, "user", "create", "--workspace", "wsp_nope", "--email", "x@y.z", "--name", "X", "--role", "member")
	if code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "resource_not_found") {
		t.Fatalf("user create in an unknown workspace: %d %q", code, errOut)
	}
	_, errOut, code = runCmd(t, dir, env, "user", "create", "--workspace", ws["id"].(string), "--email", "a@b.c", "--name", "X", "--role", "owner")
	if code == 0 || !strings.Contains(errOut, "role") {
		t.Fatalf("bad role: %d %q", code, errOut)
	}

	p := startServe(t, dir, env...)
	secret := key["secret"].(string)
	if code, _ := get(t, http.DefaultClient, p.Base+"/v1/users/me", secret); code != 200 {
		t.Fatalf("new key refused: %d", code)
	}
	out, errOut, code = runCmd(t, dir, env, "key", "revoke", key["id"].(string))
	if code != 0 || strings.Contains(out, secret) || !strings.Contains(out, `"revoked_at": "`) {
		t.Fatalf("key revoke: %d %s %s", code, out, errOut)
	}
	revoked := time.Now()
	for {
		code, body := get(t, http.DefaultClient, p.Base+"/v1/users/me", secret)
		if code == 401 {
			if e, _ := body["error"].(map[string]any); e["code"] != "invalid_api_key" {
				t.Fatalf("revoked key: %v", body)
			}
			break
		}
		if time.Since(revoked) > 10*time.Second {
			t.Fatal("a revoked key still works in another process after 10 seconds")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("revocation reached the server after %v", time.Since(revoked).Round(100*time.Millisecond))
	p.Stop(t)
}

// Bad configuration exits non-zero with one line naming the variable.
func TestBadConfigurationExits(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	for _, tc := range []struct {
		env      []string
		variable string
	}{
		{[]string{"WORKTRACK_RATE_WINDOW=soon"}, "WORKTRACK_RATE_WINDOW"},
		{[]string{"WORKTRACK_RATE_LIMIT=-3"}, "WORKTRACK_RATE_LIMIT"},
		{[]string{"WORKTRACK_WEBHOOK_TIMEOUT=5"}, "WORKTRACK_WEBHOOK_TIMEOUT"},
		{[]string{"WORKTRACK_WEBHOOK_ALLOW_PRIVATE=maybe"}, "WORKTRACK_WEBHOOK_ALLOW_PRIVATE"},
		{[]string{"WORKTRACK_GRAPHQL_MAX_COMPLEXITY=lots"}, "WORKTRACK_GRAPHQL_MAX_COMPLEXITY"},
		{[]string{"WORKTRACK_GRAPHQL_MAX_DEPTH=0"}, "WORKTRACK_GRAPHQL_MAX_DEPTH"},
		{[]string{"WORKTRACK_TLS_CERT=" + cert}, "WORKTRACK_TLS_KEY"},
		{[]string{"WORKTRACK_TLS_KEY=" + key}, "WORKTRACK_TLS_CERT"},
		{[]string{"DATABASE_URL=mysql://x"}, "DATABASE_URL"},
		{[]string{"DATABASE_URL=postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"}, "DATABASE_URL"},
		{[]string{"REDIS_URL=redis://127.0.0.1:1/0"}, "REDIS_URL"},
		{[]string{"WORKTRACK_ADDR=256.0.0.1:99999"}, "WORKTRACK_ADDR"},
		{[]string{"WORKTRACK_SHUTDOWN_TIMEOUT=never"}, "WORKTRACK_SHUTDOWN_TIMEOUT"},
		{[]string{"WORKTRACK_LOG_FORMAT=xml"}, "WORKTRACK_LOG_FORMAT"},
		{[]string{"WORKTRACK_EVENT_RETENTION=1h"}, "WORKTRACK_EVENT_RETENTION"},
		{[]string{"WORKTRACK_WEBHOOK_DISABLE_AFTER=12h"}, "WORKTRACK_WEBHOOK_DISABLE_AFTER"},
		{[]string{"WORKTRACK_WEBHOOK_DISABLE_AFTER=soon"}, "WORKTRACK_WEBHOOK_DISABLE_AFTER"},
		{[]string{"WORKTRACK_LOG_LEVEL=verbose"}, "WORKTRACK_LOG_LEVEL"},
		{[]string{"WORKTRACK_TRUSTED_PROXIES=10.0.0.1,proxy.internal"}, "WORKTRACK_TRUSTED_PROXIES"},
		{[]string{"WORKTRACK_SECRETS_KEY=c2hvcnQ="}, "WORKTRACK_SECRETS_KEY"},
		{[]string{"WORKTRACK_AUDIT_RETENTION=forever"}, "WORKTRACK_AUDIT_RETENTION"},
		{[]string{"WORKTRACK_CORS_ORIGINS=http://localhost:5173/"}, "WORKTRACK_CORS_ORIGINS"},
		{[]string{"WORKTRACK_CORS_ORIGINS=localhost:5173"}, "WORKTRACK_CORS_ORIGINS"},
		{[]string{"WORKTRACK_CORS_ORIGINS=https://*.example.com"}, "WORKTRACK_CORS_ORIGINS"},
		{[]string{"WORKTRACK_CORS_ORIGINS=*,http://localhost:5173"}, "WORKTRACK_CORS_ORIGINS"},
		{[]string{"DATABASE_URL=sqlite:/missing/dir/x.db"}, "directory \"/missing/dir\" of \"/missing/dir/x.db\" does not exist"},
	} {
		t.Run(tc.variable, func(t *testing.T) {
			_, errOut, code := runCmd(t, dir, append(tc.env, firstAddr(tc.env)), "serve")
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			last := lines[len(lines)-1]
			// In JSON mode (stderr is not a terminal) the one line is a JSON
			// record; with an unusable log format, plain text.
			var record struct{ Level, Msg string }
			if json.Unmarshal([]byte(last), &record) == nil {
				last = record.Msg
			}
			if code == 0 || !strings.Contains(last, tc.variable) || !strings.HasPrefix(last, "worktrack: ") {
				t.Fatalf("want a non-zero exit naming %s, got %d:\n%s", tc.variable, code, errOut)
			}
			if strings.Contains(errOut, "listening") {
				t.Fatalf("started half-configured:\n%s", errOut)
			}
			// One line for a person; anything before it is a JSON log line,
			// never a driver's own output.
			for _, l := range lines[:len(lines)-1] {
				if !strings.HasPrefix(l, "{") {
					t.Fatalf("a raw line before the error:\n%s", errOut)
				}
			}
		})
	}
}

// firstAddr keeps a test's own WORKTRACK_ADDR, else binds an ephemeral port.
func firstAddr(env []string) string {
	for _, e := range env {
		if strings.HasPrefix(e, "WORKTRACK_ADDR=") {
			return e
		}
	}
	return "WORKTRACK_ADDR=127.0.0.1:0"
}

func writeCert(t *testing.T, dir string) (string, string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// With a certificate pair the server speaks HTTPS itself.
func TestServesTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	p := startServe(t, dir, "WORKTRACK_TLS_CERT="+cert, "WORKTRACK_TLS_KEY="+key)
	if !strings.HasPrefix(p.Base, "https://") {
		t.Fatalf("base %s", p.Base)
	}
	pool := x509.NewCertPool()
	pemBytes, _ := os.ReadFile(cert)
	pool.AppendCertsFromPEM(pemBytes)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	secret := secretRe.FindString(p.Stderr.String())
	if code, _ := get(t, client, p.Base+"/v1/users/me", secret); code != 200 {
		t.Fatalf("https: %d", code)
	}
	p.Stop(t)
}

// SIGTERM lets a request in flight finish before the process exits 0.
func TestGracefulShutdownFinishesInFlightRequests(t *testing.T) {
	dir := t.TempDir()
	p := startServe(t, dir)
	secret := secretRe.FindString(p.Stderr.String())
	// A slow client: headers sent, body trickling, so the request is in
	// flight when SIGTERM arrives.
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, p.Base+"/v1/projects", pr)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		res.Body.Close()
		done <- result{code: res.StatusCode}
	}()
	if _, err := pw.Write([]byte(`{"name":"In flight",`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let the server start reading the body
	p.Signal(t, syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	if _, err := pw.Write([]byte(`"key":"FLIGHT"}`)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	r := <-done
	if r.err != nil || r.code != 201 {
		t.Fatalf("in-flight request: %d %v", r.code, r.err)
	}
	if code := p.Wait(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, p.Stderr.String())
	}
}

// SIGTERM under load: the listener closes at once (new connections are
// refused while the process is still finishing), every request the server
// took is answered, and a request that never completes is cut when
// WORKTRACK_SHUTDOWN_TIMEOUT runs out, after which the process exits 0.
func TestShutdownUnderLoadRefusesNewConnectionsAndHonoursItsTimeout(t *testing.T) {
	const timeout = 2 * time.Second
	dir := t.TempDir()
	p := startServe(t, dir, "WORKTRACK_SHUTDOWN_TIMEOUT="+timeout.String(), "WORKTRACK_RATE_LIMIT=1000000000")
	secret := secretRe.FindString(p.Stderr.String())
	addr := strings.TrimPrefix(p.Base, "http://")

	// A request that never completes: headers and half a body, then nothing.
	stuck, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	fmt.Fprintf(stuck, "POST /v1/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":", secret)

	// Load: eight clients on keep-alive connections until the server goes.
	type tally struct{ ok, other int }
	results := make(chan tally, 8)
	stopLoad := make(chan struct{})
	for range 8 {
		go func() {
			var n tally
			client := &http.Client{Transport: &http.Transport{}}
			defer func() { results <- n }()
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				req, _ := http.NewRequest(http.MethodGet, p.Base+"/v1/users/me", nil)
				req.Header.Set("Authorization", "Bearer "+secret)
				res, err := client.Do(req)
				if err != nil {
					return // the server closed the connection or refused a new one
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					n.ok++
				} else {
					n.other++
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	signalled := time.Now()
	p.Signal(t, syscall.SIGTERM)

	// New connections are refused while the stuck request still holds the
	// process open.
	for {
		select {
		case <-p.Exited():
			t.Fatalf("the process exited before a new connection was seen refused:\n%s", p.Stderr.String())
		default:
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break // refused
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-p.Exited():
		t.Fatal("the process exited before the refusal was checked")
	default:
	}

	code := p.Wait(t)
	took := time.Since(signalled)
	close(stopLoad)
	var total tally
	for range 8 {
		r := <-results
		total.ok += r.ok
		total.other += r.other
	}
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, p.Stderr.String())
	}
	if total.ok == 0 || total.other != 0 {
		t.Fatalf("under load: %d answered 200, %d answered otherwise; want every answer 200", total.ok, total.other)
	}
	if took < timeout {
		t.Fatalf("exited %v after SIGTERM, before the %v timeout, with a request still in flight", took, timeout)
	}
	if !strings.Contains(p.Stderr.String(), "shutdown timeout ran out") {
		t.Fatalf("the cut request was not logged:\n%s", p.Stderr.String())
	}
	// The stuck request's connection was closed by the server.
	_ = stuck.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := stuck.Read(make([]byte, 1)); err == nil {
		t.Fatal("the stuck request's connection is still open after exit")
	}
	t.Logf("%d requests answered 200 under load; exit 0 %v after SIGTERM", total.ok, took.Round(10*time.Millisecond))
}

// Logs are JSON when stderr is not a terminal (as here), text for a person
// with WORKTRACK_LOG_FORMAT=text, and WORKTRACK_LOG_LEVEL drops lines below
// it.
func TestLogFormatAndLevel(t *testing.T) {
	for _, tc := range []struct {
		env       []string
		want, not string
	}{
		{nil, `"level":"INFO","msg":"listening"`, "level=INFO"},
		{[]string{"WORKTRACK_LOG_FORMAT=json"}, `"level":"INFO","msg":"listening"`, "level=INFO"},
		{[]string{"WORKTRACK_LOG_FORMAT=text"}, `level=INFO msg=listening`, `"msg":"listening"`},
		{[]string{"WORKTRACK_LOG_FORMAT=text"}, "It is shown ONCE and never again", `"api_key"`},
		{[]string{"WORKTRACK_LOG_FORMAT=TEXT", "WORKTRACK_LOG_LEVEL=warn"}, "Worktrack is listening", "msg=listening"},
		{[]string{"WORKTRACK_LOG_LEVEL=debug"}, `"level":"INFO","msg":"listening"`, "level=INFO"},
	} {
		t.Run(strings.Join(tc.env, ","), func(t *testing.T) {
			p := startServe(t, t.TempDir(), tc.env...)
			if code := p.Stop(t); code != 0 {
				t.Fatalf("exit %d", code)
			}
			out := p.Stderr.String()
			if !strings.Contains(out, tc.want) || strings.Contains(out, tc.not) {
				t.Fatalf("want %q and no %q in:\n%s", tc.want, tc.not, out)
			}
		})
	}
}

// A first start on a busy port fails naming WORKTRACK_ADDR and creates
// nothing: the bootstrap key is made (and printed) by the start that can
// serve.
func TestBusyPortCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCmd(t, dir, []string{"WORKTRACK_ADDR=" + busy.Addr().String()}, "serve")
	busy.Close()
	if code == 0 || !strings.Contains(errOut, "WORKTRACK_ADDR") || secretRe.MatchString(errOut) {
		t.Fatalf("serve on a busy port: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "worktrack.db")); !os.IsNotExist(err) {
		t.Fatalf("serve on a busy port created the database: %v", err)
	}
	p := startServe(t, dir)
	if !secretRe.MatchString(p.Stderr.String()) {
		t.Fatalf("the first start that could serve printed no key:\n%s", p.Stderr.String())
	}
	p.Stop(t)
}

// An operator who lost every key finds the way back from the command line:
// the workspaces, their users, and a new key by the user's email.
func TestOperatorFindsTheWayBackByEmail(t *testing.T) {
	dir := t.TempDir()
	startServe(t, dir).Stop(t) // bootstraps; pretend the banner was lost

	out, errOut, code := runCmd(t, dir, nil, "workspace", "list")
	var spaces struct {
		Data []struct{ ID, Name string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &spaces) != nil || len(spaces.Data) != 1 || spaces.Data[0].Name != "Default" {
		t.Fatalf("workspace list: %d %s %s", code, out, errOut)
	}
	ws := spaces.Data[0].ID
	out, errOut, code = runCmd(t, dir, nil, "user", "list", "--workspace", ws)
	var users struct {
		Data []struct{ ID, Email, Role string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &users) != nil || len(users.Data) != 1 || users.Data[0].Email != "admin@example.com" {
		t.Fatalf("user list: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := runCmd(t, dir, nil, "user", "list", "--workspace", "wsp_nope"); code != 1 || !strings.Contains(errOut, "resource_not_found") {
		t.Fatalf("user list of an unknown workspace: %d %s", code, errOut)
	}

	out, errOut, code = runCmd(t, dir, nil, "key", "create", "--email", "ADMIN@example.com", "--name", "recovery")
	secret := secretRe.FindString(out)
	if code != 0 || secret == "" {
		t.Fatalf("key create --email: %d %s %s", code, out, errOut)
	}
	p := startServe(t, dir)
	if code, me := get(t, http.DefaultClient, p.Base+"/v1/users/me", secret); code != 200 || me["id"] != users.Data[0].ID {
		t.Fatalf("the recovered key: %d %v", code, me)
	}
	p.Stop(t)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"key", "create", "--email", "nobody@example.com"}, "resource_not_found"},
		{[]string{"key", "create", "--email", "admin@example.com", "--user", users.Data[0].ID}, "none of the others can be"},
		{[]string{"key", "create"}, "at least one of the flags"},
	} {
		if out, errOut, code := runCmd(t, dir, nil, tc.args...); code != 1 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want %q", tc.args, code, out, errOut, tc.want)
		}
	}

	// The same email in a second workspace: the operator must say which.
	out, _, _ = runCmd(t, dir, nil, "workspace", "create", "--name", "Other")
	var other struct{ ID string }
	_ = json.Unmarshal([]byte(out), &other)
	if _, errOut, code := runCmd(t, dir, nil, "user", "create", "--workspace", other.ID, "--email", "admin@example.com", "--name", "Twin", "--role", "guest"); code != 0 {
		t.Fatalf("user create: %s", errOut)
	}
	if _, errOut, code := runCmd(t, dir, nil, "key", "create", "--email", "admin@example.com"); code != 1 || !strings.Contains(errOut, "--workspace") || !strings.Contains(errOut, other.ID) {
		t.Fatalf("an ambiguous email: exit %d %s", code, errOut)
	}
	if out, errOut, code := runCmd(t, dir, nil, "key", "create", "--email", "admin@example.com", "--workspace", other.ID); code != 0 || !secretRe.MatchString(out) {
		t.Fatalf("key create --email --workspace: %d %s", code, errOut)
	}
}

// serve migrates into the database it is given, but says so when that
// database also holds tables Worktrack did not make: the operator may have
// pointed DATABASE_URL at another application's database.
func TestServeWarnsOfOtherTablesInItsDatabase(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "shared.db")
	db, err := store.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Gorm().Exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY)").Error; err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	p := startServe(t, dir, "DATABASE_URL=sqlite:"+path)
	p.Stop(t)
	if out := p.Stderr.String(); !strings.Contains(out, "tables Worktrack did not make") || !strings.Contains(out, "invoices") {
		t.Fatalf("no warning of the invoices table:\n%s", out)
	}
	// A database of its own gets no such warning.
	q := startServe(t, t.TempDir())
	q.Stop(t)
	if out := q.Stderr.String(); strings.Contains(out, "did not make") || strings.Contains(out, "maintenance database") {
		t.Fatalf("a database of Worktrack's own was warned about:\n%s", out)
	}
}
