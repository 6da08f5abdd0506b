package kubernetes_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hload/hload/internal/k8stest"
	"github.com/hload/hload/internal/servicetest"
)

// cluster is one test's namespace on the control plane that
// scripts/k8s.sh started: a real API server and Job controller, and no
// node. The documented kubectl commands run as they are, with a
// kubeconfig whose context's namespace is the test's own.
type cluster struct {
	client     kubernetes.Interface
	ns         string
	kubeconfig string
	kubectl    string
}

// newCluster makes a namespace of the test's own on the control plane of
// $HLOAD_K8S_DIR (never on the cluster a user's KUBECONFIG names: load
// goes to loopback only), and waits for its default ServiceAccount, which
// Pods need.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	dir := servicetest.Kubernetes.Env(t, "HLOAD_K8S_DIR")
	kubectl := os.Getenv("HLOAD_KUBECTL")
	if kubectl == "" {
		servicetest.Kubernetes.Missing(t, "HLOAD_KUBECTL is not set")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if u, err := url.Parse(cfg.Host); err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("the control plane at %q is not on loopback", cfg.Host)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	name := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	ns := fmt.Sprintf("%.40s-%s", name, hex.EncodeToString(suffix))
	ctx := t.Context()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the default ServiceAccount of "+ns, func() (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	cl := &cluster{client: client, ns: ns, kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), kubectl: kubectl}
	data, err := os.ReadFile(filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cl.kubeconfig, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cl.sh(t, nil, "kubectl config set-context --current --namespace="+ns); err != nil {
		t.Fatalf("kubectl config set-context: %v\n%s", err, out)
	}
	t.Logf("namespace %s", ns)
	return cl
}

// sh runs a documented command line with bash in the repository's root,
// kubectl and the hload under test first on PATH, and the test's
// kubeconfig; stdin may be nil. It returns stdout and stderr together.
func (cl *cluster) sh(t *testing.T, stdin io.Reader, line string, env ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", line)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cl.kubeconfig,
		"PATH="+filepath.Dir(cl.kubectl)+string(os.PathListSeparator)+filepath.Dir(hloadBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// node starts the stand-in for a node on the test's namespace: each Pod's
// container runs as a local process of the hload under test, the image's
// entrypoint as the Dockerfile gives it.
func (cl *cluster) node(t *testing.T, delay func(*corev1.Pod) time.Duration) *k8stest.Node {
	t.Helper()
	m := loadManifests(t)
	c := m.job.Spec.Template.Spec.Containers[0]
	if ep := entrypoint(t); ep != "/usr/local/bin/hload" {
		t.Fatalf("the image's entrypoint is %q, not hload", ep)
	}
	home := t.TempDir()
	n, err := k8stest.Start(cl.client, k8stest.Options{
		Namespace:   cl.ns,
		NodeName:    "standin-" + cl.ns,
		Dir:         t.TempDir(),
		Entrypoints: map[string][]string{c.Image: {hloadBin}},
		Env:         []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home},
		Delay:       delay,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

// launch runs the documented steps up to the Job's creation: the sample
// ConfigMap (unless the test applied its own), the start barrier with a
// margin of seconds in place of the documented minute, and the Job, with
// the test's variables added to the documented kubectl set env. It
// returns the barrier.
func (cl *cluster) launch(t *testing.T, st steps, vars map[string]string, margin int, sampleConfigMap bool) time.Time {
	t.Helper()
	var startAt string
	for _, line := range st.lines {
		switch {
		case strings.HasPrefix(line, "kubectl apply -f deploy/kubernetes/configmap.yaml"):
			if !sampleConfigMap {
				continue
			}
		case strings.HasPrefix(line, "START_AT=$("):
			out, err := cl.sh(t, nil, withMargin(t, st.dateCommand, margin))
			if err != nil {
				t.Fatalf("%s: %v\n%s", st.dateCommand, err, out)
			}
			startAt = strings.TrimSpace(out)
			continue
		case strings.HasPrefix(line, "kubectl set env "):
			set := `="$START_AT"`
			for k, v := range vars {
				set += " HLOAD_VAR_" + k + "=" + v
			}
			line = strings.Replace(line, `="$START_AT"`, set, 1)
		default:
			// The rest waits for the run and merges it: each test does
			// that its own way.
			continue
		}
		if out, err := cl.sh(t, nil, line, "START_AT="+startAt); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	barrier, err := time.Parse(time.RFC3339, startAt)
	if err != nil {
		t.Fatalf("the doc's barrier command printed %q: %v", startAt, err)
	}
	return barrier
}

// merged pipes the Pods' logs, as the documented kubectl logs prints
// them after the run (or, streamed, as kubectl logs -f received them
// during it), into the documented hload merge, in a folder of its own. It
// returns the merge's output, its exit code and its folder.
func (cl *cluster) merged(t *testing.T, st steps, node *k8stest.Node, job string, streamed bool) (string, int, string) {
	t.Helper()
	read := node.Logs
	if streamed {
		read = node.Streamed
	}
	logs, err := read(map[string]string{"job-name": job})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	line := "cd " + dir + " && hload " + strings.Join(st.mergeArgs, " ")
	out, err := cl.sh(t, bytes.NewReader(logs), line)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return out, code, dir
}

// jobEnded waits for the Job's Complete or Failed condition and returns
// the Job as the API server reports it then.
func (cl *cluster) jobEnded(t *testing.T, name string, timeout time.Duration) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	waitFor(t, timeout, "job/"+name+" to end", func() (bool, error) {
		var err error
		job, err = cl.client.BatchV1().Jobs(cl.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return condition(job, batchv1.JobComplete) != nil || condition(job, batchv1.JobFailed) != nil, nil
	})
	return job
}

// condition returns the Job's condition of type ct when it is True.
func condition(job *batchv1.Job, ct batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if c.Type == ct && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// conditions prints the Job's conditions and counts as the API server
// reports them.
func conditions(job *batchv1.Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "active %d, ready %d, succeeded %d, failed %d, completedIndexes %q, failedIndexes %q",
		job.Status.Active, deref(job.Status.Ready), job.Status.Succeeded, job.Status.Failed, job.Status.CompletedIndexes, deref(job.Status.FailedIndexes))
	for _, c := range job.Status.Conditions {
		fmt.Fprintf(&b, "\n  %s=%s reason %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// nodeDone waits until the stand-in has seen want Pods and every one of
// them has ended (or never started), and returns them.
func nodeDone(t *testing.T, node *k8stest.Node, want int, timeout time.Duration) []k8stest.Pod {
	t.Helper()
	var pods []k8stest.Pod
	waitFor(t, timeout, fmt.Sprintf("the stand-in to run %d pods to their end", want), func() (bool, error) {
		pods = node.Pods()
		if len(pods) < want {
			return false, nil
		}
		for _, p := range pods {
			if p.Ended.IsZero() && !p.Started.IsZero() {
				return false, nil
			}
		}
		return true, nil
	})
	// A Pod created after the others ended would be a retry: give the
	// Job controller a moment to show one.
	time.Sleep(2 * time.Second)
	return node.Pods()
}

// indexes checks that the Pods are one per completion index 0..n-1, each
// run once, and returns them by index.
func indexes(t *testing.T, pods []k8stest.Pod, n int) map[int]k8stest.Pod {
	t.Helper()
	byIndex := map[int]k8stest.Pod{}
	for _, p := range pods {
		i, err := strconv.Atoi(p.Index)
		if err != nil || i < 0 || i >= n {
			t.Errorf("pod %s has completion index %q", p.Name, p.Index)
			continue
		}
		if q, twice := byIndex[i]; twice {
			t.Errorf("index %d ran twice: pods %s and %s", i, q.Name, p.Name)
		}
		byIndex[i] = p
		if p.Err != nil {
			t.Errorf("pod %s: the stand-in: %v", p.Name, p.Err)
		}
	}
	if len(byIndex) != n {
		t.Errorf("pods for %d indexes, want %d: %+v", len(byIndex), n, pods)
	}
	return byIndex
}

func waitFor(t *testing.T, timeout time.Duration, what string, done func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := done()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s (last error: %v)", timeout, what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestManifestsAdmitted: the real API server admits every manifest of
// deploy/kubernetes, first with --dry-run=server and then for real, and
// the real Job controller makes the Job's N Pods, one per completion
// index 0..N-1, each given JOB_COMPLETION_INDEX from its index by the
// downward API. No node runs them here.
func TestManifestsAdmitted(t *testing.T) {
	cl := newCluster(t)
	for _, line := range []string{"kubectl apply --dry-run=server -f deploy/kubernetes/", "kubectl apply -f deploy/kubernetes/"} {
		out, err := cl.sh(t, nil, line)
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		t.Logf("%s:\n%s", line, out)
	}
	m := loadManifests(t)
	out, err := cl.sh(t, nil, "kubectl get -f deploy/kubernetes/ -o name")
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, out)
	}
	for _, want := range []string{"configmap/" + m.configMap.Name, "job.batch/" + m.job.Name, "deployment.apps/" + m.deployment.Name, "service/" + m.service.Name} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("the API server does not hold %s:\n%s", want, out)
		}
	}
	n := int(*m.job.Spec.Completions)
	var pods *corev1.PodList
	waitFor(t, time.Minute, fmt.Sprintf("the Job controller to make %d pods", n), func() (bool, error) {
		var err error
		pods, err = cl.client.CoreV1().Pods(cl.ns).List(t.Context(), metav1.ListOptions{LabelSelector: "job-name=" + m.job.Name})
		return err == nil && len(pods.Items) == n, err
	})
	seen := map[string]bool{}
	for _, p := range pods.Items {
		index := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		if label := p.Labels[batchv1.JobCompletionIndexAnnotation]; label != index {
			t.Errorf("pod %s: index %q in its annotation, %q in its label", p.Name, index, label)
		}
		seen[index] = true
		var ref string
		for _, e := range p.Spec.Containers[0].Env {
			if e.Name == "JOB_COMPLETION_INDEX" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				ref = e.ValueFrom.FieldRef.FieldPath
			}
		}
		// The controller sets the index as an annotation and, since
		// Kubernetes 1.28, a label too; the env reads one of them.
		if ref != "metadata.annotations['"+batchv1.JobCompletionIndexAnnotation+"']" && ref != "metadata.labels['"+batchv1.JobCompletionIndexAnnotation+"']" {
			t.Errorf("pod %s (index %s): JOB_COMPLETION_INDEX comes from %q", p.Name, index, ref)
		}
		t.Logf("pod %s: index %s, JOB_COMPLETION_INDEX from %s, phase %s", p.Name, index, ref, p.Status.Phase)
	}
	for i := range n {
		if !seen[strconv.Itoa(i)] {
			t.Errorf("no pod has completion index %d: %v", i, seen)
		}
	}
}

// TestBrokenManifestRefused: the API server refuses a Job whose Pods may
// restart (restartPolicy OnFailure) beside a podFailurePolicy, with its own
// message, and creates nothing.
func TestBrokenManifestRefused(t *testing.T) {
	cl := newCluster(t)
	line := "sed 's/restartPolicy: Never/restartPolicy: OnFailure/' deploy/kubernetes/job.yaml | kubectl apply --dry-run=server -f -"
	out, err := cl.sh(t, nil, line)
	t.Logf("%s:\n%s", line, out)
	if err == nil {
		t.Fatalf("the API server admitted the broken Job")
	}
	if !strings.Contains(out, "restartPolicy") || !strings.Contains(out, "podFailurePolicy") || !strings.Contains(out, `"OnFailure"`) {
		t.Errorf("the refusal does not name restartPolicy, its value and podFailurePolicy:\n%s", out)
	}
	if out, err := cl.sh(t, nil, "kubectl get jobs -o name"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("after the refusal, jobs: %q (%v)", out, err)
	}
}

// TestPodFailures drives what docs/distributed.md promises when a pod
// fails through the real Job controller and the Job of job.yaml, each case
// in a namespace of its own, the Pods run by the stand-in.
func TestPodFailures(t *testing.T) {
	m := loadManifests(t)
	st := readSteps(t, m.job)
	n := segmentCount(t, m.job.Spec.Template.Spec.Containers[0])
	// Long enough that the Job fails well before the pods would end.
	const duration = 30 * time.Second
	vars := func(srv *shop) map[string]string {
		return map[string]string{"base_url": srv.URL, "duration": duration.String(), "rate": "20", "orders_per_buyer": "1000", "think_time": "100ms"}
	}

	// Exit 2: a pod that reaches the barrier too late refuses to start.
	// The Job fails at once and the other pods are stopped. The Job
	// controller deletes the pods it stopped, and their logs with them:
	// kubectl logs after the run has only the failed pod's, with no result,
	// and the merge refuses it. The logs streamed during the run (kubectl
	// logs -f) hold the stopped pods' results: the merge refuses them,
	// naming the missing segment.
	t.Run("exit 2 fails the Job", func(t *testing.T) {
		cl := newCluster(t)
		srv := newShop(t)
		// The barrier is known once the Job is created, which may be after
		// its pods are.
		known := make(chan time.Time, 1)
		node := cl.node(t, func(p *corev1.Pod) time.Duration {
			if p.Annotations[batchv1.JobCompletionIndexAnnotation] != "1" {
				return 0
			}
			b := <-known
			known <- b
			// Past the barrier and its 5 s slack, as a slow image pull would.
			return time.Until(b) + 8*time.Second
		})
		barrier := cl.launch(t, st, vars(srv), 8, true)
		known <- barrier
		job := cl.jobEnded(t, m.job.Name, 90*time.Second)
		t.Logf("job/%s: %s", job.Name, conditions(job))
		c := condition(job, batchv1.JobFailed)
		if c == nil || c.Reason != batchv1.JobReasonPodFailurePolicy || !strings.Contains(c.Message, "exit code 2") {
			t.Errorf("the Job did not fail through its podFailurePolicy on exit code 2: %s", conditions(job))
		}
		byIndex := indexes(t, nodeDone(t, node, n, time.Minute), n)
		refused := byIndex[1].Ended
		for i, p := range byIndex {
			switch {
			case i == 1 && (p.ExitCode != 2 || p.Stopped):
				t.Errorf("pod %s (index 1): exit %d, stopped %v; want exit 2 of its own", p.Name, p.ExitCode, p.Stopped)
			case i != 1 && (!p.Stopped || !p.Ended.Before(barrier.Add(duration))):
				t.Errorf("pod %s (index %d): stopped %v, ended %v after the barrier; want stopped before its %v run ended",
					p.Name, i, p.Stopped, p.Ended.Sub(barrier), duration)
			}
			t.Logf("pod %s (index %d): exit %d, stopped %v, ended %v after the barrier, %v after index 1 refused",
				p.Name, i, p.ExitCode, p.Stopped, p.Ended.Sub(barrier).Round(time.Millisecond), p.Ended.Sub(refused).Round(time.Millisecond))
		}
		left, err := node.Logs(map[string]string{"job-name": m.job.Name})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kubectl logs after the run:\n%s", left)
		if !strings.Contains(string(left), "reached the start barrier") {
			t.Errorf("the log left after the run does not say why index 1 refused")
		}
		out, code, _ := cl.merged(t, st, node, m.job.Name, false)
		t.Logf("after the run: hload %s: exit %d\n%s", strings.Join(st.mergeArgs, " "), code, out)
		if code != 2 || !strings.Contains(out, "no result found") {
			t.Errorf("the merge of the logs left after the run: exit %d; want 2, no result found", code)
		}
		out, code, _ = cl.merged(t, st, node, m.job.Name, true)
		t.Logf("streamed: hload %s: exit %d\n%s", strings.Join(st.mergeArgs, " "), code, out)
		if code != 2 || !strings.Contains(out, "2/4 is missing") {
			t.Errorf("the merge of the streamed logs: exit %d; want 2, naming segment 2/4 as missing", code)
		}
	})

	// A disruption: the Eviction API puts DisruptionTarget on the pod and
	// deletes it; the Job fails at once and the other pods are stopped and
	// deleted: after the run no log is left, and the merge refuses. The
	// evicted pod, stopped by SIGTERM, printed its result as an
	// interrupted run, and so did the others: the merge of the streamed
	// logs says so, naming it, and exits 130 as an interrupted hload apply
	// would.
	t.Run("a disruption fails the Job", func(t *testing.T) {
		cl := newCluster(t)
		srv := newShop(t)
		node := cl.node(t, nil)
		barrier := cl.launch(t, st, vars(srv), 8, true)
		if out, err := cl.sh(t, nil, lineWith(t, st.lines, "kubectl wait --for=jsonpath=")); err != nil {
			t.Fatalf("the documented wait for ready pods: %v\n%s", err, out)
		}
		time.Sleep(time.Until(barrier.Add(2 * time.Second)))
		var victim *corev1.Pod
		pods, err := cl.client.CoreV1().Pods(cl.ns).List(t.Context(), metav1.ListOptions{LabelSelector: "job-name=" + m.job.Name})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range pods.Items {
			if p.Annotations[batchv1.JobCompletionIndexAnnotation] == "3" {
				victim = &pods.Items[i]
			}
		}
		if victim == nil {
			t.Fatalf("no pod with index 3 among %d", len(pods.Items))
		}
		evicted := time.Now()
		if err := cl.client.CoreV1().Pods(cl.ns).EvictV1(t.Context(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: cl.ns}}); err != nil {
			t.Fatalf("evicting %s: %v", victim.Name, err)
		}
		job := cl.jobEnded(t, m.job.Name, time.Minute)
		t.Logf("job/%s: %s", job.Name, conditions(job))
		c := condition(job, batchv1.JobFailed)
		if c == nil || c.Reason != batchv1.JobReasonPodFailurePolicy || !strings.Contains(c.Message, "DisruptionTarget") {
			t.Errorf("the Job did not fail through its podFailurePolicy on DisruptionTarget: %s", conditions(job))
		}
		byIndex := indexes(t, nodeDone(t, node, n, time.Minute), n)
		for i, p := range byIndex {
			if !p.Stopped || !p.Ended.Before(barrier.Add(duration)) {
				t.Errorf("pod %s (index %d): stopped %v, ended %v after the barrier; want stopped before its %v run ended",
					p.Name, i, p.Stopped, p.Ended.Sub(barrier), duration)
			}
			t.Logf("pod %s (index %d): exit %d, stopped %v, ended %v after the eviction",
				p.Name, i, p.ExitCode, p.Stopped, p.Ended.Sub(evicted).Round(time.Millisecond))
		}
		out, code, _ := cl.merged(t, st, node, m.job.Name, false)
		t.Logf("after the run: hload %s: exit %d\n%s", strings.Join(st.mergeArgs, " "), code, out)
		if code != 2 || !strings.Contains(out, "no result found") {
			t.Errorf("the merge of the logs left after the run: exit %d; want 2, no result found", code)
		}
		out, code, _ = cl.merged(t, st, node, m.job.Name, true)
		t.Logf("streamed: hload %s: exit %d\n%s", strings.Join(st.mergeArgs, " "), code, out)
		if code != 130 || !strings.Contains(out, "segment 4/4") || !strings.Contains(out, "interrupted") {
			t.Errorf("the merge of the streamed logs: exit %d; want 130, saying segment 4/4 was interrupted", code)
		}
	})

	// Exit 99: one segment's thresholds fail. Only its index fails, the
	// others run on, no index runs twice, and the merge of the four logs
	// is whole: its verdict is the run's (here the error rate holds on the
	// whole though it broke on one segment), and its counts the server's.
	t.Run("exit 99 fails only its index", func(t *testing.T) {
		cl := newCluster(t)
		// Users 20-29, the rows of segment 3/4 of 40, are refused.
		srv := newShopRefusing(t, func(user int) bool { return user >= 20 && user < 30 })
		dir := t.TempDir()
		var users strings.Builder
		users.WriteString("user\n")
		for i := range 40 {
			fmt.Fprintf(&users, "%d\n", i)
		}
		writeTestFile(t, filepath.Join(dir, "users.csv"), users.String())
		writeTestFile(t, filepath.Join(dir, "my-test.hcl"), failingSegmentTest)
		line := documentedConfigMapLine(t)
		line = strings.Replace(line, "--from-file=test.hcl=my-test.hcl", "--from-file=test.hcl="+filepath.Join(dir, "my-test.hcl")+" --from-file=users.csv="+filepath.Join(dir, "users.csv"), 1)
		if out, err := cl.sh(t, nil, line); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		node := cl.node(t, nil)
		cl.launch(t, st, map[string]string{"base_url": srv.URL}, 8, false)
		job := cl.jobEnded(t, m.job.Name, 2*time.Minute)
		t.Logf("job/%s: %s", job.Name, conditions(job))
		c := condition(job, batchv1.JobFailed)
		if c == nil || c.Reason != batchv1.JobReasonFailedIndexes || deref(job.Status.FailedIndexes) != "2" ||
			job.Status.CompletedIndexes != "0,1,3" || job.Status.Failed != 1 || job.Status.Succeeded != 3 {
			t.Errorf("want the Job failed on index 2 alone, the others complete: %s", conditions(job))
		}
		byIndex := indexes(t, nodeDone(t, node, n, time.Minute), n)
		for i, p := range byIndex {
			want := 0
			if i == 2 {
				want = 99
			}
			if p.ExitCode != want || p.Stopped {
				t.Errorf("pod %s (index %d): exit %d, stopped %v; want exit %d of its own", p.Name, i, p.ExitCode, p.Stopped, want)
			}
		}
		out, code, mergeDir := cl.merged(t, st, node, m.job.Name, false)
		t.Logf("hload %s: exit %d\n%s", strings.Join(st.mergeArgs, " "), code, out)
		if code != 0 {
			t.Fatalf("the merge: exit %d; want 0, the error rate holding on the whole run", code)
		}
		sum := readSummary(t, filepath.Join(mergeDir, exportArg(t, st.mergeArgs)))
		served := srv.counts()
		got := sum.Scenarios["orders"].Requests["order"]
		if got == nil || got.Count != served["POST /orders"] || got.Errors != served["refused"] || got.Count != 40 || got.Errors != 10 {
			t.Errorf("merged %+v; the server answered %d orders, refused %d; want 40 and 10", got, served["POST /orders"], served["refused"])
		}
	})
}

// failingSegmentTest sends one order per user of users.csv, a unique
// feeder whose 40 rows the 4 segments split 10 each; an error rate under
// 30 % passes.
const failingSegmentTest = `
variable "base_url" {}

data "csv" "users" {
  path = "users.csv"
  mode = "unique"
}

target "shop" {
  base_url = var.base_url
}

scenario "orders" {
  executor   = "iterations"
  vus        = 4
  iterations = 10
  request "order" {
    method = "POST"
    path   = "/orders?user=${data.users.user}"
    check {
      status = [201]
    }
  }
}

threshold {
  metric    = "errors"
  condition = "rate < 30%"
}
`

// documentedConfigMapLine is docs/distributed.md's command that puts a
// user's own test file in the ConfigMap.
func documentedConfigMapLine(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../docs/distributed.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^kubectl create configmap hload-test --from-file=test\.hcl=my-test\.hcl .*$`).FindString(string(data))
	if line == "" {
		t.Fatal("docs/distributed.md lacks the kubectl create configmap step")
	}
	return line
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lineWith is the first of the documented lines that starts with prefix.
func lineWith(t *testing.T, lines []string, prefix string) string {
	t.Helper()
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("docs/distributed.md has no step %q...", prefix)
	return ""
}
