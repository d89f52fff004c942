package core_test

// This test guards the hexagon: the core (every package under core/) must
// not depend, even indirectly, on a transport, an ORM or any adapter, and
// core/domain must stand on the standard library alone. It asks the go
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
	pkgs := goListDeps(t)

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

// goListDeps returns every package under core/ and everything they depend
// on (tests excluded: the rule is about what ships), keyed by import path.
func goListDeps(t *testing.T) map[string]listedPackage {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	// The test runs in core/, so ./... is every package of the core,
	// including ones added after this test was written.
	cmd := exec.Command(goBin, "list", "-deps", "-json=ImportPath,Standard,DepOnly,Imports", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./... in core/: %v\n%s", err, stderr.String())
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
		} else if path == f || strings.HasPrefix(path, f+"/") {
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
