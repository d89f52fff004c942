package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// pageDepth is the page the deep-list scenario reads: the first page is 1,
// so the harness follows next_cursor pageDepth-1 times per project.
const pageDepth = 40

// numGetPaths is how many random ids the get-one path files hold.
const numGetPaths = 10_000

// pathBuilders make the lines of each path file; see get.lua and post.lua
// for their formats ("PATH" and "PATH<TAB>JSON BODY"). Set in init: some
// builders start from the lines of another (pathLines).
var pathBuilders map[string]func(ctx context.Context, h *harness) ([]string, error)

func init() { pathBuilders = builders() }

func builders() map[string]func(ctx context.Context, h *harness) ([]string, error) {
	return map[string]func(ctx context.Context, h *harness) ([]string, error){
		"wt_get": func(_ context.Context, h *harness) ([]string, error) {
			var out []string
			for range numGetPaths {
				out = append(out, "/v1/tasks/"+h.data.tasks[mrand.IntN(len(h.data.tasks))].id) //nolint:gosec // load data
			}
			return out, nil
		},
		"wt_get_restricted": func(_ context.Context, h *harness) ([]string, error) {
			seen := map[string]bool{}
			for _, p := range h.data.projects[:restrictedProjects] {
				seen[p.id] = true
			}
			var out []string
			for len(out) < numGetPaths {
				if t := h.data.tasks[mrand.IntN(len(h.data.tasks))]; seen[t.projectID] { //nolint:gosec // load data
					out = append(out, "/v1/tasks/"+t.id)
				}
			}
			return out, nil
		},
		"wt_page1": func(_ context.Context, h *harness) ([]string, error) {
			var out []string
			for _, p := range h.data.projects {
				out = append(out, "/v1/projects/"+p.id+"/tasks?limit=20")
			}
			return out, nil
		},
		"wt_page40": func(ctx context.Context, h *harness) ([]string, error) {
			return h.wtPage40(ctx, "wt_page1")
		},
		"wt_gql_task": func(_ context.Context, h *harness) ([]string, error) {
			var out []string
			for range numGetPaths {
				id := h.data.tasks[mrand.IntN(len(h.data.tasks))].id //nolint:gosec // load data
				out = append(out, gqlLine(gqlTaskQuery, map[string]any{"id": id}))
			}
			return out, nil
		},
		"wt_gql_projects": func(context.Context, *harness) ([]string, error) {
			return []string{gqlLine(`{ projects(first:20){ nodes { tasks(first:50){ nodes { assignee{email} project{key} } } } } }`, nil)}, nil
		},
		"wt_create": func(_ context.Context, h *harness) ([]string, error) {
			return createLines(h.data, h.data.projects)
		},
		"wt_create_one": func(_ context.Context, h *harness) ([]string, error) {
			return createLines(h.data, h.data.projects[:1])
		},
		"wt_create_hooked": func(_ context.Context, h *harness) ([]string, error) {
			return createLines(h.hooked, h.hooked.projects)
		},
		"wt_batch_create": func(_ context.Context, h *harness) ([]string, error) {
			return batchCreateLines(h.data, h.data.projects)
		},
		"ref_create": func(_ context.Context, h *harness) ([]string, error) {
			return h.refCreateLines(false)
		},
		"ref_create_one": func(_ context.Context, h *harness) ([]string, error) {
			return h.refCreateLines(true)
		},
		"wt_search": func(_ context.Context, _ *harness) ([]string, error) {
			// Two word prefixes across every project: a verb's and a noun's.
			var out []string
			for _, v := range titleVerbs {
				for _, n := range titleNouns {
					out = append(out, "/v1/tasks?limit=20&q="+v[:3]+"+"+n[:3])
				}
			}
			return out, nil
		},
		"wt_search_page40": func(ctx context.Context, h *harness) ([]string, error) {
			return h.wtPage40(ctx, "wt_search")
		},
		"wt_mine": func(context.Context, *harness) ([]string, error) {
			return []string{"/v1/tasks?limit=20&assignee_id=me&status=open,in_progress&sort=due_at"}, nil
		},
		"wt_mine_page40": func(ctx context.Context, h *harness) ([]string, error) {
			return h.wtPage40(ctx, "wt_mine")
		},
		"wt_counts": func(context.Context, *harness) ([]string, error) {
			return []string{"/v1/tasks/counts?group_by=status"}, nil
		},
		"ref_gql_task": func(ctx context.Context, h *harness) ([]string, error) {
			gets, err := h.pathLines(ctx, "ref_get")
			if err != nil {
				return nil, err
			}
			out := make([]string, 0, len(gets))
			for _, p := range gets {
				out = append(out, gqlLine(gqlTaskQuery, map[string]any{"id": strings.TrimPrefix(p, "/tasks/")}))
			}
			return out, nil
		},
		"ref_get":   func(_ context.Context, h *harness) ([]string, error) { return h.refGenerated("get_paths.txt") },
		"ref_page1": func(_ context.Context, h *harness) ([]string, error) { return h.refGenerated("first_page_paths.txt") },
		"ref_page40": func(ctx context.Context, h *harness) ([]string, error) {
			first, err := h.pathLines(ctx, "ref_page1")
			if err != nil {
				return nil, err
			}
			return followCursors(ctx, h.refURL, "", first, func(body []byte) (string, error) {
				var p struct {
					NextCursor string `json:"next_cursor"`
				}
				if err := json.Unmarshal(body, &p); err != nil || p.NextCursor == "" {
					return "", fmt.Errorf("no next_cursor in %.200s", body)
				}
				return p.NextCursor, nil
			})
		},
	}
}

