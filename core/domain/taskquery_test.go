package domain_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// The filters of the task lists and counts, checked where the rule lives:
// the API tests prove that both APIs reach it and render its errors.
func TestTaskQueryValidate(t *testing.T) {
	prj, usr := domain.NewID(domain.PrefixProject), domain.NewID(domain.PrefixUser)
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tooOld := time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC)
	many := func(n int, id func() string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = id()
		}
		return out
	}
	text := func(s string) *string { return &s }
	newProject := func() string { return domain.NewID(domain.PrefixProject) }
	newUser := func() string { return domain.NewID(domain.PrefixUser) }
	for _, tc := range []struct {
		name  string
		q     domain.TaskQuery
		param string // "" when valid
	}{
		{"nothing", domain.TaskQuery{}, ""},
		{"every filter", domain.TaskQuery{
			ProjectIDs: []string{prj}, Statuses: []domain.Status{domain.StatusOpen, domain.StatusDone},
			AssigneeIDs: []string{usr}, Unassigned: true, AssignedToMe: true,
			DueAfter: &at, DueBefore: &at, UpdatedAfter: &at, Text: text("ship it"),
			Order: domain.TaskOrder{Field: domain.TaskOrderDueAt, Desc: true},
		}, ""},
		{"50 projects", domain.TaskQuery{ProjectIDs: many(domain.MaxFilterValues, newProject)}, ""},
		{"51 projects", domain.TaskQuery{ProjectIDs: many(domain.MaxFilterValues+1, newProject)}, domain.ParamProjectID},
		{"an empty project list", domain.TaskQuery{ProjectIDs: []string{}}, domain.ParamProjectID},
		{"a user id as project", domain.TaskQuery{ProjectIDs: []string{usr}}, domain.ParamProjectID},
		{"an empty status list", domain.TaskQuery{Statuses: []domain.Status{}}, domain.ParamStatus},
		{"an unknown status", domain.TaskQuery{Statuses: []domain.Status{"closed"}}, domain.ParamStatus},
		{"me alone", domain.TaskQuery{AssignedToMe: true}, ""},
		{"none alone", domain.TaskQuery{Unassigned: true}, ""},
		{"49 users, me and none", domain.TaskQuery{AssigneeIDs: many(48, newUser), Unassigned: true, AssignedToMe: true}, ""},
		{"49 users, me and none: 51", domain.TaskQuery{AssigneeIDs: many(49, newUser), Unassigned: true, AssignedToMe: true}, domain.ParamAssigneeID},
		{"an empty list beside none", domain.TaskQuery{AssigneeIDs: []string{}, Unassigned: true}, domain.ParamAssigneeID},
		{"a project id as assignee", domain.TaskQuery{AssigneeIDs: []string{prj}}, domain.ParamAssigneeID},
		{"due_after before year 1", domain.TaskQuery{DueAfter: &tooOld}, domain.ParamDueAfter},
		{"due_before before year 1", domain.TaskQuery{DueBefore: &tooOld}, domain.ParamDueBefore},
		{"updated_after before year 1", domain.TaskQuery{UpdatedAfter: &tooOld}, domain.ParamUpdatedAfter},
		{"an empty q", domain.TaskQuery{Text: text("")}, domain.ParamText},
		{"q of punctuation only", domain.TaskQuery{Text: text("-- !!")}, domain.ParamText},
		{"q of 200 characters", domain.TaskQuery{Text: text(strings.Repeat("é", domain.MaxTaskQueryText))}, ""},
		{"q of 201 characters", domain.TaskQuery{Text: text(strings.Repeat("é", domain.MaxTaskQueryText+1))}, domain.ParamText},
		{"q not UTF-8", domain.TaskQuery{Text: text("ab\xff")}, domain.ParamText},
		{"q of 8 words", domain.TaskQuery{Text: text("a b c d e f g h")}, ""},
		{"q of 9 words", domain.TaskQuery{Text: text("a b c d e f g h i")}, domain.ParamText},
		// Words are counted once however often they repeat.
		{"q of one word 100 times", domain.TaskQuery{Text: text(strings.Repeat("a ", 100))}, ""},
		{"q of 8 words, repeated and in capitals", domain.TaskQuery{Text: text("a b c d e f g h A B H")}, ""},
		{"an unknown order", domain.TaskQuery{Order: domain.TaskOrder{Field: "title"}}, domain.ParamSort},
		// The first fault in parameter order is the one reported.
		{"two faults", domain.TaskQuery{Statuses: []domain.Status{"x"}, Text: text("")}, domain.ParamStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.q.Validate()
			if tc.param == "" {
				if err != nil {
					t.Fatalf("valid query refused: %v", err)
				}
				return
			}
			var de *domain.Error
			if !errors.As(err, &de) || de.Code != domain.CodeValidationFailed || de.Param != tc.param {
				t.Fatalf("got %v, want validation_failed on %s", err, tc.param)
			}
		})
	}
}

