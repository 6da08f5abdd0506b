// Package kubernetes_test checks the manifests of deploy/kubernetes against
// the Kubernetes API types, and runs the Job's command line as local
// processes, as the cluster would.
package kubernetes_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// hloadBin is the hload binary, built once from this repository, that the
// tests run as the image's entrypoint.
var hloadBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hload-k8s")
	if err != nil {
		panic(err)
	}
	hloadBin = filepath.Join(dir, "hload")
	if out, err := exec.Command("go", "build", "-o", hloadBin, "../../cmd/hload").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("building hload: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// decodeStrict decodes every YAML document of file into the API type its
// apiVersion and kind name, with the strict serializer of the API
// server's own field validation (kubectl apply's default): an unknown
// field, a field in the wrong case (encoding/json alone would take
// "completionmode" for completionMode) or a duplicated one is an error.
func decodeStrict(t *testing.T, file string) []runtime.Object {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var objects []runtime.Object
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		obj, err := strictDecode([]byte(doc))
		if err != nil {
			t.Fatalf("%s: document %d: %v", file, i+1, err)
		}
		objects = append(objects, obj)
	}
	return objects
}

// strictDecode decodes one YAML document into its Kubernetes type.
func strictDecode(doc []byte) (runtime.Object, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{batchv1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	s := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
	obj, _, err := s.Decode(doc, nil, nil)
	return obj, err
}

func stripComments(doc string) string {
	return regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")
}

// manifests are the objects of deploy/kubernetes, decoded strictly.
type manifests struct {
	job        *batchv1.Job
	configMap  *corev1.ConfigMap
	deployment *appsv1.Deployment
	service    *corev1.Service
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	var m manifests
	for _, file := range []string{"job.yaml", "configmap.yaml", "demo.yaml"} {
		for _, obj := range decodeStrict(t, file) {
			switch o := obj.(type) {
			case *batchv1.Job:
				m.job = o
			case *corev1.ConfigMap:
				m.configMap = o
			case *appsv1.Deployment:
				m.deployment = o
			case *corev1.Service:
				m.service = o
			}
		}
	}
	if m.job == nil || m.configMap == nil || m.deployment == nil || m.service == nil {
		t.Fatalf("deploy/kubernetes lacks an object: %+v", m)
	}
	return m
}

// segmentCount is N as the container's command line gives it.
func segmentCount(t *testing.T, c corev1.Container) int {
	t.Helper()
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--segment-count="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("container %s: %s: %v", c.Name, a, err)
			}
			return n
		}
	}
	t.Fatalf("container %s: no --segment-count=N in args %q", c.Name, c.Args)
	return 0
}

