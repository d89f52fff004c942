package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

func TestUserStore(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Users()
		ws, other := newWorkspace(t, db), newWorkspace(t, db)

		u := newUser(t, db, ws, "ada@example.com", base)
		got, err := s.FindUserByID(ctx, ws.ID, u.ID)
		if err != nil {
			t.Fatalf("FindUserByID: %v", err)
		}
		equal(t, "user", got, u)

		t.Run("not found", func(t *testing.T) {
			_, err := s.FindUserByID(ctx, ws.ID, "usr_absent")
			wantCode(t, err, domain.CodeNotFound, "")
		})

		t.Run("another workspace's user is not found", func(t *testing.T) {
			_, err := s.FindUserByID(ctx, other.ID, u.ID)
			wantError(t, err, domain.CodeNotFound, "", "No such user: '"+u.ID+"'")
		})

		t.Run("email taken in the workspace", func(t *testing.T) {
			dup, err := domain.NewUser(domain.NewID(domain.PrefixUser), ws.ID, u.Email, "Other", domain.RoleGuest, base)
			if err != nil {
				t.Fatal(err)
			}
			err = s.CreateUser(ctx, dup)
			wantError(t, err, domain.CodeAlreadyExists, "email", "A user with email 'ada@example.com' already exists in this workspace.")
			// The same email in another workspace is another user.
			newUser(t, db, other, u.Email, base)
		})

		t.Run("role is constrained", func(t *testing.T) {
			bad := u
			bad.ID, bad.Email, bad.Role = domain.NewID(domain.PrefixUser), "bad@example.com", "owner"
			if err := s.CreateUser(ctx, bad); err == nil {
				t.Fatal("CreateUser with role owner succeeded")
			}
		})

		t.Run("by ids", func(t *testing.T) {
			u2 := newUser(t, db, ws, "grace@example.com", base)
			foreign := newUser(t, db, other, "linus@example.com", base)
			got, err := s.FindUsersByIDs(ctx, ws.ID, []string{u2.ID, "usr_absent", u.ID, foreign.ID, u.ID})
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(got, func(a, b domain.User) int { return compareStrings(a.ID, b.ID) })
			want := []domain.User{u, u2}
			slices.SortFunc(want, func(a, b domain.User) int { return compareStrings(a.ID, b.ID) })
			equal(t, "FindUsersByIDs", got, want)

			none, err := s.FindUsersByIDs(ctx, ws.ID, nil)
			if err != nil || none == nil || len(none) != 0 {
				t.Fatalf("FindUsersByIDs(nil) = %v, %v; want an empty slice", none, err)
			}
		})
	})
}

func TestFindUsersPages(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ws, other := newWorkspace(t, db), newWorkspace(t, db)
		var want []domain.User
		for i, at := range creationTimes() {
			want = append(want, newUser(t, db, ws, "u"+itoa(i)+"@example.com", at))
			newUser(t, db, other, "u"+itoa(i)+"@example.com", at)
		}
		sortByPosition(want, domain.User.Position)
		for _, size := range []int{1, 3, len(want), len(want) + 5} {
			got := collectPages(t, size, domain.User.Position, func(after *domain.Position, limit int) ([]domain.User, error) {
				return db.Users().FindUsers(context.Background(), ports.UserFilter{WorkspaceID: ws.ID, After: after, Limit: limit})
			})
			equal(t, "users across pages of "+itoa(size), got, want)
		}
	})
}

// creationTimes are the created_at of a list fixture, out of order: several
// rows share an instant (so id breaks the tie), some differ by a single
// microsecond, one is a year away (so a string that compared only a prefix
// would be caught).
func creationTimes() []time.Time {
	return []time.Time{
		base.Add(time.Hour),
		base,
		base.Add(time.Microsecond),
		base,
		base.Add(-time.Microsecond),
		base.Add(time.Hour),
		base.AddDate(-1, 0, 0),
		base,
		base.Add(time.Second),
		base.Add(time.Hour),
	}
}

// A batch of more than store.MaxBatch keys, or store.MaxBranches pages, is
// split: no statement carries more, and the answers are those of one big
// batch, in order.
func TestBatchesSplitAtMaxBatch(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws := newWorkspace(t, db)
		u := newUser(t, db, ws, "split@x.test", base)
		p := newProject(t, db, ws, "SPL", base)
		task := newTask(t, db, p, domain.TaskFields{Title: domain.Set("T"), AssigneeID: domain.Set(u.ID)}, base)
		ids := make([]string, 2*store.MaxBatch+500)
		for i := range ids {
			ids[i] = domain.NewID(domain.PrefixUser)
		}
		ids[2*store.MaxBatch+100] = u.ID
		count := storetest.CountStatements(db)
		count.Reset()
		users, err := db.Users().FindUsersByIDs(ctx, ws.ID, ids)
		if err != nil || len(users) != 1 || users[0].ID != u.ID {
			t.Fatalf("users: %v, %v", users, err)
		}
		if n := count.N(); n != 3 {
			t.Fatalf("%d ids took %d statements, want 3", len(ids), n)
		}
		filters := make([]ports.TaskFilter, 2*store.MaxBranches+1)
		for i := range filters {
			filters[i] = ports.TaskFilter{WorkspaceID: ws.ID, ProjectIDs: []string{domain.NewID(domain.PrefixProject)}, Limit: 2}
		}
		filters[store.MaxBranches] = ports.TaskFilter{WorkspaceID: ws.ID, ProjectIDs: []string{p.ID}, Limit: 2}
		count.Reset()
		pages, err := db.Tasks().FindTaskPages(ctx, filters)
		if err != nil || len(pages) != len(filters) {
			t.Fatalf("pages: %d, %v", len(pages), err)
		}
		if n := count.N(); n != 3 {
			t.Fatalf("%d pages took %d statements, want 3", len(filters), n)
		}
		for i, page := range pages {
			if want := map[bool]int{true: 1, false: 0}[i == store.MaxBranches]; len(page) != want {
				t.Fatalf("page %d has %d tasks, want %d", i, len(page), want)
			}
		}
		if pages[store.MaxBranches][0].ID != task.ID {
			t.Fatalf("the page of the project holds %v", pages[store.MaxBranches])
		}
	})
}
