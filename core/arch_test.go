package core_test

// These tests guard the architecture. The hexagon: the core (every package
// under core/) must not depend, even indirectly, on a transport, an ORM or
// any adapter, and core/domain must stand on the standard library alone.
// The edge: REST and GraphQL stand beside each other on adapters/httpedge,
// so neither depends on the other, nor the edge on either. They ask the go
// command for the real dependency closure, so a forbidden package pulled in
// through a third package is caught as well as a direct import.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/worktrack/worktrack"

// forbidden are import paths the core may not reach. An entry ending in "/"
// is a prefix; any other matches itself and the packages below it.
var forbidden = []string{
	"github.com/gin-gonic/",
	"github.com/99designs/gqlgen",
	"gorm.io/",
	"net/http",
	module + "/adapters",
	module + "/graph",
	module + "/cmd",
}

// listedPackage is the part of `go list -json` output the test reads.
type listedPackage struct {
	ImportPath string
	Standard   bool
	DepOnly    bool
	Imports    []string
}

func TestCoreDependsOnNoAdapterOrFramework(t *testing.T) {
	// The test runs in core/, so ./... is every package of the core,
	// including ones added after this test was written.
	pkgs := goListDeps(t, "./...")

	var roots []string
	for path, p := range pkgs {
		if !p.DepOnly && strings.HasPrefix(path, module+"/core") {
			roots = append(roots, path)
		}
	}
	slices.Sort(roots)
	for _, want := range []string{module + "/core/domain", module + "/core/ports"} {
		if !slices.Contains(roots, want) {
			t.Fatalf("go list did not report %s (got %v): the test would check nothing", want, roots)
		}
	}

	for _, root := range roots {
		for _, chain := range firstReached(pkgs, root, func(p listedPackage) bool { return isForbidden(p.ImportPath) }) {
			t.Errorf("%s must not depend on %s, but imports it via %s",
				root, chain[len(chain)-1], strings.Join(chain, " -> "))
		}
	}

	domain := module + "/core/domain"
	for _, chain := range firstReached(pkgs, domain, func(p listedPackage) bool { return !p.Standard }) {
		t.Errorf("%s may import only the standard library, but imports %s via %s",
			domain, chain[len(chain)-1], strings.Join(chain, " -> "))
	}
}

// apart lists API packages that must not depend on each other: each key,
// with every package below it, may not reach any of its values (nor the
// packages below them).
var apart = map[string][]string{
	module + "/graph":             {module + "/adapters/rest"},
	module + "/adapters/rest":     {module + "/graph"},
	module + "/adapters/httpedge": {module + "/adapters/rest", module + "/graph"},
}

func TestAPIsStandBesideEachOther(t *testing.T) { checkApart(t, apart) }

// storage lists the adapters the edge and the core drive: none of them may
// reach an HTTP or GraphQL framework. The interfaces they implement for the
// edge live in adapters/edgeport, which stands on the standard library.
var storage = map[string][]string{
	module + "/adapters/store":     {"github.com/gin-gonic/gin", "github.com/99designs/gqlgen", module + "/adapters/httpedge"},
	module + "/adapters/ratelimit": {"github.com/gin-gonic/gin", "github.com/99designs/gqlgen", module + "/adapters/httpedge"},
}

func TestStorageDependsOnNoHTTPFramework(t *testing.T) { checkApart(t, storage) }

// The GraphQL schema (graph) is served by its transport (graph/server),
// which imports it; the schema never imports its transport.
func TestGraphQLSchemaDoesNotImportItsServer(t *testing.T) {
	checkApart(t, map[string][]string{
		module + "/graph/model": {module + "/graph/server", "github.com/gin-gonic/gin"},
	})
	pkgs := goListDeps(t, module+"/graph")
	for _, chain := range firstReached(pkgs, module+"/graph", func(p listedPackage) bool {
		return below(p.ImportPath, module+"/graph/server") || below(p.ImportPath, "github.com/gin-gonic/gin")
	}) {
		t.Errorf("%s must not depend on %s, but imports it via %s", module+"/graph", chain[len(chain)-1], strings.Join(chain, " -> "))
	}
}

// stdlibOnly are packages that may import the standard library alone: the
// edge's ports, and the sealing of stored secrets (its cryptography is Go's
// own crypto/aes and crypto/cipher, nothing else).
var stdlibOnly = []string{module + "/adapters/edgeport", module + "/adapters/secretbox"}

func TestStandardLibraryOnlyPackagesStayThatWay(t *testing.T) {
	pkgs := goListDeps(t, stdlibOnly...)
	for _, root := range stdlibOnly {
		if _, ok := pkgs[root]; !ok {
			t.Fatalf("go list did not report %s: the test would check nothing", root)
		}
		for _, chain := range firstReached(pkgs, root, func(p listedPackage) bool { return !p.Standard }) {
			t.Errorf("%s may import only the standard library, but imports %s via %s",
				root, chain[len(chain)-1], strings.Join(chain, " -> "))
		}
	}
}

// checkApart fails for every package under a key of rules that reaches,
// directly or not, a package under one of the key's values.
func checkApart(t *testing.T, rules map[string][]string) {
	t.Helper()
	var patterns []string
	for root := range rules {
		patterns = append(patterns, root+"/...")
	}
	slices.Sort(patterns)
	pkgs := goListDeps(t, patterns...)

	for root, banned := range rules {
		var roots []string
		for path, p := range pkgs {
			if !p.DepOnly && below(path, root) {
				roots = append(roots, path)
			}
		}
		if !slices.Contains(roots, root) {
			t.Fatalf("go list did not report %s (got %v): the test would check nothing", root, roots)
		}
		slices.Sort(roots)
		for _, r := range roots {
			reached := firstReached(pkgs, r, func(p listedPackage) bool {
				return slices.ContainsFunc(banned, func(b string) bool { return below(p.ImportPath, b) })
			})
			for _, chain := range reached {
				t.Errorf("%s must not depend on %s, but imports it via %s",
					r, chain[len(chain)-1], strings.Join(chain, " -> "))
			}
		}
	}
}

// below reports whether path is pkg or a package under it.
func below(path, pkg string) bool { return path == pkg || strings.HasPrefix(path, pkg+"/") }

// goListDeps returns the packages matching patterns (run in core/) and
// everything they depend on (tests excluded: the rules are about what
// ships), keyed by import path.
func goListDeps(t *testing.T, patterns ...string) map[string]listedPackage {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	args := append([]string{"list", "-deps", "-json=ImportPath,Standard,DepOnly,Imports"}, patterns...)
	cmd := exec.Command(goBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s in core/: %v\n%s", strings.Join(patterns, " "), err, stderr.String())
	}
	pkgs := make(map[string]listedPackage)
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

func isForbidden(path string) bool {
	for _, f := range forbidden {
		if strings.HasSuffix(f, "/") {
			if strings.HasPrefix(path, f) {
				return true
			}
		} else if below(path, f) {
			return true
		}
	}
	return false
}

// firstReached walks the imports from root, breadth first, and returns the
// shortest import chain to each package that bad accepts, not walking past
// such a package: a failure names the import to remove, not everything that
// import drags in.
func firstReached(pkgs map[string]listedPackage, root string, bad func(listedPackage) bool) [][]string {
	prev := map[string]string{root: ""}
	queue := []string{root}
	var chains [][]string
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if p, known := pkgs[cur]; known && cur != root && bad(p) {
			var chain []string
			for p := cur; p != ""; p = prev[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			chains = append(chains, chain)
			continue
		}
		for _, next := range pkgs[cur].Imports {
			if _, seen := prev[next]; !seen {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return chains
}
