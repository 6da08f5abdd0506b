package kubernetes_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/internal/servicetest"
)

// TestK8sScriptStartStop: scripts/k8s.sh start brings up a second control
// plane of its own beside the one the test script started (other ports,
// another folder), ready to take Pods, and stop ends each program it
// launched and removes its folder, leaving nothing behind. Its binaries
// are the cached ones the test script's start built.
func TestK8sScriptStartStop(t *testing.T) {
	other := servicetest.Kubernetes.Env(t, "HLOAD_K8S_DIR")
	began := time.Now()
	start := exec.Command("../../scripts/k8s.sh", "start")
	var stderr bytes.Buffer
	start.Stderr = &stderr
	out, err := start.Output()
	took := time.Since(began)
	if err != nil {
		t.Fatalf("k8s.sh start: %v\n%s", err, stderr.String())
	}
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^export ([A-Z0-9_]+)=(\S+)$`).FindAllStringSubmatch(string(out), -1) {
		env[m[1]] = m[2]
	}
	dir := env["HLOAD_K8S_DIR"]
	stopped := dir == ""
	t.Cleanup(func() {
		if !stopped {
			exec.Command("../../scripts/k8s.sh", "stop", dir).Run()
		}
	})
	if dir == "" || env["KUBECONFIG"] != filepath.Join(dir, "kubeconfig") || env["HLOAD_KUBECTL"] == "" {
		t.Fatalf("k8s.sh start printed %q", out)
	}
	if dir == other {
		t.Fatalf("two starts share the folder %s", dir)
	}
	t.Logf("start took %v: %s", took.Round(time.Millisecond), strings.TrimSpace(stderr.String()))

	pids := map[string]int{}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || !ours(pid, dir) {
			t.Fatalf("%s: pid %q is not running", name, b)
		}
		pids[name] = pid
	}
	// Ready as start promises: the API server answers, and the default
	// ServiceAccount (the controller manager's work) exists.
	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command(env["HLOAD_KUBECTL"], append([]string{"--kubeconfig", env["KUBECONFIG"]}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := kubectl("get", "serviceaccount", "default", "-o", "name"); err != nil || strings.TrimSpace(out) != "serviceaccount/default" {
		t.Fatalf("kubectl get serviceaccount default: %v\n%s", err, out)
	}
	if out, err := kubectl("version", "-o", "json"); err != nil || !strings.Contains(out, `"gitVersion": "v1.37.2"`) {
		t.Errorf("kubectl version: %v\n%s", err, out)
	}

	began = time.Now()
	if out, err := exec.Command("../../scripts/k8s.sh", "stop", dir).CombinedOutput(); err != nil {
		t.Fatalf("k8s.sh stop: %v\n%s", err, out)
	}
	stopped = true
	t.Logf("stop took %v", time.Since(began).Round(time.Millisecond))
	for name, pid := range pids {
		if ours(pid, dir) {
			t.Errorf("%s (pid %d) still runs after stop", name, pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there after stop (%v)", dir, err)
	}
	// The test script's control plane is untouched.
	if _, err := os.Stat(filepath.Join(other, "kubeconfig")); err != nil {
		t.Errorf("stopping this one touched the other's folder: %v", err)
	}
}

// ours reports whether pid is a live process that k8s.sh started for dir:
// its environment carries the folder's mark. (A zombie's is empty.)
func ours(pid int, dir string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && bytes.Contains(b, []byte("HLOAD_SERVICE="+dir+"\x00"))
}
