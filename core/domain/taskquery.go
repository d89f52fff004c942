package domain

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits of a task query (docs/finding-tasks.md).
const (
	// MaxFilterValues is how many values one list filter (project_id,
	// status, assignee_id) may hold.
	MaxFilterValues = 50
	// MaxTaskQueryText is the longest q, in characters.
	MaxTaskQueryText = 200
	// MaxSearchWords is how many different words one q may hold. Each is
	// a full-text lookup of its own, and a title rarely needs more to be
	// found.
	MaxSearchWords = 8
)

// The task query's parameters as REST names them; errors name them so, and
// GraphQL's presenter renames them to its argument paths.
const (
	ParamProjectID    = "project_id"
	ParamStatus       = "status"
	ParamAssigneeID   = "assignee_id"
	ParamDueAfter     = "due_after"
	ParamDueBefore    = "due_before"
	ParamUpdatedAfter = "updated_after"
	ParamText         = "q"
	ParamSort         = "sort"
	ParamGroupBy      = "group_by"
)

// TaskOrderField is what a task list is sorted by.
type TaskOrderField string

// The orders of a task list.
const (
	TaskOrderCreatedAt TaskOrderField = "created_at"
	TaskOrderUpdatedAt TaskOrderField = "updated_at"
	TaskOrderDueAt     TaskOrderField = "due_at"
)

// TaskOrder is a task list's order: its field and direction. Ties break by
// id in the same direction; tasks without due_at come last either way. The
// zero value is the default, created_at ascending.
type TaskOrder struct {
	Field TaskOrderField
	Desc  bool
}

// ParseTaskOrder reads a sort parameter: a field, with "-" in front for
// descending. validation_failed (param sort) for anything else.
func ParseTaskOrder(s string) (TaskOrder, error) {
	o := TaskOrder{Field: TaskOrderField(strings.TrimPrefix(s, "-")), Desc: strings.HasPrefix(s, "-")}
	if err := o.Validate(); err != nil {
		return TaskOrder{}, err
	}
	return o, nil
}

// Validate checks the order's field.
func (o TaskOrder) Validate() error {
	switch o.Field {
	case "", TaskOrderCreatedAt, TaskOrderUpdatedAt, TaskOrderDueAt:
		return nil
	}
	return Invalid(ParamSort, "Must be created_at, updated_at or due_at, with - in front for descending.")
}

// field is the order's field, created_at when unset.
func (o TaskOrder) field() TaskOrderField {
	if o.Field == "" {
		return TaskOrderCreatedAt
	}
	return o.Field
}

// Column is the order's task column (a constant of this package, safe to
// write into a statement).
func (o TaskOrder) Column() string { return string(o.field()) }

// Nullable reports whether the order's key may be null (due_at).
func (o TaskOrder) Nullable() bool { return o.field() == TaskOrderDueAt }

// String is the order as a sort parameter.
func (o TaskOrder) String() string {
	if o.Desc {
		return "-" + o.Column()
	}
	return o.Column()
}

// Position is a task's place in a list of this order.
func (o TaskOrder) Position(t Task) Position {
	switch o.field() {
	case TaskOrderUpdatedAt:
		return Position{At: t.UpdatedAt, ID: t.ID}
	case TaskOrderDueAt:
		if t.DueAt == nil {
			return Position{Null: true, ID: t.ID}
		}
		return Position{At: *t.DueAt, ID: t.ID}
	}
	return Position{At: t.CreatedAt, ID: t.ID}
}

// Compare is negative when a comes before b in a list of this order,
// positive when after, zero for the same task.
func (o TaskOrder) Compare(a, b Task) int {
	pa, pb := o.Position(a), o.Position(b)
	if pa.Null != pb.Null { // tasks without the key last, either way
		if pa.Null {
			return 1
		}
		return -1
	}
	c := pa.At.Compare(pb.At)
	if c == 0 {
		c = strings.Compare(pa.ID, pb.ID)
	}
	if o.Desc {
		return -c
	}
	return c
}

// TaskQuery is a task list's filters and order as a request carries them,
// unvalidated. Nil or false fields do not filter; the filters AND.
type TaskQuery struct {
	ProjectIDs []string
	Statuses   []Status
	// AssigneeIDs, Unassigned and AssignedToMe make one set: a task
	// matches when its assignee is one of the ids or the key's user (me),
	// or when it has none and Unassigned is set.
	AssigneeIDs  []string
	Unassigned   bool
	AssignedToMe bool
	DueAfter     *time.Time // inclusive; a task without due_at never matches
	DueBefore    *time.Time // exclusive; a task without due_at never matches
	UpdatedAfter *time.Time // exclusive
	Text         *string    // every word a word or word prefix of the title
	Order        TaskOrder
}

