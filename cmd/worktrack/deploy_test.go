package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of a compose file the checks read.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Ports       []string          `yaml:"ports"`
		Expose      []string          `yaml:"expose"`
		Environment map[string]string `yaml:"environment"`
		Deploy      struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
	} `yaml:"services"`
	Configs map[string]struct {
		Content string `yaml:"content"`
	} `yaml:"configs"`
}

// The compose file docs/deploy.md gives is one that works: only one
// service publishes a port, never a replicated one, and only on loopback;
// the proxy sends requests to the API service on the port it listens on,
// with WebSocket upgrades; every Worktrack variable it sets is one serve
// reads.
func TestDeployComposeExampleWorks(t *testing.T) {
	doc, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(services:.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) != 1 {
		t.Fatalf("want one compose file in docs/deploy.md, found %d", len(blocks))
	}
	var c composeFile
	if err := yaml.Unmarshal([]byte(blocks[0][1]), &c); err != nil {
		t.Fatalf("the compose file is not YAML: %v", err)
	}
	api, ok := c.Services["api"]
	if !ok || api.Image != "worktrack:dev" || api.Deploy.Replicas < 2 {
		t.Fatalf("want an api service of worktrack:dev with replicas: %+v", api)
	}
	publishers := 0
	for name, s := range c.Services {
		if len(s.Ports) == 0 {
			continue
		}
		publishers++
		if s.Deploy.Replicas > 1 {
			t.Errorf("%s publishes %v with %d replicas: they cannot all bind the host port", name, s.Ports, s.Deploy.Replicas)
		}
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes %s beyond loopback", name, p)
			}
		}
	}
	if publishers != 1 {
		t.Errorf("%d services publish ports, want the proxy alone", publishers)
	}
	conf := c.Configs["nginx"].Content
	if !strings.Contains(conf, "proxy_pass http://api:"+strings.Join(api.Expose, "")+";") {
		t.Errorf("the proxy does not reach the api service on %v:\n%s", api.Expose, conf)
	}
	for _, h := range []string{"Upgrade $$http_upgrade", "Connection $$connection_upgrade", "X-Forwarded-For"} {
		if !strings.Contains(conf, h) {
			t.Errorf("the proxy does not pass %s (GraphQL's WebSockets, the client address):\n%s", h, conf)
		}
	}
	if _, err := strconv.Atoi(strings.Join(api.Expose, "")); err != nil {
		t.Errorf("api exposes %v", api.Expose)
	}
	for name := range api.Environment {
		if !strings.Contains(configHelp, name) {
			t.Errorf("the compose file sets %s, which serve does not read", name)
		}
	}
}

// The README's operator commands are real: each `bin/worktrack …` line
// names a sub-command the binary has, with flags it takes.
func TestReadmeOperatorCommandsExist(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := regexp.MustCompile(`(?m)^bin/worktrack (.+)$`).FindAllStringSubmatch(string(readme), -1)
	if len(lines) < 5 {
		t.Fatalf("want the operator commands in the README, found %d", len(lines))
	}
	for _, l := range lines {
		var path, flags []string
		for _, w := range strings.Fields(l[1]) {
			switch {
			case strings.HasPrefix(w, "--"):
				flags = append(flags, w)
			case len(flags) == 0 && !strings.Contains(w, "_"):
				path = append(path, w)
			}
		}
		out, errOut, code := runCmd(t, t.TempDir(), nil, append(path, "--help")...)
		if code != 0 {
			t.Errorf("bin/worktrack %s: exit %d: %s", strings.Join(path, " "), code, errOut)
			continue
		}
		for _, f := range flags {
			if !strings.Contains(out, f) {
				t.Errorf("bin/worktrack %s has no flag %s:\n%s", strings.Join(path, " "), f, out)
			}
		}
	}
}
