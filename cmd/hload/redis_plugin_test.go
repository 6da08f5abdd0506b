package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/internal/servicetest"
	"github.com/hload/hload/plugins/host"
)

const redisExample = "examples/plugins/redis/example.hcl"

// redisAddr returns the redis-server scripts/redis.sh started for this
// run; unset, the test fails or skips by servicetest's rule.
func redisAddr(t *testing.T) string {
	t.Helper()
	return servicetest.Redis.Env(t, "HLOAD_REDIS_ADDR")
}

// commandStats asks the server for INFO commandstats and returns the calls
// of each command, by Redis's own counters, which hload does not write.
func commandStats(t *testing.T, addr string) map[string]int64 {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("redis-server at %s: %v", addr, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		t.Fatalf("INFO commandstats: reply %q, %v", head, err)
	}
	size, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil {
		t.Fatalf("INFO commandstats: reply %q", head)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(err)
	}
	calls := map[string]int64{}
	for _, line := range strings.Split(string(body), "\r\n") {
		// cmdstat_get:calls=2741,usec=2841,...
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok || name == line {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats line %q: %v", line, err)
		}
		calls[name] = v
	}
	return calls
}

// buildRedisPlugin builds the Redis example into root/plugins, where the
// example's plugin block finds it.
func buildRedisPlugin(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(root, "plugins", "hload-plugin-redis")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/plugins/redis").CombinedOutput(); err != nil {
		t.Fatalf("building the redis plugin: %v\n%s", err, out)
	}
	t.Cleanup(func() { killLeftovers(t, bin) })
	return bin
}

// TestRedisPluginExample runs the Redis example, as the guide does, against
// a real redis-server, and checks hload's count of each request against
// the calls of its command in Redis's INFO commandstats, read before and
// after the run.
func TestRedisPluginExample(t *testing.T) {
	addr := redisAddr(t)
	t.Setenv(host.PathEnv, "") // only ./plugins/ is searched, as in the guide
	src, err := os.ReadFile(filepath.Join("../..", redisExample))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(redisExample)), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, redisExample, string(src))
	bin := buildRedisPlugin(t, root)

	if r := hload(t, root, "validate", redisExample); r.code != exitOK {
		t.Fatalf("validate: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	before := commandStats(t, addr)
	cmd, stdout, stderr := startHload(t, root, "apply", "--quiet", "--summary-export", "summary.json", redisExample,
		"--var", "address="+addr, "--var", "duration=2s")
	r := wait(t, cmd, stdout, stderr)
	noLeftovers(t, bin)
	if r.code != exitOK {
		t.Fatalf("apply: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	after := commandStats(t, addr)
	s := readSummary(t, filepath.Join(root, "summary.json"))
	sc := s.Scenarios["cache"]
	if sc == nil {
		t.Fatalf("the summary lacks scenario cache: %+v", s.Scenarios)
	}
	var figures []string
	for _, name := range []string{"set", "get", "incr"} {
		req := sc.Requests[name]
		if req == nil {
			t.Fatalf("the summary lacks request %s: %+v", name, sc.Requests)
		}
		served := after[name] - before[name]
		if req.Count == 0 || req.Count != served {
			t.Errorf("request %s: hload counted %d, redis-server's INFO commandstats counted %d calls of %s in the run",
				name, req.Count, served, strings.ToUpper(name))
		}
		if req.Errors != 0 || len(req.ErrorsByKind) != 0 {
			t.Errorf("request %s: %d errors %v, want none", name, req.Errors, req.ErrorsByKind)
		}
		figures = append(figures, fmt.Sprintf("%s %d (redis %d)", name, req.Count, served))
	}
	if get := sc.Requests["get"]; get.Checks.Passed != get.Count || get.Checks.Failed != 0 {
		t.Errorf("get checks %+v: each GET follows its VU's SET, so each should read the value back", get.Checks)
	}
	t.Logf("example.hcl for 2 s with 4 VUs, %d iterations: %s", sc.Iterations, strings.Join(figures, ", "))
}