// FiltersAssignee reports whether the query narrows by assignee.
func (q TaskQuery) FiltersAssignee() bool {
	return q.AssigneeIDs != nil || q.Unassigned || q.AssignedToMe
}

// Validate checks every filter, in parameter order, and returns the first
// fault: validation_failed naming its parameter.
func (q TaskQuery) Validate() error {
	if err := checkIDList(ParamProjectID, q.ProjectIDs, PrefixProject, "a project id"); err != nil {
		return err
	}
	if err := checkCount(ParamStatus, len(q.Statuses), q.Statuses != nil); err != nil {
		return err
	}
	for _, s := range q.Statuses {
		if err := s.Validate(); err != nil {
			return err
		}
	}
	n := len(q.AssigneeIDs) + boolCount(q.Unassigned) + boolCount(q.AssignedToMe)
	if err := checkCount(ParamAssigneeID, n, q.FiltersAssignee()); err != nil {
		return err
	}
	// An empty list beside unassigned or me is still an empty list.
	if err := checkCount(ParamAssigneeID, len(q.AssigneeIDs), q.AssigneeIDs != nil); err != nil {
		return err
	}
	for _, id := range q.AssigneeIDs {
		if !IsID(id, PrefixUser) {
			return Invalid(ParamAssigneeID, "Each value must be a user id, me or none.")
		}
	}
	for _, b := range []struct {
		param string
		t     *time.Time
	}{{ParamDueAfter, q.DueAfter}, {ParamDueBefore, q.DueBefore}, {ParamUpdatedAfter, q.UpdatedAfter}} {
		if b.t != nil && !InTimeRange(*b.t) {
			return Invalid(b.param, "Must be an RFC 3339 date-time between years 0001 and 9999.")
		}
	}
	if q.Text != nil {
		if n := utf8.RuneCountInString(*q.Text); n < 1 || n > MaxTaskQueryText || !utf8.ValidString(*q.Text) {
			return Invalid(ParamText, "Must be 1 to %d characters.", MaxTaskQueryText)
		}
		switch n := len(uniqueWords(SearchWords(*q.Text))); {
		case n == 0:
			return Invalid(ParamText, "Must hold a word: a letter or a digit.")
		case n > MaxSearchWords:
			return Invalid(ParamText, "Must hold at most %d different words.", MaxSearchWords)
		}
	}
	return q.Order.Validate()
}

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

func checkCount(param string, n int, given bool) error {
	if given && (n < 1 || n > MaxFilterValues) {
		return Invalid(param, "Give 1 to %d values, or leave the filter out.", MaxFilterValues)
	}
	return nil
}

func checkIDList(param string, ids []string, prefix, what string) error {
	if err := checkCount(param, len(ids), ids != nil); err != nil {
		return err
	}
	for _, id := range ids {
		if !IsID(id, prefix) {
			return Invalid(param, "Each value must be %s.", what)
		}
	}
	return nil
}

// SearchWords splits a search text into its words, lowercased: the runs of
// letters, digits and the marks that combine with them (the vowel signs of
// Devanagari, say). Titles are indexed by the same rule, so a word of the
// text matches a title word it is a prefix of.
func SearchWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r)
	})
}

