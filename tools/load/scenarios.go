package main

// A scenario is one row of the table: a wrk run against Worktrack (on the
// PostgreSQL or the SQLite server) and, when there is a comparable route, the
// same run against the reference, interleaved pair by pair. Adding a
// scenario is adding an entry here, plus a path builder in paths.go when it
// needs a new kind of request.
type scenario struct {
	name    string
	backend string  // backendPostgres or backendSQLite: the Worktrack server
	wt      target  // the Worktrack side
	ref     *target // the reference side; nil: Worktrack figures only
	// unit names what perUnit counts; the ratio compares units/s when the
	// two sides return different amounts per request.
	unit string
	// timeout is wrk's --timeout, after which a request counts as a socket
	// error; "" is wrk's default, 2s.
	timeout string
	// key is the dataset key the Worktrack side sends (keyUnscoped, the
	// zero value, or a scoped one).
	key int
	// hooked makes the Worktrack side the second workspace's, whose one
	// webhook subscribes to task.created (h.hooked).
	hooked bool
	// againstUnscoped makes the other side Worktrack itself with the
	// unscoped key, instead of the reference: the ratio is then what the
	// key's scopes cost, or (with its own first page as the other side)
	// what reading deep costs.
	againstUnscoped bool
	// refGQL makes the other side ../shared/perf/reference-graphql, the
	// bare gqlgen floor.
	refGQL bool
	// against, when set, makes the other side the Worktrack server of that
	// backend with the unscoped key: the traced servers run against the
	// untraced one, on the same database.
	against string
	// note, when set, is the table's note on the row.
	note string
}

// page40Note is the note of a list's page 40 against its own page 1.
const page40Note = `the "ref" side is Worktrack's own page 1 of the list; the ratio is page 40 / page 1 (target: within 1.2x, >= 0.83)`

// target is one side of a scenario: a wrk Lua script and the path file it
// draws requests from.
type target struct {
	script string // file in tools/load: get.lua or post.lua
	paths  string // a key of pathBuilders
	// perRequest is how many units (e.g. tasks) one response carries; 0
	// means 1.
	perRequest float64
}

const (
	backendPostgres = "postgres"
	backendSQLite   = "sqlite"
	// backendTraced and backendTraced1pct are Worktrack on the PostgreSQL
	// backend's database with tracing on, exporting over OTLP/HTTP to the
	// harness's span sink: every request sampled, and 1 in 100.
	backendTraced     = "postgres-traced"
	backendTraced1pct = "postgres-traced-1pct"
)

// tracedEnv are the OTEL_* variables of a traced backend (the sink's
// endpoint is added when the server starts).
var tracedEnv = map[string][]string{
	backendTraced:     {"OTEL_TRACES_SAMPLER=parentbased_always_on"},
	backendTraced1pct: {"OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.01"},
}

var (
	refGet   = &target{script: "get.lua", paths: "ref_get"}
	refPage1 = &target{script: "get.lua", paths: "ref_page1"}
)

