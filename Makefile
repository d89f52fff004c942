# Worktrack developer and CI entry points. `make help` lists the targets.

GO            ?= go
BIN           := $(CURDIR)/bin
TESTFLAGS     ?=

# golangci-lint is pinned so every machine (and CI) lints with the same rules;
# it is built into ./bin on first use and rebuilt when the version differs.
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT         := $(BIN)/golangci-lint

# The files gqlgen owns or reads; check-generate fails when they drift.
GENERATED_PATHS := graph schema.graphql gqlgen.yml

.DEFAULT_GOAL := help

.PHONY: all help run build test lint lint-tool fmt-check generate check-generate schema-check webhook-verify bench clean

all: lint test build ## lint, test and build

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: ## serve on 127.0.0.1:8080 with the embedded SQLite default (worktrack.db)
	$(GO) run ./cmd/worktrack serve

build: ## build a static binary into bin/worktrack
	CGO_ENABLED=0 $(GO) build -o bin/worktrack ./cmd/worktrack

test: ## run every test with the race detector (extra flags: TESTFLAGS=...)
	$(GO) test -race -count=1 $(TESTFLAGS) ./...

lint: fmt-check lint-tool ## gofmt check, then golangci-lint with .golangci.yml
	$(GOLANGCI_LINT) run ./...

lint-tool: ## install the pinned golangci-lint into bin/ when missing or outdated
	@want='$(GOLANGCI_LINT_VERSION:v%=%)'; \
	have="$$($(GOLANGCI_LINT) version --short 2>/dev/null | sed 's/^v//')"; \
	if [ "$$have" != "$$want" ]; then \
		echo "installing golangci-lint $(GOLANGCI_LINT_VERSION) into $(BIN) (found: $${have:-none})"; \
		rm -f $(GOLANGCI_LINT); \
		GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION); \
	fi

fmt-check: ## fail, listing them, when some Go files are not gofmt-formatted
	@files="$$(gofmt -l $$(find . -name '*.go' -not -path './bin/*' -not -path './.git/*' -not -path './vendor/*') </dev/null)"; \
	if [ -n "$$files" ]; then \
		echo "these files are not gofmt-formatted (run: gofmt -w FILE):"; \
		echo "$$files" | sed 's/^/  /'; \
		exit 1; \
	fi

generate: ## regenerate the GraphQL layer from schema.graphql and gqlgen.yml
	$(GO) tool gqlgen generate

schema-check: ## validate schema.graphql with graphql-js (installed from npm into tools/schema-check)
	npm ci --prefix tools/schema-check --no-audit --no-fund
	node tools/schema-check/validate.mjs schema.graphql

webhook-verify: ## install the standardwebhooks npm package into tools/webhook-verify (the webhook signature tests use it)
	npm ci --prefix tools/webhook-verify --no-audit --no-fund

check-generate: ## fail when regenerating changes or adds files under graph/
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
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean: ## remove build outputs (keeps worktrack.db and the pinned tools in bin/)
	rm -f bin/worktrack coverage.out