// A sort parameter is a field, with - in front for descending.
func TestParseTaskOrder(t *testing.T) {
	for in, want := range map[string]domain.TaskOrder{
		"created_at":  {Field: domain.TaskOrderCreatedAt},
		"-created_at": {Field: domain.TaskOrderCreatedAt, Desc: true},
		"updated_at":  {Field: domain.TaskOrderUpdatedAt},
		"-due_at":     {Field: domain.TaskOrderDueAt, Desc: true},
	} {
		if got, err := domain.ParseTaskOrder(in); err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"title", "--due_at", "due_at-", "+due_at", "CREATED_AT", " created_at"} {
		var de *domain.Error
		if _, err := domain.ParseTaskOrder(in); !errors.As(err, &de) || de.Param != domain.ParamSort {
			t.Errorf("%q: %v, want validation_failed on sort", in, err)
		}
	}
}

// Search words are the runs of letters, digits and combining marks,
// lowercased: titles are indexed by the same rule.
func TestSearchWords(t *testing.T) {
	for in, want := range map[string][]string{
		"Write the Announcement": {"write", "the", "announcement"},
		"v2.1 -- ship!":          {"v2", "1", "ship"},
		"Überprüfung":            {"überprüfung"},
		"किताब पढ़ो":             {"किताब", "पढ़ो"},
		"  ...  ":                nil,
	} {
		if got := domain.SearchWords(in); !slices.Equal(got, want) {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// A search asks the database once for each word that no other word of it
// implies: repeats go, and so does a word that starts another one.
func TestSearchTerms(t *testing.T) {
	for in, want := range map[string][]string{
		"plan":                    {"plan"},
		strings.Repeat("a ", 100): {"a"},
		"Plan plan PLAN":          {"plan"},
		"plan planning q3":        {"planning", "q3"},
		"planning plan":           {"planning"},
		"write wri up":            {"write", "up"},
		"ab ba":                   {"ab", "ba"},
	} {
		if got := domain.SearchTerms(in); !slices.Equal(got, want) {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// Two requests for the same list share cursors: the canonical form ignores
// the order of list values, repeats and the spelling of the words; any
// other difference shows.
func TestTaskQueryCanonical(t *testing.T) {
	p1, p2 := domain.NewID(domain.PrefixProject), domain.NewID(domain.PrefixProject)
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	q := func(s string) *string { return &s }
	same := []domain.TaskQuery{
		{ProjectIDs: []string{p1, p2}, Statuses: []domain.Status{domain.StatusOpen, domain.StatusDone}, Text: q("Ship the LOGIN")},
		{ProjectIDs: []string{p2, p1, p2}, Statuses: []domain.Status{domain.StatusDone, domain.StatusOpen, domain.StatusOpen}, Text: q("ship, the login!")},
	}
	if a, b := same[0].Canonical(), same[1].Canonical(); a != b {
		t.Fatalf("the same list differs:\n%s\n%s", a, b)
	}
	base := same[0]
	for name, other := range map[string]domain.TaskQuery{
		"another project":  {ProjectIDs: []string{p1}, Statuses: base.Statuses, Text: base.Text},
		"another status":   {ProjectIDs: base.ProjectIDs, Statuses: []domain.Status{domain.StatusOpen}, Text: base.Text},
		"unassigned":       {ProjectIDs: base.ProjectIDs, Statuses: base.Statuses, Text: base.Text, Unassigned: true},
		"due after":        {ProjectIDs: base.ProjectIDs, Statuses: base.Statuses, Text: base.Text, DueAfter: &at},
		"another word":     {ProjectIDs: base.ProjectIDs, Statuses: base.Statuses, Text: q("ship the logout")},
		"another order":    {ProjectIDs: base.ProjectIDs, Statuses: base.Statuses, Text: base.Text, Order: domain.TaskOrder{Desc: true}},
		"no status filter": {ProjectIDs: base.ProjectIDs, Text: base.Text},
	} {
		if other.Canonical() == base.Canonical() {
			t.Errorf("%s: the same canonical form as the base query", name)
		}
	}
}

func TestSearchPrefixes(t *testing.T) {
	got := domain.SearchPrefixes("Café au LAIT, au lait!")
	want := []string{"c", "ca", "caf", "café", "a", "au", "l", "la", "lai", "lait"}
	if !slices.Equal(got, want) {
		t.Fatalf("SearchPrefixes = %q, want %q", got, want)
	}
	if got := domain.SearchPrefixes(" -- "); len(got) != 0 {
		t.Fatalf("a title without words offers %q", got)
	}
}
