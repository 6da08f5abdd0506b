package kubernetes_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/hload/hload/metrics"
)

// docSteps is the marker of the block of docs/distributed.md that this
// test runs.
const docSteps = "<!-- the steps that deploy/kubernetes/distributed_test.go runs -->"

// steps are the documented commands, parsed.
type steps struct {
	lines       []string // the block's lines
	dateCommand string   // the shell command that computes the barrier
	setEnv      string   // the variable kubectl set env writes the barrier into
	readyCount  int      // the N of kubectl wait --for=jsonpath='{.status.ready}'=N
	logsArgs    []string // kubectl logs' arguments
	mergeArgs   []string // hload's arguments after the pipe: merge - ...
}

// readSteps reads the documented steps and checks that each one is a step
// this test knows how to stand in for, so the doc cannot drift from it.
func readSteps(t *testing.T, job *batchv1.Job) steps {
	t.Helper()
	data, err := os.ReadFile("../../docs/distributed.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), docSteps+"\n```sh\n")
	if !ok {
		t.Fatalf("docs/distributed.md lacks %q followed by a sh block", docSteps)
	}
	block, _, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatal("docs/distributed.md: the steps block does not end")
	}
	var s steps
	seen := map[string]bool{}
	s.lines = strings.Split(strings.TrimSpace(block), "\n")
	for _, line := range s.lines {
		switch {
		case line == "kubectl apply -f deploy/kubernetes/configmap.yaml":
			seen["configmap"] = true
		case strings.HasPrefix(line, "START_AT=$(") && strings.HasSuffix(line, ")"):
			s.dateCommand = strings.TrimSuffix(strings.TrimPrefix(line, "START_AT=$("), ")")
		case strings.HasPrefix(line, "kubectl set env --local -o yaml -f deploy/kubernetes/job.yaml ") && strings.HasSuffix(line, ` | kubectl apply -f -`):
			m := regexp.MustCompile(`job\.yaml ([A-Z_]+)="\$START_AT" \|`).FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("docs/distributed.md: %q sets no variable to $START_AT", line)
			}
			s.setEnv = m[1]
		case strings.HasPrefix(line, "kubectl wait --for=jsonpath='{.status.ready}'="):
			m := regexp.MustCompile(`=(\d+) job/(\S+) `).FindStringSubmatch(line)
			if m == nil || m[2] != job.Name {
				t.Fatalf("docs/distributed.md: %q does not wait for job/%s", line, job.Name)
			}
			s.readyCount, _ = strconv.Atoi(m[1])
		case line == "kubectl wait --for=condition=Ready=false pod -l job-name="+job.Name+" --timeout=30m":
			seen["ended"] = true
		case strings.HasPrefix(line, "kubectl logs ") && strings.Contains(line, " | hload merge "):
			logs, merge, _ := strings.Cut(line, " | hload ")
			s.logsArgs = strings.Fields(strings.TrimPrefix(logs, "kubectl logs "))
			s.mergeArgs = strings.Fields(merge)
			if len(s.mergeArgs) < 2 || s.mergeArgs[0] != "merge" || s.mergeArgs[1] != "-" {
				t.Fatalf("docs/distributed.md: %q does not pipe into hload merge -", line)
			}
		default:
			t.Fatalf("docs/distributed.md: a step this test does not run: %q", line)
		}
	}
	if !seen["configmap"] || !seen["ended"] || s.dateCommand == "" || s.setEnv == "" || s.readyCount == 0 || s.logsArgs == nil {
		t.Fatalf("docs/distributed.md: the steps block lacks a step: %+v %v", s, seen)
	}
	return s
}

// TestJobOnControlPlane runs docs/distributed.md's steps as they stand,
// with kubectl, against a real API server and Job controller
// (scripts/k8s.sh): the ConfigMap, the barrier, the Job with the test's
// own variables added to the documented kubectl set env (as a user sets
// them, HLOAD_VAR_<name>), the two waits. The stand-in for a node runs the
// Pods the Job controller makes, as local processes of the hload under
// test, and its logs of them, as `kubectl logs -l job-name=hload
// --tail=-1` prints them, go into the documented hload merge. Each of the
// N completion indexes runs once, the Job completes, and the merged counts
// equal the test server's own and the plan of one process running the
// whole test.
func TestJobOnControlPlane(t *testing.T) {
	m := loadManifests(t)
	st := readSteps(t, m.job)
	c := m.job.Spec.Template.Spec.Containers[0]
	n := segmentCount(t, c)
	if st.readyCount != n {
		t.Errorf("the doc waits for %d ready pods, the Job runs %d", st.readyCount, n)
	}
	checkLogsArgs(t, st.logsArgs, m.job)
	checkJobComment(t, st.lines)

	cl := newCluster(t)
	srv := newShop(t)
	// The sample test's own variables, scaled down to a few seconds; the
	// target is the loopback server in place of the demo Service.
	vars := map[string]string{
		"base_url": srv.URL, "duration": "2s", "rate": "60", "orders_per_buyer": "3", "think_time": "50ms",
	}
	node := cl.node(t, nil)
	barrier := cl.launch(t, st, vars, 10, true)
	for _, prefix := range []string{"kubectl wait --for=jsonpath=", "kubectl wait --for=condition=Ready=false"} {
		line := strings.Replace(lineWith(t, st.lines, prefix), "--timeout=30m", "--timeout=2m", 1)
		if out, err := cl.sh(t, nil, line); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	job := cl.jobEnded(t, m.job.Name, time.Minute)
	t.Logf("job/%s: %s", job.Name, conditions(job))
	if condition(job, batchv1.JobComplete) == nil || job.Status.Succeeded != int32(n) || job.Status.CompletedIndexes != fmt.Sprintf("0-%d", n-1) {
		t.Errorf("want the Job complete, %d pods succeeded: %s", n, conditions(job))
	}
	for i, p := range indexes(t, nodeDone(t, node, n, time.Minute), n) {
		t.Logf("pod %s: index %d, exit %d, ran %v from the barrier", p.Name, i, p.ExitCode, p.Ended.Sub(barrier).Round(time.Millisecond))
		if p.ExitCode != 0 || p.Stopped {
			t.Errorf("pod %s (index %d): exit %d, stopped %v", p.Name, i, p.ExitCode, p.Stopped)
		}
	}
	logs, err := node.Logs(map[string]string{"job-name": m.job.Name})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(logs), "\n") {
		var seg metrics.Summary
		if strings.HasPrefix(line, `{"hload_version":`) && json.Unmarshal([]byte(line), &seg) == nil && seg.Started.Before(barrier) {
			t.Errorf("a pod started at %s, before the barrier %s", seg.Started.Format(time.RFC3339Nano), barrier.Format(time.RFC3339))
		}
	}

	merged, code, dir := cl.merged(t, st, node, m.job.Name, false)
	if code != 0 {
		t.Fatalf("hload %s: exit %d\n%s", strings.Join(st.mergeArgs, " "), code, merged)
	}
	sum := readSummary(t, filepath.Join(dir, exportArg(t, st.mergeArgs)))

	// The merged counts are the server's, request by request.
	served := srv.counts()
	for _, r := range []struct{ scenario, request, path string }{
		{"buyers", "order", "POST /orders"}, {"browsers", "list", "GET /products"}, {"browsers", "detail", "GET /products/{id}"},
	} {
		sc := sum.Scenarios[r.scenario]
		if sc == nil || sc.Requests[r.request] == nil {
			t.Fatalf("the merged summary lacks %s/%s:\n%s", r.scenario, r.request, merged)
		}
		got := sc.Requests[r.request]
		if got.Count != served[r.path] || got.Errors != 0 {
			t.Errorf("%s/%s: merged %d calls (%d errors), the server answered %d", r.scenario, r.request, got.Count, got.Errors, served[r.path])
		}
	}
	// And the iterations are those of one process's plan.
	file := filepath.Join(t.TempDir(), "test.hcl")
	if err := os.WriteFile(file, []byte(m.configMap.Data["test.hcl"]), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := planIterations(t, file, vars, -1, n)
	var segmentPlans [2]int64
	for i := range n {
		p := planIterations(t, file, vars, i, n)
		segmentPlans[0] += p["buyers"]
		segmentPlans[1] += p["browsers"]
	}
	for i, name := range []string{"buyers", "browsers"} {
		if got := sum.Scenarios[name].Iterations; got != plan[name] || segmentPlans[i] != plan[name] {
			t.Errorf("%s: merged %d iterations, the segments' plans add up to %d, one process plans %d", name, got, segmentPlans[i], plan[name])
		}
	}
	if served["other"] != 0 {
		t.Errorf("the server got %d calls the test does not make", served["other"])
	}
	t.Logf("%d pods: buyers %d orders, browsers %d list + %d detail; plan %v; merged:\n%s",
		n, served["POST /orders"], served["GET /products"], served["GET /products/{id}"], plan, merged)
}

// checkLogsArgs checks the documented kubectl logs arguments: the Job's
// pods by their job-name label, and every line of each (--tail=-1: with a
// selector kubectl prints 10 lines of each pod by default).
func checkLogsArgs(t *testing.T, args []string, job *batchv1.Job) {
	t.Helper()
	selector, tail := "", ""
	for i, a := range args {
		switch {
		case a == "-l" && i+1 < len(args):
			selector = args[i+1]
		case strings.HasPrefix(a, "--tail="):
			tail = strings.TrimPrefix(a, "--tail=")
		}
	}
	if selector != "job-name="+job.Name {
		t.Errorf("kubectl logs %q: want -l job-name=%s, the label the Job controller puts on its pods", args, job.Name)
	}
	if tail != "-1" {
		t.Errorf("kubectl logs %q: want --tail=-1, or kubectl prints only each pod's last 10 lines", args)
	}
}

// checkJobComment checks that the commands job.yaml's comment quotes
// are the documented steps (or their start).
func checkJobComment(t *testing.T, lines []string) {
	t.Helper()
	data, err := os.ReadFile("job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^#   (\S.*)$`).FindAllStringSubmatch(string(data), -1) {
		quoted, found := m[1], false
		for _, l := range lines {
			found = found || strings.HasPrefix(l, quoted) || quoted == "..."
		}
		if !found {
			t.Errorf("job.yaml quotes %q, which is not a step of docs/distributed.md", quoted)
		}
	}
}

// entrypoint is the Dockerfile's ENTRYPOINT, the program the args go to.
func entrypoint(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ENTRYPOINT \["([^"]+)"\]$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("Dockerfile has no ENTRYPOINT [\"...\"]")
	}
	return string(m[1])
}

func exportArg(t *testing.T, args []string) string {
	t.Helper()
	for i, a := range args {
		if a == "--summary-export" && i+1 < len(args) {
			return args[i+1]
		}
	}
	t.Fatalf("hload merge %q writes no --summary-export", args)
	return ""
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func readSummary(t *testing.T, path string) metrics.Summary {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum metrics.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sum
}

// planIterations runs hload plan, for the whole test (index -1) or for
// the segment of n that JOB_COMPLETION_INDEX=index gets, and returns each
// scenario's planned iterations.
func planIterations(t *testing.T, file string, vars map[string]string, index, n int) map[string]int64 {
	t.Helper()
	args := []string{"plan", file}
	for k, v := range vars {
		args = append(args, "--var", k+"="+v)
	}
	cmd := exec.Command(hloadBin, args...)
	cmd.Env = os.Environ()
	if index >= 0 {
		cmd.Env = append(cmd.Env, "JOB_COMPLETION_INDEX="+strconv.Itoa(index), "HLOAD_SEGMENT_COUNT="+strconv.Itoa(n))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hload %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	plans := map[string]int64{}
	scenario := ""
	for _, line := range strings.Split(string(out), "\n") {
		if m := regexp.MustCompile(`^scenario "([^"]+)"`).FindStringSubmatch(line); m != nil {
			scenario = m[1]
		}
		if m := regexp.MustCompile(`^\s+iterations\s+(\d+) (exactly|planned)`).FindStringSubmatch(line); m != nil {
			plans[scenario], _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	return plans
}

// shop is a loopback server that answers the sample test's calls and
// counts them itself.
type shop struct {
	*httptest.Server
	mu sync.Mutex
	n  map[string]int64
}

func newShop(t *testing.T) *shop { return newShopRefusing(t, nil) }

// newShopRefusing is a shop that answers 500 to the orders of the users
// (the user query parameter) refuse says, and counts them as "refused"
// too.
func newShopRefusing(t *testing.T, refuse func(user int) bool) *shop {
	s := &shop{n: map[string]int64{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, code := "other", http.StatusNotFound
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/orders":
			key, code = "POST /orders", http.StatusCreated
			if user, err := strconv.Atoi(r.URL.Query().Get("user")); err == nil && refuse != nil && refuse(user) {
				code = http.StatusInternalServerError
				s.mu.Lock()
				s.n["refused"]++
				s.mu.Unlock()
			}
		case r.Method == http.MethodGet && r.URL.Path == "/products":
			key, code = "GET /products", http.StatusOK
		case r.Method == http.MethodGet && regexp.MustCompile(`^/products/\d+$`).MatchString(r.URL.Path):
			key, code = "GET /products/{id}", http.StatusOK
		}
		s.mu.Lock()
		s.n[key]++
		s.mu.Unlock()
		w.WriteHeader(code)
		fmt.Fprint(w, `{"ok":true}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *shop) counts() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for k, v := range s.n {
		out[k] = v
	}
	return out
}

// withMargin is a documented shell command with its start barrier's
// margin ('+60 seconds' in the doc) set to seconds, for a test that need
// not wait a minute. A command without such a margin fails t: the doc
// changed under the test.
func withMargin(t *testing.T, command string, seconds int) string {
	t.Helper()
	margin := regexp.MustCompile(`'\+\d+ seconds'`)
	if !margin.MatchString(command) {
		t.Fatalf("the documented barrier has no '+N seconds' margin:\n%s", command)
	}
	return margin.ReplaceAllString(command, fmt.Sprintf("'+%d seconds'", seconds))
}

// docLoop is the marker of the shell loop of docs/distributed.md.
const docLoop = "<!-- the shell loop that deploy/kubernetes/distributed_test.go runs -->"

// TestShellLoopFromDoc runs the documented shell loop as it stands, with
// bash, the hload under test first on PATH and the ConfigMap's test as
// test.hcl, its barrier margin shortened: four segments on this machine
// merge to the server's counts and to one process's plan.
func TestShellLoopFromDoc(t *testing.T) {
	data, err := os.ReadFile("../../docs/distributed.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), docLoop+"\n```sh\n")
	if !ok {
		t.Fatalf("docs/distributed.md lacks %q followed by a sh block", docLoop)
	}
	script, _, _ := strings.Cut(after, "```")
	script = withMargin(t, script, 6)

	m := loadManifests(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "test.hcl"), []byte(m.configMap.Data["test.hcl"]), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := newShop(t)
	vars := map[string]string{
		"base_url": srv.URL, "duration": "2s", "rate": "40", "orders_per_buyer": "2", "think_time": "50ms",
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(hloadBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	for k, v := range vars {
		cmd.Env = append(cmd.Env, "HLOAD_VAR_"+k+"="+v)
	}
	timer := time.AfterFunc(time.Minute, func() {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
	})
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the documented loop: %v\n%s", err, out)
	}
	sum := readSummary(t, filepath.Join(dir, "result.json"))
	served := srv.counts()
	for _, r := range []struct{ scenario, request, path string }{
		{"buyers", "order", "POST /orders"}, {"browsers", "list", "GET /products"}, {"browsers", "detail", "GET /products/{id}"},
	} {
		sc := sum.Scenarios[r.scenario]
		if sc == nil || sc.Requests[r.request] == nil {
			t.Fatalf("the merged summary lacks %s/%s:\n%s", r.scenario, r.request, out)
		}
		if got := sc.Requests[r.request]; got.Count != served[r.path] {
			t.Errorf("%s/%s: merged %d, the server answered %d", r.scenario, r.request, got.Count, served[r.path])
		}
	}
	plan := planIterations(t, filepath.Join(dir, "test.hcl"), vars, -1, 0)
	for _, name := range []string{"buyers", "browsers"} {
		if got := sum.Scenarios[name].Iterations; got != plan[name] {
			t.Errorf("%s: merged %d iterations, one process plans %d", name, got, plan[name])
		}
	}
	t.Logf("server %v; plan %v", served, plan)
}
