package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// The operator's commands are recorded with the operator as actor and the
// command as user agent; `audit verify` passes an untouched log, and names
// the record that was changed behind the service's back (exit 1). On both
// databases.
func TestAuditFromTheCommandLine(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			url := "sqlite:" + filepath.Join(dir, "audit.db")
			if kind == "postgres" {
				url = storetest.PostgresURL(t)
			}
			env := []string{"DATABASE_URL=" + url}
			run := func(args ...string) map[string]any {
				t.Helper()
				out, errOut, code := runCmd(t, dir, env, args...)
				var v map[string]any
				if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
					t.Fatalf("%v: %d %s %s", args, code, out, errOut)
				}
				return v
			}
			ws := run("workspace", "create", "--name", "Audited")["id"].(string)
			uid := run("user", "create", "--workspace", ws, "--email", "ada@audit.test", "--name", "Ada", "--role", "member")["id"].(string)
			run("user", "update", uid, "--role", "admin")
			kid := run("key", "create", "--user", uid, "--name", "laptop")["id"].(string)
			run("key", "revoke", kid)

			db, err := store.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			records, err := db.Audit().FindAuditEvents(context.Background(), ports.AuditFilter{WorkspaceID: ws, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			want := []domain.AuditAction{domain.AuditAPIKeyRevoked, domain.AuditAPIKeyCreated, domain.AuditUserRoleChanged,
				domain.AuditUserCreated, domain.AuditWorkspaceCreated}
			if len(records) != len(want) {
				t.Fatalf("%d records, want %d: %+v", len(records), len(want), records)
			}
			for i, r := range records {
				if r.Action != want[i] || r.Actor.Type != domain.AuditByOperator || !strings.HasPrefix(r.Actor.UserAgent, "worktrack ") {
					t.Fatalf("record %d: %s by %+v, want %s by the operator", i, r.Action, r.Actor, want[i])
				}
			}
			role := records[2]
			if !strings.Contains(role.Actor.UserAgent, "worktrack user update") || role.Changes["role"].From != "member" || role.Changes["role"].To != "admin" {
				t.Fatalf("the role change: %+v", role)
			}

			verified := run("audit", "verify")
			if verified["ok"] != true || verified["records"].(float64) < 5 || verified["break"] != nil {
				t.Fatalf("audit verify on an untouched log: %v", verified)
			}
			if v := run("audit", "verify", "--workspace", ws); v["records"].(float64) != 5 || v["workspaces"].(float64) != 1 {
				t.Fatalf("audit verify --workspace: %v", v)
			}

			// Someone with the database lowers the change behind the
			// service's back.
			if err := db.Gorm().Exec(`UPDATE audit_events SET changes = ? WHERE id = ?`,
				`{"role":{"from":"member","to":"guest"}}`, role.ID).Error; err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runCmd(t, dir, env, "audit", "verify")
			var broken struct {
				OK    bool
				Break struct {
					ID          string `json:"id"`
					WorkspaceID string `json:"workspace_id"`
				}
			}
			if err := json.Unmarshal([]byte(out), &broken); err != nil {
				t.Fatalf("audit verify printed %s: %v", out, err)
			}
			if code != 1 || broken.OK || broken.Break.ID != role.ID || broken.Break.WorkspaceID != ws || !strings.Contains(errOut, role.ID) {
				t.Fatalf("audit verify after tampering: exit %d, %s %s", code, out, errOut)
			}
		})
	}
}