// TestManifestsDecodeStrictly: the manifests are valid Kubernetes objects
// with no unknown field, and the Job is the one docs/distributed.md
// describes: Indexed, completions = parallelism = --segment-count, never
// retried, its test mounted from the ConfigMap and valid for hload.
func TestManifestsDecodeStrictly(t *testing.T) {
	m := loadManifests(t)
	spec := m.job.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v, want Indexed: pods get JOB_COMPLETION_INDEX only then", spec.CompletionMode)
	}
	if len(spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Template.Spec.Containers))
	}
	c := spec.Template.Spec.Containers[0]
	n := segmentCount(t, c)
	if spec.Completions == nil || spec.Parallelism == nil || int(*spec.Completions) != n || int(*spec.Parallelism) != n {
		t.Errorf("completions %v, parallelism %v, --segment-count=%d: want all three equal", deref(spec.Completions), deref(spec.Parallelism), n)
	}
	if spec.BackoffLimitPerIndex == nil || *spec.BackoffLimitPerIndex != 0 {
		t.Errorf("backoffLimitPerIndex %v, want 0: a retried segment would send its share twice", deref(spec.BackoffLimitPerIndex))
	}
	if spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never: a restarted container would send its share again", spec.Template.Spec.RestartPolicy)
	}
	if spec.PodFailurePolicy == nil {
		t.Error("no podFailurePolicy")
	} else {
		for _, r := range spec.PodFailurePolicy.Rules {
			if r.OnExitCodes != nil && r.OnExitCodes.ContainerName != nil && *r.OnExitCodes.ContainerName != c.Name {
				t.Errorf("podFailurePolicy names container %q, the Job's is %q", *r.OnExitCodes.ContainerName, c.Name)
			}
			if r.OnExitCodes != nil && slices.Contains(r.OnExitCodes.Values, 99) && r.Action == batchv1.PodFailurePolicyActionFailJob {
				t.Error("exit 99 (thresholds failed on a segment) fails the whole Job: the other segments would be cut short")
			}
		}
	}
	for _, a := range []string{"apply", "--quiet", "--summary-export=-"} {
		if !slices.Contains(c.Args, a) {
			t.Errorf("args %q lack %s", c.Args, a)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if _, ok := env["HLOAD_START_AT"]; !ok {
		t.Error("the container has no HLOAD_START_AT for kubectl set env to fill")
	}
	if _, ok := env["HLOAD_START_SLACK"]; !ok {
		t.Error("the container has no HLOAD_START_SLACK")
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || req.Cmp(lim) != 0 {
			t.Errorf("%s: request %s, limit %s: want them equal, for the Guaranteed QoS class", r, req.String(), lim.String())
		}
	}
	if cpu := c.Resources.Requests[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1")) < 0 {
		t.Errorf("a CPU request of %s is too small for a load generator", cpu.String())
	}

	// The test file the args name is the ConfigMap's, through the mount.
	testFile := hclArg(t, c)
	files := mountedFiles(t, m, c, t.TempDir())
	local, ok := files[testFile]
	if !ok {
		t.Fatalf("args name %s, which no mounted ConfigMap key provides (mounted: %v)", testFile, files)
	}
	out, err := exec.Command(hloadBin, "validate", local).CombinedOutput()
	if err != nil {
		t.Errorf("hload validate of the ConfigMap's %s: %v\n%s", testFile, err, out)
	}

	// The demo Service selects the demo Deployment's pods, on the port the
	// test's default base_url names.
	if !matches(m.service.Spec.Selector, m.deployment.Spec.Template.Labels) {
		t.Errorf("Service selector %v does not select the Deployment's pods %v", m.service.Spec.Selector, m.deployment.Spec.Template.Labels)
	}
	hcl := m.configMap.Data[filepath.Base(testFile)]
	wantURL := fmt.Sprintf("http://%s:%d", m.service.Name, m.service.Spec.Ports[0].Port)
	if !strings.Contains(hcl, `"`+wantURL+`"`) {
		t.Errorf("the test's default base_url is not the demo Service's %s", wantURL)
	}
}

// TestStrictDecodingRejectsUnknownFields: the decoding of the test above
// does reject a misspelt field (completionmode for completionMode), so
// that test can fail.
func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	data, err := os.ReadFile("job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{"completionMode:", "completionmode:", `unknown field "spec.completionmode"`},
		{"  parallelism: 4\n", "  parallelism: 4\n  parallelism: 4\n", `"parallelism" already set`},
		{"backoffLimitPerIndex:", "backoffLimitPerIndexes:", `unknown field "spec.backoffLimitPerIndexes"`},
	} {
		bad := bytes.Replace(data, []byte(tc.from), []byte(tc.to), 1)
		if bytes.Equal(bad, data) {
			t.Fatalf("job.yaml has no %q", tc.from)
		}
		_, err := strictDecode(bad)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q for %q: got %v, want an error with %s", tc.to, tc.from, err, tc.want)
		}
	}
}

// hclArg is the test file the container's args name.
func hclArg(t *testing.T, c corev1.Container) string {
	t.Helper()
	for _, a := range c.Args {
		if strings.HasSuffix(a, ".hcl") {
			return a
		}
	}
	t.Fatalf("args %q name no .hcl file", c.Args)
	return ""
}

// mountedFiles writes the ConfigMap keys that the container mounts into
// dir, as the kubelet does at the mount path, and maps each path inside
// the container to the local file.
func mountedFiles(t *testing.T, m manifests, c corev1.Container, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, vm := range c.VolumeMounts {
		for _, v := range m.job.Spec.Template.Spec.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil || v.ConfigMap.Name != m.configMap.Name {
				continue
			}
			for key, content := range m.configMap.Data {
				local := filepath.Join(dir, vm.Name, key)
				if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(local, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				files[filepath.Join(vm.MountPath, key)] = local
			}
		}
	}
	return files
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// deref is *p, or the zero value when p is nil.
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}
