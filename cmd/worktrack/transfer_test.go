package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/store/storetest"
)

// The operator's path off the embedded default, as docs/operations.md
// gives it: export the SQLite file (gzip), verify the file without a
// database, import it into an empty PostgreSQL, and the old key works
// there; a second import is refused with one line; one workspace moves
// into another SQLite database beside its own, its events repositioned.
func TestExportImportFromTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	sqliteURL := "sqlite:" + filepath.Join(dir, "worktrack.db")
	env := []string{"DATABASE_URL=" + sqliteURL}
	run := func(env []string, args ...string) map[string]any {
		t.Helper()
		out, errOut, code := runCmd(t, dir, env, args...)
		var v map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
			t.Fatalf("%v: %d %s %s", args, code, out, errOut)
		}
		return v
	}
	ws := run(env, "workspace", "create", "--name", "Moving")["id"].(string)
	uid := run(env, "user", "create", "--workspace", ws, "--email", "mo@move.test", "--name", "Mo", "--role", "admin")["id"].(string)
	secret := run(env, "key", "create", "--user", uid, "--name", "laptop")["secret"].(string)

	file := filepath.Join(dir, "backup.ndjson.gz")
	exported := run(env, "export", "--out", file)
	counts := exported["counts"].(map[string]any)
	if exported["object"] != "export" || counts["workspace"].(float64) != 1 || counts["api_key"].(float64) != 1 || exported["source"] != "sqlite" {
		t.Fatalf("export: %v", exported)
	}
	raw, err := os.ReadFile(file)
	if err != nil || len(raw) < 2 || raw[0] != 0x1f || raw[1] != 0x8b || strings.Contains(string(raw), secret) {
		t.Fatalf("the file is not gzip, or holds the key's secret (%v)", err)
	}
	if _, err := os.Stat(file + ".partial"); !os.IsNotExist(err) {
		t.Fatalf("the partial file is left: %v", err)
	}
	verified := run(nil, "export", "--verify", file)
	if verified["object"] != "verify" || verified["counts"].(map[string]any)["user"].(float64) != 1 {
		t.Fatalf("verify: %v", verified)
	}

	pg := []string{"DATABASE_URL=" + storetest.PostgresURL(t)}
	imported := run(pg, "import", "--in", file, "--into-empty")
	if imported["object"] != "import" || imported["note"] != nil || imported["counts"].(map[string]any)["workspace"].(float64) != 1 {
		t.Fatalf("import: %v", imported)
	}
	if out, _, code := runCmd(t, dir, pg, "key", "list", "--user", uid); code != 0 || !strings.Contains(out, "laptop") {
		t.Fatalf("the key after the import: %d %s", code, out)
	}
	if v := run(pg, "audit", "verify"); v["ok"] != true {
		t.Fatalf("audit verify after the import: %v", v)
	}
	out, errOut, code := runCmd(t, dir, pg, "import", "--in", file, "--into-empty")
	if code != 1 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "empty") || out != "" {
		t.Fatalf("a second import: %d %q %q", code, out, errOut)
	}
	_, errOut, code = runCmd(t, dir, pg, "import", "--in", file)
	if code != 1 || !strings.Contains(errOut, "--into-empty") {
		t.Fatalf("an import without a mode: %d %q", code, errOut)
	}

	// One workspace into another SQLite database that has its own.
	other := []string{"DATABASE_URL=sqlite:" + filepath.Join(dir, "other.db")}
	run(other, "workspace", "create", "--name", "Resident")
	one := filepath.Join(dir, "one.ndjson")
	run(env, "export", "--workspace", ws, "--out", one)
	merged := run(other, "import", "--in", one, "--merge-workspace")
	if !strings.Contains(merged["note"].(string), "new positions") {
		t.Fatalf("merge: %v", merged)
	}
	_, errOut, code = runCmd(t, dir, other, "import", "--in", one, "--merge-workspace")
	if code != 1 || !strings.Contains(errOut, "holds workspace "+ws) {
		t.Fatalf("a second merge: %d %q", code, errOut)
	}
	// A damaged file is named by line.
	lines, _ := os.ReadFile(one)
	damaged := filepath.Join(dir, "damaged.ndjson")
	if err := os.WriteFile(damaged, []byte(strings.Replace(string(lines), `"name":"Mo"`, `"name":"Eve"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCmd(t, dir, nil, "export", "--verify", damaged)
	if code != 1 || !strings.Contains(errOut, "checksum") || !strings.Contains(errOut, "line") {
		t.Fatalf("verify of a damaged file: %d %q", code, errOut)
	}
}