// gqlTaskQuery is the GraphQL read of one task that Worktrack and the bare
// gqlgen floor both serve.
const gqlTaskQuery = `query($id: ID!) { task(id: $id) { id projectId title status assigneeId dueAt createdAt updatedAt } }`

// wtPage40 is, for each first-page path of key on Worktrack's PostgreSQL
// server, the path of its page 40.
func (h *harness) wtPage40(ctx context.Context, key string) ([]string, error) {
	first, err := h.pathLines(ctx, key)
	if err != nil {
		return nil, err
	}
	return followCursors(ctx, h.servers[backendPostgres].url, h.data.secret, first, func(body []byte) (string, error) {
		var p struct {
			Pagination struct {
				NextCursor *string `json:"next_cursor"`
			} `json:"pagination"`
		}
		if err := json.Unmarshal(body, &p); err != nil || p.Pagination.NextCursor == nil {
			return "", fmt.Errorf("no pagination.next_cursor in %.200s", body)
		}
		return *p.Pagination.NextCursor, nil
	})
}

// createLines are the creates of post.lua into projects: the same body
// shapes over REST for every create scenario, half of them assigned to a
// member of d.
func createLines(d *dataset, projects []projectRow) ([]string, error) {
	var out []string
	for i := range numProjects {
		body := map[string]any{"title": fmt.Sprintf("Created under load %d", i), "status": "open"}
		if i%2 == 0 {
			body["assignee_id"] = d.users[i%len(d.users)].id
		}
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		out = append(out, "/v1/projects/"+projects[i%len(projects)].id+"/tasks\t"+string(b))
	}
	return out, nil
}

// batchSize is the tasks of one batch-create request.
const batchSize = 100

// batchCreateLines are bulk creations of batchSize tasks, one line per
// project, half of the tasks assigned.
func batchCreateLines(d *dataset, projects []projectRow) ([]string, error) {
	var out []string
	for i, p := range projects {
		items := make([]map[string]any, batchSize)
		for j := range items {
			items[j] = map[string]any{"title": fmt.Sprintf("Imported under load %d.%d", i, j)}
			if j%2 == 0 {
				items[j]["assignee_id"] = d.users[(i+j)%len(d.users)].id
			}
		}
		b, err := json.Marshal(map[string]any{"tasks": items})
		if err != nil {
			return nil, err
		}
		out = append(out, "/v1/projects/"+p.id+"/tasks/batch\t"+string(b))
	}
	return out, nil
}

// refCreateLines are the reference's creates: its create_paths.txt (one
// line per project), or its first project alone, with the body it takes.
func (h *harness) refCreateLines(oneProject bool) ([]string, error) {
	paths, err := h.refGenerated("create_paths.txt")
	if err != nil {
		return nil, err
	}
	if oneProject {
		paths = paths[:1]
	}
	var out []string
	for i := range numProjects {
		out = append(out, fmt.Sprintf("%s\t{\"title\":\"Created under load %d\",\"status\":\"open\"}", paths[i%len(paths)], i))
	}
	return out, nil
}

func gqlLine(query string, vars map[string]any) string {
	b, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return "/graphql\t" + string(b)
}

// refGenerated reads a path file that the reference's -genpaths wrote.
func (h *harness) refGenerated(name string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(h.refPathsDir, name))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// pathLines builds (once) the lines of a path file.
func (h *harness) pathLines(ctx context.Context, key string) ([]string, error) {
	if lines, ok := h.paths[key]; ok {
		return lines, nil
	}
	build, ok := pathBuilders[key]
	if !ok {
		return nil, fmt.Errorf("no path builder %q", key)
	}
	lines, err := build(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("paths %s: %w", key, err)
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("paths %s: empty", key)
	}
	h.paths[key] = lines
	return lines, nil
}

// pathFile writes the path file of key into the temporary directory.
func (h *harness) pathFile(ctx context.Context, key string) (string, error) {
	lines, err := h.pathLines(ctx, key)
	if err != nil {
		return "", err
	}
	f := filepath.Join(h.tmp, key+".txt")
	if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return "", err
	}
	return f, nil
}

// followCursors reads, for each first-page path, pageDepth-1 pages on by
// next_cursor, and returns the path of the last one. A few workers in
// parallel keep this to seconds.
func followCursors(ctx context.Context, base, token string, first []string, next func([]byte) (string, error)) ([]string, error) {
	out := make([]string, len(first))
	errs := make([]error, len(first))
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				p := first[i]
				for range pageDepth - 1 {
					body, err := httpGet(ctx, base+p, token)
					if err != nil {
						errs[i] = err
						break
					}
					c, err := next(body)
					if err != nil {
						errs[i] = fmt.Errorf("%s: %w", p, err)
						break
					}
					p = first[i] + "&cursor=" + url.QueryEscape(c)
				}
				out[i] = p
			}
		}()
	}
	for i := range first {
		work <- i
	}
	close(work)
	wg.Wait()
	return out, errors.Join(errs...)
}

// httpGet returns the body of a 2xx answer, or an error naming the status.
func httpGet(ctx context.Context, u, token string) ([]byte, error) {
	return httpDo(ctx, http.MethodGet, u, token, "")
}

func httpDo(ctx context.Context, method, u, token, body string) ([]byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return b, fmt.Errorf("%s %s: status %d: %.300s", method, u, resp.StatusCode, b)
	}
	return b, nil
}