// SearchPrefixes is what a title offers a search: every start of every one
// of its words (SearchWords), "write" giving w, wr, wri, writ and write,
// each once. A search word matches a title that has it among these.
func SearchPrefixes(title string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range SearchWords(title) {
		for i := range w {
			if i == 0 {
				continue
			}
			if p := w[:i]; !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// SearchTerms are the words a search text asks the database for: its
// words (SearchWords) without repeats, and without a word that is the
// start of another of them ("plan" beside "planning": a title word that
// starts with "planning" starts with "plan" too), in the order they came.
// The same tasks match as for every word of s; each word left is one
// full-text lookup.
func SearchTerms(s string) []string {
	words := uniqueWords(SearchWords(s))
	terms := words[:0:0]
	for i, w := range words {
		implied := false
		for j, o := range words {
			if j != i && len(o) > len(w) && strings.HasPrefix(o, w) {
				implied = true
				break
			}
		}
		if !implied {
			terms = append(terms, w)
		}
	}
	return terms
}

// uniqueWords is words without repeats, first occurrences kept in order.
func uniqueWords(words []string) []string {
	out := words[:0:0]
	for _, w := range words {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// Canonical is the query as one string, lists sorted and deduplicated and
// words normalised, so that two requests for the same list share cursors
// and any other query refuses them. Call it on a valid query whose me has
// been resolved.
func (q TaskQuery) Canonical() string {
	var b strings.Builder
	list := func(name string, vals []string) {
		if vals == nil {
			return
		}
		v := slices.Clone(vals)
		slices.Sort(v)
		fmt.Fprintf(&b, "%s=%s;", name, strings.Join(slices.Compact(v), ","))
	}
	list("project", q.ProjectIDs)
	statuses := make([]string, 0, len(q.Statuses))
	for _, s := range q.Statuses {
		statuses = append(statuses, string(s))
	}
	if q.Statuses != nil {
		list("status", statuses)
	}
	list("assignee", q.AssigneeIDs)
	if q.Unassigned {
		b.WriteString("unassigned;")
	}
	for _, t := range []struct {
		name string
		t    *time.Time
	}{{"due_after", q.DueAfter}, {"due_before", q.DueBefore}, {"updated_after", q.UpdatedAfter}} {
		if t.t != nil {
			fmt.Fprintf(&b, "%s=%d;", t.name, Timestamp(*t.t).UnixMicro())
		}
	}
	if q.Text != nil {
		fmt.Fprintf(&b, "q=%s;", strings.Join(SearchWords(*q.Text), " "))
	}
	fmt.Fprintf(&b, "sort=%s", q.Order)
	return b.String()
}

// What a task list or count reads of the database, in the units of a
// GraphQL operation's complexity (one field, one row): a search looks up
// each of its words in the full-text index beside the page it returns, and
// a count reads every task it counts, up to the whole workspace's; so
// may a search whose words are rare, walking the list for its page.
const (
	// SearchWeight is what a list with q adds to its page's cost.
	SearchWeight = 1000
	// CountWeight is a count that reads the tasks it counts.
	CountWeight = 1000
	// CounterWeight is a count read from the projects' counters.
	CounterWeight = 10
	// CreateWeight is one task created: its row, its search entry, its
	// event and its project's counter.
	CreateWeight = 4
)

// ListWeight is what a page of limit tasks reads, with its search's
// lookups when it searches.
func ListWeight(limit int, searches bool) int {
	if searches {
		return limit + SearchWeight
	}
	return limit
}

// CountWeightOf is what a count by by reads (see CountWeight), by what it
// filters on.
func CountWeightOf(by TaskCountGroup, filtersAssignee, filtersDates, searches bool) int {
	if CountReadsCounters(by, filtersAssignee, filtersDates, searches) {
		return CounterWeight
	}
	if searches {
		return CountWeight + SearchWeight
	}
	return CountWeight
}

// CountReadsCounters reports whether a count by by is read from the
// projects' counters, a row per project, rather than from the tasks: by
// status or project, narrowed by nothing but projects and statuses.
func CountReadsCounters(by TaskCountGroup, filtersAssignee, filtersDates, searches bool) bool {
	return by != CountByAssignee && !filtersAssignee && !filtersDates && !searches
}

// CountWeight is what counting q's tasks by by reads (CountWeightOf).
func (q TaskQuery) CountWeight(by TaskCountGroup) int {
	dates := q.DueAfter != nil || q.DueBefore != nil || q.UpdatedAfter != nil
	return CountWeightOf(by, q.FiltersAssignee(), dates, q.Text != nil)
}

// TaskCountGroup is what task counts are grouped by.
type TaskCountGroup string

// The groupings of task counts.
const (
	CountByStatus   TaskCountGroup = "status"
	CountByAssignee TaskCountGroup = "assignee_id"
	CountByProject  TaskCountGroup = "project_id"
)

// Validate checks the grouping (param group_by).
func (g TaskCountGroup) Validate() error {
	switch g {
	case CountByStatus, CountByAssignee, CountByProject:
		return nil
	}
	return Invalid(ParamGroupBy, "Must be status, assignee_id or project_id.")
}

// TaskCount is the number of tasks of one group; Key is nil for the
// unassigned tasks of a grouping by assignee.
type TaskCount struct {
	Key   *string
	Count int
}

// TaskCounts are a query's matching tasks counted by group: groups in
// ascending key order (unassigned first), none empty.
type TaskCounts struct {
	GroupBy TaskCountGroup
	Total   int
	Groups  []TaskCount
}

// StatusCounts count a project's tasks by status.
type StatusCounts struct {
	Open, InProgress, Done, Archived int
}

// Total is the number of tasks counted.
func (c StatusCounts) Total() int { return c.Open + c.InProgress + c.Done + c.Archived }

// Add returns c with n added to status s's count.
func (c StatusCounts) Add(s Status, n int) StatusCounts {
	switch s {
	case StatusOpen:
		c.Open += n
	case StatusInProgress:
		c.InProgress += n
	case StatusDone:
		c.Done += n
	case StatusArchived:
		c.Archived += n
	}
	return c
}

// Of is status s's count.
func (c StatusCounts) Of(s Status) int {
	switch s {
	case StatusOpen:
		return c.Open
	case StatusInProgress:
		return c.InProgress
	case StatusDone:
		return c.Done
	case StatusArchived:
		return c.Archived
	}
	return 0
}
