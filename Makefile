# Worktrack developer and CI entry points. `make help` lists the targets.

# bash, for pipefail in the recipes that pipe.
SHELL         := bash
GO            ?= go
BIN           := $(CURDIR)/bin
TESTFLAGS     ?=

# The PostgreSQL image `make test-image` builds from Debian packages, for
# testcontainers where no image registry is reachable (docs/testing.md).
TEST_PG_IMAGE ?= worktrack/postgres-test:15
# What test-containers runs: the tests that need a Docker engine. That is
# the testcontainers path itself (TestMigrateTwice of adapters/store, with
# PostgreSQL found and started by storetest) and every test that starts a
# PostgreSQL of its own to stop it (storetest.OwnPostgres, the fault tests).
# Every other PostgreSQL test runs in make test against TEST_DATABASE_URL.
OWN_PG_CALL        := storetest[.]OwnPostgres[(]
OWN_PG_AWK         := /^func Test/ { name = $$2; sub(/[(].*/, "", name) } /$(OWN_PG_CALL)/ { print name }
OWN_PG_FILES       = $(shell grep -rlE '$(OWN_PG_CALL)' --include='*_test.go' . 2>/dev/null)
OWN_PG_TESTS       = $(shell awk '$(OWN_PG_AWK)' $(OWN_PG_FILES) </dev/null | sort -u)
CONTAINER_TESTS    = $(subst $(space),|,$(strip TestMigrateTwice $(OWN_PG_TESTS)))
CONTAINER_PACKAGES = $(sort ./adapters/store $(patsubst %/,%,$(dir $(OWN_PG_FILES))))
space := $(subst ,, )
# testcontainers dials published ports on the Docker host it works out; on a
# machine with /.dockerenv it guesses the default gateway, wrong for an engine
# running beside the tests. With a local socket the ports are on 127.0.0.1.
TC_HOST_OVERRIDE ?= $(if $(filter-out unix://%,$(DOCKER_HOST)),,127.0.0.1)

# golangci-lint is pinned so every machine (and CI) lints with the same rules.
# It is built on first use into a cache outside the checkout, under a name
# that carries its version, so that a fresh clone on a machine that built it
# once (CI's, every run) does not build it again.
GOLANGCI_LINT_VERSION := v2.15.0
TOOLS_CACHE           ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/worktrack/tools
GOLANGCI_LINT         := $(TOOLS_CACHE)/golangci-lint-$(GOLANGCI_LINT_VERSION)

# The files gqlgen and oapi-codegen own or read; check-generate fails when
# they drift.
GENERATED_PATHS := graph schema.graphql gqlgen.yml client/types.gen.go client/oapi-codegen.yaml client/oapi-overlay.yaml adapters/rest/openapi.yaml

# The repository holds three Go modules, tied by go.work: the server (.), the
# Go client (client) and its testcontainers module (client/worktracktest), so
# that a program using the client requires neither the server's modules nor
# testcontainers (docs/client.md). Every go command that walks packages names
# all three.
PACKAGES := ./... ./client/... ./client/worktracktest/...

.DEFAULT_GOAL := help

.PHONY: all help run build image image-smoke openapi-check docs-assets check-docs-assets graphiql check-graphiql check-binaries test test-times fuzz lint lint-tool fmt-check generate check-generate schema-check webhook-verify graphql-ws-client dashboard dashboard-serve bench export-bench load clean test-image test-containers test-client-containers clean-containers

all: lint test build ## lint, test and build

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# make run serves what make build builds, with the same flags, so one build
# cache serves both (a cold run then build compiles once, not twice).
run: build ## serve on 127.0.0.1:8080 with the embedded SQLite default (worktrack.db)
	@echo "make run: starting the server (Ctrl-C stops it)"
	bin/worktrack serve

# `worktrack version` reports these; override them for a release build:
# make build VERSION=v1.2.0
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)

# nomsgpack: gin's build tag that leaves out its MessagePack binding and
# renderer (github.com/ugorji/go), which Worktrack never uses: 6 MB less
# binary and about 1.4 MiB less resident memory (docs/performance.md).
BUILD_TAGS ?= nomsgpack
# The tests build and run the same code: GOFLAGS reaches the go build of
# the end-to-end tests' server binary too.
TEST_GOFLAGS = GOFLAGS='$(strip $(GOFLAGS) -tags=$(BUILD_TAGS))'

# The build says what it is doing: on a fresh machine it downloads the
# modules and compiles a few hundred packages for minutes before the
# server can start. go build -v names each package it compiles; BUILD_PROGRESS
# turns those names into a count every 25 packages, and passes every other
# line (downloads, errors) through as it is.
BUILD_PROGRESS := awk '/^[^ :\#]+$$/ { n++; if (n % 25 == 0) { printf "build: %d packages compiled...\n", n; fflush() } next } { print; fflush() }'

build: ## build a static, stamped binary into bin/worktrack (VERSION=..., COMMIT=...)
	@echo "build: bin/worktrack (a first build on a machine downloads modules and compiles for a few minutes; later builds take seconds)"
	@set -o pipefail; CGO_ENABLED=0 $(GO) build -v -tags '$(BUILD_TAGS)' -trimpath -ldflags '$(LDFLAGS)' -o bin/worktrack ./cmd/worktrack 2>&1 | $(BUILD_PROGRESS)

# go test -json through tools/testsummary prints what plain go test prints,
# then how many tests were skipped for want of PostgreSQL, Redis, Docker or
# Node.js, and how to run them. The exit status is go test's.
# Without TEST_DATABASE_URL the PostgreSQL tests use testcontainers, with the
# offline image of make test-image when Docker holds it and no other
# (storetest.chooseImage); the ports are dialled where TC_HOST_OVERRIDE says.
test: ## run every test with the race detector (extra flags: TESTFLAGS=...); says what was skipped
	@set -o pipefail; mkdir -p $(BIN); \
	if [ -z "$${TESTCONTAINERS_HOST_OVERRIDE+set}" ] && [ -n '$(TC_HOST_OVERRIDE)' ]; then \
		export TESTCONTAINERS_HOST_OVERRIDE='$(TC_HOST_OVERRIDE)'; \
	fi; \
	$(GO) build -o $(BIN)/testsummary ./tools/testsummary && \
	$(TEST_GOFLAGS) $(GO) test -race -count=1 -json $(NO_CONTAINER_FLAGS) $(TESTFLAGS) $(PACKAGES) 2>&1 | tee $(TEST_JSON) | $(BIN)/testsummary

# NO_CONTAINER_TESTS=1 leaves out of make test the tests that start a
# PostgreSQL container of their own (CI runs them in make test-containers).
# So do worktracktest's Docker tests (CI runs them in make
# test-client-containers, once the image is built).
CLIENT_CONTAINER_TESTS := TestRun TestCleanRemovesWhatAKilledTestLeft TestDownstreamModule
NO_CONTAINER_FLAGS = $(if $(NO_CONTAINER_TESTS),-skip '^($(subst $(space),|,$(strip $(OWN_PG_TESTS) $(CLIENT_CONTAINER_TESTS))))$$')

# Where the last make test's time went: every package's wall time and the
# TOP slowest tests, read from the go test -json it kept in bin/test.json.
TEST_JSON := $(BIN)/test.json
TOP       ?= 40

test-times: ## where the last make test's time went: each package, and the TOP (default 40) slowest tests
	@test -s $(TEST_JSON) || { echo "test-times: no $(TEST_JSON) yet: run make test first"; exit 1; }
	@$(GO) build -o $(BIN)/testsummary ./tools/testsummary && $(BIN)/testsummary -times -slowest $(TOP) <$(TEST_JSON)

# Fuzzing: every `func FuzzXxx` of a test file, one at a time, each for
# FUZZTIME with one worker (the seeds in f.Add and testdata/fuzz run first).
FUZZTIME ?= 20s

fuzz: ## run every Go fuzz target for FUZZTIME each (default 20s), one worker, one after another
	@set -eo pipefail; start=$$(date +%s); \
	for file in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
		pkg=./$$(dirname $${file#./}); \
		for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$file); do \
			echo "fuzz $$pkg $$target for $(FUZZTIME)"; \
			corpus="$${file%/*}/testdata/fuzz/$$target"; \
			before="$$(ls "$$corpus" 2>/dev/null | sort || true)"; \
			out="$$(mktemp)"; \
			if ! $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime '$(FUZZTIME)' -parallel=1 $$pkg 2>&1 | tee "$$out"; then \
				after="$$(ls "$$corpus" 2>/dev/null | sort || true)"; \
				if [ "$$before" = "$$after" ] && grep -q '^    context deadline exceeded$$' "$$out"; then \
					echo "fuzz: $$target: no crasher written; 'context deadline exceeded' at the end of -fuzztime is Go 1.26's fuzz coordinator race (go.dev/issue/75804, fixed in Go 1.27), not a finding"; \
				else \
					rm -f "$$out"; exit 1; \
				fi; \
			fi; \
			rm -f "$$out"; \
		done; \
	done; \
	echo "fuzz: all targets passed in $$(( $$(date +%s) - start ))s"

IMAGE ?= worktrack:dev

image: build ## build the non-root container image IMAGE (default worktrack:dev) from bin/worktrack, no base image
	IMAGE='$(IMAGE)' tools/image/build.sh

image-smoke: ## run IMAGE against SMOKE_DATABASE_URL (host network): CLI-made key, /readyz, one REST call, clean stop
	IMAGE='$(IMAGE)' tools/image/smoke.sh

test-image: ## build the offline PostgreSQL test image TEST_PG_IMAGE (root, Docker; FORCE=1 rebuilds)
	WORKTRACK_TEST_PG_IMAGE='$(TEST_PG_IMAGE)' tools/pgimage/build.sh

test-containers: ## the tests that need Docker: the testcontainers path and the fault tests (own PostgreSQL), Ryuk off offline
	@unset TEST_DATABASE_URL; \
	export WORKTRACK_REQUIRE_POSTGRES=1 WORKTRACK_REQUIRE_DOCKER=1; \
	if [ -z "$${TESTCONTAINERS_HOST_OVERRIDE+set}" ] && [ -n '$(TC_HOST_OVERRIDE)' ]; then \
		export TESTCONTAINERS_HOST_OVERRIDE='$(TC_HOST_OVERRIDE)'; \
	fi; \
	echo "testcontainers: image $${WORKTRACK_TEST_PG_IMAGE:-found by storetest (postgres:16-alpine, else $(TEST_PG_IMAGE) with Ryuk off)}, host: $${TESTCONTAINERS_HOST_OVERRIDE:-(found by testcontainers)}"; \
	echo '$(GO) test -race -count=1 -run '"'"'^($(CONTAINER_TESTS))$$'"'"' $(TESTFLAGS) $(CONTAINER_PACKAGES)'; \
	$(TEST_GOFLAGS) $(GO) test -race -count=1 -run '^($(CONTAINER_TESTS))$$' $(TESTFLAGS) $(CONTAINER_PACKAGES)

# client/worktracktest's own tests start IMAGE (make image) with a
# PostgreSQL through testcontainers and drive it with the client; one kills a
# test process and checks that Clean removes what it left; one copies
# tools/downstream out of the repository and runs its test there. They set
# no TESTCONTAINERS_* variable: worktracktest works offline by itself
# (Ryuk off without its image, the offline PostgreSQL of make test-image,
# the host of a local engine).
test-client-containers: ## client/worktracktest against IMAGE (make image and make test-image first), and a downstream module through it
	@env -u TESTCONTAINERS_HOST_OVERRIDE -u TESTCONTAINERS_RYUK_DISABLED -u WORKTRACK_POSTGRES_IMAGE \
		WORKTRACK_IMAGE='$(IMAGE)' WORKTRACK_REQUIRE_DOCKER=1 \
		$(GO) test -count=1 -v -run '^($(subst $(space),|,$(CLIENT_CONTAINER_TESTS)))$$' ./client/worktracktest

# Containers and networks that test binaries which died left behind: the
# PostgreSQL of storetest, and whatever worktracktest started (its Clean
# removes those of dead processes only; this removes them all, so run it
# when no test runs).
clean-containers: ## remove the test containers and networks that test binaries which died left behind
	@ids="$$(docker ps -aq --filter label=org.worktrack.storetest) $$(docker ps -aq --filter label=org.worktrack.worktracktest)"; \
	if [ -n "$${ids// /}" ]; then echo "removing containers $$ids"; docker rm -f $$ids >/dev/null; fi; \
	nets="$$(docker network ls -q --filter label=org.worktrack.worktracktest)"; \
	if [ -n "$$nets" ]; then echo "removing networks $$nets"; docker network rm $$nets >/dev/null; fi

lint: fmt-check lint-tool ## gofmt check, then golangci-lint with .golangci.yml
	$(GOLANGCI_LINT) run $(PACKAGES)
	cd tools/downstream && GOWORK=off $(GOLANGCI_LINT) run ./...

lint-tool: ## build the pinned golangci-lint into TOOLS_CACHE (~/.cache/worktrack/tools) when missing
	@if [ ! -x '$(GOLANGCI_LINT)' ]; then \
		echo "building golangci-lint $(GOLANGCI_LINT_VERSION) into $(TOOLS_CACHE)"; \
		tmp="$$(mktemp -d)" && \
		GOBIN="$$tmp" $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) && \
		mkdir -p '$(TOOLS_CACHE)' && mv "$$tmp/golangci-lint" '$(GOLANGCI_LINT)' && rmdir "$$tmp"; \
	fi

check-binaries: ## fail when git tracks a compiled binary (an ELF file)
	@bins="$$(git ls-files -z | xargs -0 -r sh -c 'for f; do [ -f "$$f" ] && [ "$$(head -c 4 "$$f" | od -An -c | tr -d " ")" = "177ELF" ] && echo "$$f"; done' sh)"; \
	if [ -n "$$bins" ]; then \
		echo "check-binaries: compiled binaries are tracked (git rm --cached them; make builds into bin/):"; \
		echo "$$bins" | sed 's/^/  /'; \
		exit 1; \
	fi

fmt-check: ## fail, listing them, when some Go files are not gofmt-formatted
	@files="$$(gofmt -l $$(find . -name '*.go' -not -path './bin/*' -not -path './.git/*' -not -path './vendor/*') </dev/null)"; \
	if [ -n "$$files" ]; then \
		echo "these files are not gofmt-formatted (run: gofmt -w FILE):"; \
		echo "$$files" | sed 's/^/  /'; \
		exit 1; \
	fi

# After gqlgen, the lists of Task and TaskEdge are made to marshal their
# elements in order instead of a goroutine each (tools/gqlgen-inorder,
# graph/lists.go).
INORDER_TYPES := Task,TaskEdge

generate: ## regenerate the GraphQL layer (schema.graphql, gqlgen.yml) and the Go client's types (adapters/rest/openapi.yaml)
	$(GO) tool gqlgen generate
	$(GO) run ./tools/gqlgen-inorder -types '$(INORDER_TYPES)' graph/generated.go
	$(GO) tool oapi-codegen -config client/oapi-codegen.yaml adapters/rest/openapi.yaml

schema-check: ## validate schema.graphql with graphql-js (installed from npm into tools/schema-check)
	npm ci --prefix tools/schema-check --no-audit --no-fund
	node tools/schema-check/validate.mjs schema.graphql

openapi-check: ## lint adapters/rest/openapi.yaml with Redocly and typecheck TypeScript types generated from it (npm, lockfile)
	npm ci --prefix tools/openapi-check --no-audit --no-fund
	cd tools/openapi-check && ./node_modules/.bin/redocly lint ../../adapters/rest/openapi.yaml --config lint.redocly.yaml
	cd tools/openapi-check && ./node_modules/.bin/openapi-typescript ../../adapters/rest/openapi.yaml -o generated/worktrack.d.ts && \
		./node_modules/.bin/tsc -p tsconfig.json && echo "openapi-check: lint clean; generated TypeScript types typecheck"

# The GraphiQL page GET /graphql serves to browsers: pinned packages in
# tools/graphiql (lockfile), bundled by esbuild into web/graphiql and
# committed; check-graphiql fails when the bundle differs from what the
# lockfile gives.
GRAPHIQL_ASSETS := web/graphiql/graphiql.js web/graphiql/graphiql.css

graphiql: ## bundle GraphiQL from pinned npm packages (lockfile) into web/graphiql (esbuild)
	npm ci --prefix tools/graphiql --no-audit --no-fund --ignore-scripts
	cd tools/graphiql && ./node_modules/.bin/esbuild index.jsx --bundle --minify --format=iife --target=es2020 \
		--legal-comments=none --define:process.env.NODE_ENV='"production"' --log-level=warning --outfile=../../web/graphiql/graphiql.js
	cp tools/graphiql/node_modules/graphiql/graphiql.min.css web/graphiql/graphiql.css

check-graphiql: graphiql ## fail when make graphiql changes the committed GraphiQL bundle
	@git diff --exit-code --stat -- $(GRAPHIQL_ASSETS) || { echo "check-graphiql: run make graphiql and commit the result"; exit 1; }

# The Redoc bundle GET /docs serves: pinned in tools/docs-assets (lockfile),
# copied into web/redoc and committed; check-docs-assets
# fails when the copy differs from what the lockfile gives.
DOCS_ASSETS := web/redoc/redoc.standalone.js web/redoc/redoc.standalone.js.LICENSE.txt

docs-assets: ## copy the pinned Redoc standalone bundle (npm, lockfile) that GET /docs serves into web/redoc
	npm ci --prefix tools/docs-assets --no-audit --no-fund --ignore-scripts
	cp tools/docs-assets/node_modules/redoc/bundles/redoc.standalone.js.LICENSE.txt web/redoc/
	@# Redoc's footer shows its logo from cdn.redoc.ly: the one request the page
	@# would make off the server. It becomes an inline, empty SVG.
	sed 's|https://cdn.redoc.ly/redoc/logo-mini.svg|data:image/svg+xml,%3Csvg%20xmlns=%22http://www.w3.org/2000/svg%22/%3E|' \
		tools/docs-assets/node_modules/redoc/bundles/redoc.standalone.js > web/redoc/redoc.standalone.js
	@if grep -q 'https://cdn' web/redoc/redoc.standalone.js; then echo "docs-assets: the Redoc bundle still names a CDN"; exit 1; fi

check-docs-assets: docs-assets ## fail when make docs-assets changes the committed Redoc bundle
	@git diff --exit-code -- $(DOCS_ASSETS) || { echo "check-docs-assets: run make docs-assets and commit the result"; exit 1; }

webhook-verify: ## install the standardwebhooks npm package into tools/webhook-verify (the webhook signature tests use it)
	npm ci --prefix tools/webhook-verify --no-audit --no-fund

graphql-ws-client: ## install the graphql-ws npm client into tools/graphql-ws-client (the subscription tests run it)
	npm ci --prefix tools/graphql-ws-client --no-audit --no-fund

# The example board page of docs/graphql.md: urql and graphql-ws from the
# lockfile, bundled by esbuild into tools/dashboard/dist (not committed: an
# example to copy, not an asset the binary serves). The browser test drives
# it in Chromium with playwright-core, from the same lockfile.
dashboard: ## install and build the example dashboard into tools/dashboard/dist (its Chromium test needs it)
	npm ci --prefix tools/dashboard --no-audit --no-fund --ignore-scripts
	npm run --prefix tools/dashboard --silent build

dashboard-serve: dashboard ## serve the example dashboard on http://localhost:9097 (run the API with WORKTRACK_CORS_ORIGINS=http://localhost:9097)
	cd tools/dashboard && ./node_modules/.bin/esbuild --servedir=dist --serve=localhost:9097

check-generate: ## fail when regenerating changes or adds generated files (graph/, client/types.gen.go)
	@if [ ! -f gqlgen.yml ]; then \
		echo "check-generate: no gqlgen.yml yet, skipping"; \
		exit 0; \
	fi; \
	$(MAKE) --no-print-directory generate || exit 1; \
	if ! git diff --exit-code -- $(GENERATED_PATHS); then \
		echo "check-generate: 'make generate' changed the files above; run it and commit the result"; \
		exit 1; \
	fi; \
	untracked="$$(git ls-files --others --exclude-standard -- $(GENERATED_PATHS))"; \
	if [ -n "$$untracked" ]; then \
		echo "check-generate: 'make generate' left files that are not committed:"; \
		echo "$$untracked" | sed 's/^/  /'; \
		exit 1; \
	fi

bench: ## run the benchmarks (no tests)
	$(GO) test -run '^$$' -bench . -benchmem $(PACKAGES)

# Export and import against pg_dump and pg_restore on one PostgreSQL
# (docs/performance.md#export-and-import): 1,000,000 tasks with their events;
# EXPORTBENCH_QUICK=1 runs 5,000 and checks every import's counts (CI).
export-bench: build ## export/import vs pg_dump/pg_restore on 1,000,000 tasks (EXPORTBENCH_QUICK=1: 5,000, checked)
	$(GO) run ./tools/exportbench

load: build ## load harness: Worktrack vs ../shared/perf/reference under wrk (LOAD_QUICK=1, LOAD_SCENARIOS=a,b, LOAD_KEEP=1; docs/performance.md)
	GO=$(GO) $(GO) run ./tools/load

clean: ## remove build outputs (keeps worktrack.db and the pinned tools in bin/)
	rm -f bin/worktrack coverage.out
