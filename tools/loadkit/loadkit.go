// Package loadkit is what the load tools (tools/neighbourload) share: a
// scratch database, the worktrack binary's operator commands and server,
// an HTTP client with a key, a server's resident memory, percentiles.
package loadkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// FreshDatabase drops and creates the database name on the server of
// adminURL (never adminURL's own database), and returns its URL.
func FreshDatabase(ctx context.Context, adminURL, name string) (string, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	id := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+id+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+id); err != nil {
		return "", err
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// CLI runs one of the binary's operator commands on dbURL and returns the
// JSON object it printed.
func CLI(bin, dbURL string, args ...string) (map[string]any, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("worktrack %s: %w", strings.Join(args, " "), err)
	}
	var m map[string]any
	if len(bytes.TrimSpace(out)) > 0 {
		if err := json.Unmarshal(out, &m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Tenant is a workspace with an admin and the admin's key.
type Tenant struct{ Workspace, User, Key string }

// NewTenant makes a workspace named name, its admin and a key.
func NewTenant(bin, dbURL, name string) (Tenant, error) {
	ws, err := CLI(bin, dbURL, "workspace", "create", "--name", name)
	if err != nil {
		return Tenant{}, err
	}
	t := Tenant{Workspace: ws["id"].(string)}
	usr, err := CLI(bin, dbURL, "user", "create", "--workspace", t.Workspace, "--email", strings.ToLower(name)+"@example.com",
		"--name", name, "--role", "admin")
	if err != nil {
		return Tenant{}, err
	}
	t.User = usr["id"].(string)
	key, err := CLI(bin, dbURL, "key", "create", "--user", t.User)
	if err != nil {
		return Tenant{}, err
	}
	t.Key = key["secret"].(string)
	return t, nil
}

// Server is a running `worktrack serve`.
type Server struct {
	Cmd  *exec.Cmd
	Base string // http://127.0.0.1:port
}

// FreeAddr is a loopback address nothing listens on.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// StartServer runs `bin serve` on dbURL with env added, and waits until it
// is ready. Its stderr goes to log.
func StartServer(bin, dbURL string, log io.Writer, env ...string) (*Server, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), append([]string{"DATABASE_URL=" + dbURL, "WORKTRACK_ADDR=" + addr, "REDIS_URL="}, env...)...)
	cmd.Stdout, cmd.Stderr = io.Discard, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Cmd: cmd, Base: "http://" + addr}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if res, err := http.Get(s.Base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("the server did not become ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop sends SIGINT and waits for the process.
func (s *Server) Stop() {
	_ = s.Cmd.Process.Signal(os.Interrupt)
	_ = s.Cmd.Wait()
}

// PeakRSS is the most resident memory the server has had, in bytes
// (VmHWM).
func (s *Server) PeakRSS() (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.Cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", s.Cmd.Process.Pid)
}

// Client calls the API with a key.
type Client struct {
	Base, Key string
	HTTP      *http.Client
}

// Do sends a request with a JSON body (none when body is nil) and returns
// the status and the body.
func (c Client) Do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, r)
	if err != nil {
		return 0, nil, err
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res.StatusCode, out, err
}

// Post is Do for a POST that must answer 2xx; it returns the JSON object.
func (c Client) Post(ctx context.Context, path string, body any) (map[string]any, error) {
	status, out, err := c.Do(ctx, http.MethodPost, path, body)
	if err != nil {
		return nil, err
	}
	if status/100 != 2 {
		return nil, fmt.Errorf("POST %s: %d %s", path, status, out)
	}
	var m map[string]any
	return m, json.Unmarshal(out, &m)
}

// Percentile is the p-th percentile (0 < p <= 1) of ds, 0 when empty.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