// scenarios run in this order. Task creation comes last among the
// PostgreSQL ones so that the tasks it adds do not change the reads.
var scenarios = []scenario{
	{name: "rest-get", backend: backendPostgres,
		wt: target{script: "get.lua", paths: "wt_get"}, ref: refGet},
	// rest-get with tracing on, against the same server with it off
	// (docs/operations.md#traces; targets: at least 0.85 with every request
	// sampled, 0.97 at 1 in 100).
	{name: "rest-get-traced", backend: backendTraced, against: backendPostgres,
		wt: target{script: "get.lua", paths: "wt_get"}, ref: &target{script: "get.lua", paths: "wt_get"}},
	{name: "rest-get-traced-1pct", backend: backendTraced1pct, against: backendPostgres,
		wt: target{script: "get.lua", paths: "wt_get"}, ref: &target{script: "get.lua", paths: "wt_get"}},
	{name: "rest-page1", backend: backendPostgres,
		wt: target{script: "get.lua", paths: "wt_page1"}, ref: refPage1},
	{name: "rest-page40", backend: backendPostgres,
		wt: target{script: "get.lua", paths: "wt_page40"}, ref: &target{script: "get.lua", paths: "ref_page40"}},
	// GraphQL task(id) against bare gqlgen over pgx serving the same query
	// (docs/performance.md: the target is at least 0.8).
	{name: "gql-task-floor", backend: backendPostgres, refGQL: true,
		note: "the reference is ../shared/perf/reference-graphql, bare gqlgen + pgx serving the same query (target >= 0.8)",
		wt:   target{script: "post.lua", paths: "wt_gql_task"}, ref: &target{script: "post.lua", paths: "ref_gql_task"}},
	// 1,000 tasks per answer: under 32 connections on 2 cores one answer
	// can take longer than wrk's 2 s default, which is a slow answer to
	// report as latency, not a socket error.
	{name: "gql-projects-tasks", backend: backendPostgres, unit: "tasks", timeout: "10s",
		wt:  target{script: "post.lua", paths: "wt_gql_projects", perRequest: 20 * 50},
		ref: &target{script: "get.lua", paths: "ref_page1", perRequest: 20}},
	// The same reads with scoped keys, interleaved with the unscoped key on
	// the same server: the ratio is what checking scopes and projects
	// costs (docs/keys.md; the target is at least 0.95).
	{name: "rest-get-scoped", backend: backendPostgres, key: keyScoped, againstUnscoped: true,
		wt: target{script: "get.lua", paths: "wt_get"}, ref: &target{script: "get.lua", paths: "wt_get"}},
	{name: "rest-get-restricted", backend: backendPostgres, key: keyRestricted, againstUnscoped: true,
		wt: target{script: "get.lua", paths: "wt_get_restricted"}, ref: &target{script: "get.lua", paths: "wt_get_restricted"}},
	// Finding tasks (docs/finding-tasks.md) on the 100,000 tasks: against
	// the reference's first page (targets: filter-mine and counts at least
	// 0.5; search-q p99 under 50 ms), and each list's page 40 against its
	// own page 1 on Worktrack (target: within 1.2x, a ratio of at least
	// 0.83).
	{name: "search-q", backend: backendPostgres,
		wt: target{script: "get.lua", paths: "wt_search"}, ref: refPage1},
	{name: "search-q-page40", backend: backendPostgres, againstUnscoped: true, note: page40Note,
		wt: target{script: "get.lua", paths: "wt_search_page40"}, ref: &target{script: "get.lua", paths: "wt_search"}},
	{name: "filter-mine", backend: backendPostgres,
		wt: target{script: "get.lua", paths: "wt_mine"}, ref: refPage1},
	{name: "filter-mine-page40", backend: backendPostgres, againstUnscoped: true, note: page40Note,
		wt: target{script: "get.lua", paths: "wt_mine_page40"}, ref: &target{script: "get.lua", paths: "wt_mine"}},
	{name: "counts", backend: backendPostgres,
		wt: target{script: "get.lua", paths: "wt_counts"}, ref: refPage1},
	{name: "sqlite-rest-get", backend: backendSQLite,
		wt: target{script: "get.lua", paths: "wt_get"}, ref: refGet},
	{name: "sqlite-rest-page1", backend: backendSQLite,
		wt: target{script: "get.lua", paths: "wt_page1"}, ref: refPage1},
	// Creates against the reference's durable create (one transaction:
	// the task and its event row), spread over the 100 projects, then all
	// sent to one project as an import does (targets: at least 0.5 and
	// 0.4).
	{name: "rest-create", backend: backendPostgres,
		wt: target{script: "post.lua", paths: "wt_create"}, ref: &target{script: "post.lua", paths: "ref_create"}},
	{name: "rest-create-one-project", backend: backendPostgres,
		wt: target{script: "post.lua", paths: "wt_create_one"}, ref: &target{script: "post.lua", paths: "ref_create_one"}},
	// Creates in a workspace with one webhook subscribed to task.created,
	// against creates in one with none, on the same server (target: at
	// least 0.8).
	{name: "rest-create-webhook", backend: backendPostgres, hooked: true, againstUnscoped: true,
		note: `the "ref" side is Worktrack's rest-create in a workspace with no webhook; the ratio is with one / with none (target >= 0.8)`,
		wt:   target{script: "post.lua", paths: "wt_create_hooked"}, ref: &target{script: "post.lua", paths: "wt_create"}},
	// Bulk creation, 100 tasks a request, in tasks/s against the
	// reference's durable create of one task a request (target: at least
	// 5,000 tasks/s).
	{name: "batch-create", backend: backendPostgres,
		note: "tasks/s: 100 tasks a request against the reference's one",
		wt:   target{script: "post.lua", paths: "wt_batch_create", perRequest: batchSize},
		ref:  &target{script: "post.lua", paths: "ref_create", perRequest: 1}},
}

func (t target) units() float64 {
	if t.perRequest == 0 {
		return 1
	}
	return t.perRequest
}
