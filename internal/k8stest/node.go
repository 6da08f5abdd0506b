// Package k8stest plays a Kubernetes node's part for deploy/kubernetes's
// tests, against a real API server and Job controller (scripts/k8s.sh)
// where no kubelet or container runtime can run. It is test support only:
// imported by tests, never by hload.
//
// A Node watches the Pods of one namespace. For each new Pod it runs the
// container's command as a local process, the way a kubelet would start
// the container, and reports what happens back as the Pod's status, so
// that the Job controller sees Pods run, succeed and fail as on a cluster:
//
//   - the program is the container's command, or else the entrypoint the
//     Node was given for its image, followed by its args;
//   - the environment is the container's env as the API server stored it,
//     with valueFrom resolved as the kubelet does for the fields a Job's
//     Pod uses (the downward API's metadata, JOB_COMPLETION_INDEX among
//     them, ConfigMap keys);
//   - a ConfigMap volume's files are written to a folder of the Pod's own,
//     and a path under the volume's mountPath in the command, args or env
//     is rewritten to that folder (there is no container filesystem);
//   - the Pod is Running and Ready once the process started; Succeeded or
//     Failed, with the container's exit code, once it ended;
//   - a Pod that is deleted (as the Job controller deletes the others when
//     the Job fails, or an eviction does) has its process stopped: SIGTERM,
//     then SIGKILL after the Pod's grace period.
//
// What it does not do: images, resource limits, probes, restarts, other
// volume kinds (they are empty folders), networking. Each process's
// output, stdout and stderr together, is kept as the Pod's log.
package k8stest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// Options configure a Node.
type Options struct {
	// Namespace is the namespace whose Pods the Node runs.
	Namespace string
	// NodeName is the name of the Node object the stand-in registers and
	// binds the Pods to, as a scheduler would: the API server then treats
	// their deletion as a node's, with the Pod's grace period.
	NodeName string
	// Dir holds each Pod's files and log, in a folder named after it.
	Dir string
	// Entrypoints maps an image to the local program that stands for its
	// entrypoint, for containers that set no command.
	Entrypoints map[string][]string
	// Env is the environment every process starts from (PATH, HOME), as
	// an image's would; the container's env is added to it.
	Env []string
	// Delay, when set, is how long the Node waits before it starts a Pod,
	// as a slow image pull or a busy node would.
	Delay func(*corev1.Pod) time.Duration
}

// Node runs the Pods of one namespace as local processes.
type Node struct {
	client kubernetes.Interface
	opts   Options
	stop   context.CancelFunc
	ctx    context.Context
	wg     sync.WaitGroup

	mu   sync.Mutex
	pods map[types.UID]*Pod
}

// Pod is what the Node did with one Pod.
type Pod struct {
	Name   string
	UID    types.UID
	Index  string // the Job controller's completion index annotation
	Labels map[string]string
	// Started and Ended are when the process started and ended; Ended is
	// zero while it runs.
	Started, Ended time.Time
	// ExitCode is the process's, once it ended; -1 when it was killed by a
	// signal.
	ExitCode int
	// Stopped is true when the Node stopped the process because the Pod
	// was deleted.
	Stopped bool
	// Err says why the Pod could not be run, or its status not reported.
	Err error

	proc   *os.Process
	ended  chan struct{}
	killed bool
}

// Start starts a Node that runs the Pods of opts.Namespace until Close.
func Start(client kubernetes.Interface, opts Options) (*Node, error) {
	ctx, stop := context.WithCancel(context.Background())
	n := &Node{client: client, opts: opts, stop: stop, ctx: ctx, pods: map[types.UID]*Pod{}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: opts.NodeName, Labels: map[string]string{"kubernetes.io/hostname": opts.NodeName}}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		stop()
		return nil, fmt.Errorf("k8stest: registering node %s: %w", opts.NodeName, err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(opts.Namespace))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    n.seen,
		UpdateFunc: func(_, obj any) { n.seen(obj) },
		DeleteFunc: n.deleted,
	}); err != nil {
		stop()
		return nil, err
	}
	factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		stop()
		return nil, errors.New("k8stest: the Pod informer did not sync within 30s")
	}
	return n, nil
}

// Close stops every process still running, waits for them and for their
// status reports, stops watching and removes the Node object.
func (n *Node) Close() {
	n.mu.Lock()
	for _, p := range n.pods {
		n.kill(p, 5*time.Second)
	}
	n.mu.Unlock()
	n.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n.client.CoreV1().Nodes().Delete(ctx, n.opts.NodeName, metav1.DeleteOptions{})
	n.stop()
}

// Pods returns what the Node did with each Pod it saw, by name.
func (n *Node) Pods() []Pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Pod, 0, len(n.pods))
	for _, p := range n.pods {
		c := *p
		c.proc, c.ended = nil, nil
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Logs returns the logs of the Pods whose labels include selector and
// that the API server still holds, each Pod's whole log in turn, by Pod
// name, as `kubectl logs -l ... --tail=-1` prints them after the run: a
// Pod deleted since (as the Job controller deletes the Pods it stops when
// a Job fails) has taken its log with it.
func (n *Node) Logs(selector map[string]string) ([]byte, error) {
	list, err := n.client.CoreV1().Pods(n.opts.Namespace).List(n.ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(selector).String(),
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return n.logs(names)
}

// Streamed returns the logs of every Pod the Node ran whose labels include
// selector, deleted ones too, by Pod name: what `kubectl logs -f -l ...`
// received while they ran.
func (n *Node) Streamed(selector map[string]string) ([]byte, error) {
	var names []string
	sel := labels.SelectorFromSet(selector)
	for _, p := range n.Pods() {
		if sel.Matches(labels.Set(p.Labels)) && !p.Started.IsZero() {
			names = append(names, p.Name)
		}
	}
	return n.logs(names)
}

func (n *Node) logs(names []string) ([]byte, error) {
	sort.Strings(names)
	var out []byte
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(n.opts.Dir, name, "log"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

// seen starts a Pod the Node has not run yet, and stops one that is being
// deleted.
func (n *Node) seen(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	p, known := n.pods[pod.UID]
	if !known {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return
		}
		p = &Pod{Name: pod.Name, UID: pod.UID, Index: pod.Annotations[batchv1.JobCompletionIndexAnnotation], Labels: pod.Labels, ended: make(chan struct{})}
		n.pods[pod.UID] = p
		n.wg.Go(func() { n.run(pod.DeepCopy(), p) })
		return
	}
	if pod.DeletionTimestamp != nil {
		grace := 30 * time.Second
		if pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		n.kill(p, grace)
	}
}

func (n *Node) deleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if p, known := n.pods[pod.UID]; known {
		n.kill(p, 0)
	}
}

// kill stops p's process, once: SIGTERM now, SIGKILL after grace. A Pod
// not started yet will not start. n.mu is held.
func (n *Node) kill(p *Pod, grace time.Duration) {
	if p.killed {
		return
	}
	p.killed = true
	if p.proc == nil {
		return
	}
	p.Stopped = true
	proc, ended := p.proc, p.ended
	proc.Signal(syscall.SIGTERM)
	go func() {
		select {
		case <-ended:
		case <-time.After(grace):
			proc.Kill()
		}
	}()
}

// run runs one Pod's container to its end and reports each step as the
// Pod's status.
func (n *Node) run(pod *corev1.Pod, p *Pod) {
	defer close(p.ended)
	if pod.Spec.NodeName == "" {
		err := n.client.CoreV1().Pods(pod.Namespace).Bind(n.ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: n.opts.NodeName},
		}, metav1.CreateOptions{})
		if err != nil {
			n.fail(p, fmt.Errorf("binding to node %s: %w", n.opts.NodeName, err))
			return
		}
	}
	if d := n.delay(pod); d > 0 {
		select {
		case <-time.After(d):
		case <-n.ctx.Done():
			return
		}
	}
	cmd, err := n.command(pod)
	if err == nil {
		n.mu.Lock()
		if p.killed {
			n.mu.Unlock()
			cmd.Stdout.(*os.File).Close()
			n.remove(pod, p)
			return
		}
		err = cmd.Start()
		cmd.Stdout.(*os.File).Close()
		if err == nil {
			p.proc, p.Started = cmd.Process, time.Now()
		}
		n.mu.Unlock()
	}
	if err != nil {
		n.fail(p, err)
		n.report(pod, p, corev1.PodFailed, &corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError", Message: err.Error()})
		return
	}
	n.report(pod, p, corev1.PodRunning, nil)
	werr := cmd.Wait()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		code = ee.ExitCode()
	case werr != nil:
		code = -1
	}
	n.mu.Lock()
	p.Ended, p.ExitCode = time.Now(), code
	n.mu.Unlock()
	term := &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: "Completed", StartedAt: metav1.NewTime(p.Started), FinishedAt: metav1.NewTime(p.Ended)}
	phase := corev1.PodSucceeded
	if code != 0 {
		phase, term.Reason = corev1.PodFailed, "Error"
		if code < 0 {
			term.ExitCode, term.Reason = 137, "Killed"
		}
	}
	n.report(pod, p, phase, term)
	n.mu.Lock()
	deleting := p.killed
	n.mu.Unlock()
	if deleting {
		n.remove(pod, p)
	}
}

// remove ends a Pod being deleted once its container has stopped and its
// status says so, as the kubelet does: a deletion with no grace left.
// (The Job controller's finalizer may keep the object a moment longer.)
func (n *Node) remove(pod *corev1.Pod, p *Pod) {
	zero := int64(0)
	err := n.client.CoreV1().Pods(pod.Namespace).Delete(n.ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		n.fail(p, fmt.Errorf("deleting: %w", err))
	}
}

func (n *Node) delay(pod *corev1.Pod) time.Duration {
	if n.opts.Delay == nil {
		return 0
	}
	return n.opts.Delay(pod)
}

func (n *Node) fail(p *Pod, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p.Err = errors.Join(p.Err, err)
}

// report writes the Pod's status: phase, the container's state, and the
// Ready condition, retried on a conflict with a newer version of the Pod
// (the Job controller and an eviction write it too). A Pod already gone
// has no status to write.
func (n *Node) report(pod *corev1.Pod, p *Pod, phase corev1.PodPhase, term *corev1.ContainerStateTerminated) {
	c := pod.Spec.Containers[0]
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := n.client.CoreV1().Pods(pod.Namespace).Get(n.ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image}
		ready := corev1.ConditionFalse
		if term == nil {
			started := true
			st.Ready, st.Started, st.State.Running = true, &started, &corev1.ContainerStateRunning{StartedAt: now}
			ready = corev1.ConditionTrue
			cur.Status.StartTime = &now
		} else {
			st.State.Terminated = term
		}
		cur.Status.Phase = phase
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{st}
		for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodScheduled} {
			setCondition(cur, t, corev1.ConditionTrue, now)
		}
		for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
			setCondition(cur, t, ready, now)
		}
		_, err = n.client.CoreV1().Pods(pod.Namespace).UpdateStatus(n.ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		n.fail(p, fmt.Errorf("status %s: %w", phase, err))
	}
}

// setCondition sets the Pod's condition t, keeping the others (the
// DisruptionTarget an eviction adds among them).
func setCondition(pod *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus, now metav1.Time) {
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == t {
			if c.Status != s {
				c.Status, c.LastTransitionTime = s, now
			}
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now})
}

// command builds the process for the Pod's one container: its program,
// arguments, environment, mounted files and log.
func (n *Node) command(pod *corev1.Pod) (*exec.Cmd, error) {
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) != 0 {
		return nil, fmt.Errorf("pod %s: the stand-in runs one container and no init containers", pod.Name)
	}
	c := pod.Spec.Containers[0]
	dir := filepath.Join(n.opts.Dir, pod.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	mounts, err := n.mount(pod, c, dir)
	if err != nil {
		return nil, err
	}
	argv := append([]string(nil), c.Command...)
	if len(argv) == 0 {
		if argv = n.opts.Entrypoints[c.Image]; len(argv) == 0 {
			return nil, fmt.Errorf("pod %s: image %q has no entrypoint the stand-in knows", pod.Name, c.Image)
		}
	}
	argv = append(append([]string(nil), argv...), c.Args...)
	for i := range argv {
		argv[i] = mounts.rewrite(argv[i])
	}
	env, err := n.env(pod, c)
	if err != nil {
		return nil, err
	}
	for i := range env {
		env[i] = mounts.rewrite(env[i])
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = filepath.Join(dir, "work"), env
	if err := os.MkdirAll(cmd.Dir, 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		return nil, err
	}
	// A container's log holds its stdout and stderr as written. The child
	// holds its own copy of the file: run closes this one after Start.
	cmd.Stdout, cmd.Stderr = log, log
	return cmd, nil
}

// mounts maps each volumeMount's path in the container to the Pod's
// local folder for it, longest path first.
type mounts [][2]string

func (m mounts) rewrite(s string) string {
	for _, mp := range m {
		if i := strings.Index(s, mp[0]); i >= 0 && (len(s) == i+len(mp[0]) || s[i+len(mp[0])] == '/') {
			return s[:i] + mp[1] + s[i+len(mp[0]):]
		}
	}
	return s
}

// mount writes the files of each ConfigMap volume the container mounts
// into a folder of the Pod's; other volumes are empty folders.
func (n *Node) mount(pod *corev1.Pod, c corev1.Container, dir string) (mounts, error) {
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	var m mounts
	for i, vm := range c.VolumeMounts {
		local := filepath.Join(dir, "volumes", strconv.Itoa(i))
		if err := os.MkdirAll(local, 0o755); err != nil {
			return nil, err
		}
		v, ok := volumes[vm.Name]
		if !ok {
			return nil, fmt.Errorf("pod %s: volumeMount %q names no volume", pod.Name, vm.Name)
		}
		if v.ConfigMap != nil {
			if err := n.writeConfigMap(pod.Namespace, v.ConfigMap, local); err != nil {
				return nil, fmt.Errorf("pod %s: volume %q: %w", pod.Name, vm.Name, err)
			}
		}
		m = append(m, [2]string{vm.MountPath, local})
	}
	sort.Slice(m, func(i, j int) bool { return len(m[i][0]) > len(m[j][0]) })
	return m, nil
}

func (n *Node) writeConfigMap(ns string, src *corev1.ConfigMapVolumeSource, dir string) error {
	cm, err := n.client.CoreV1().ConfigMaps(ns).Get(n.ctx, src.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	files := map[string]string{}
	if len(src.Items) == 0 {
		for k, v := range cm.Data {
			files[k] = v
		}
	}
	for _, it := range src.Items {
		v, ok := cm.Data[it.Key]
		if !ok {
			return fmt.Errorf("ConfigMap %s has no key %q", src.Name, it.Key)
		}
		files[it.Path] = v
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// env is the container's environment, valueFrom resolved.
func (n *Node) env(pod *corev1.Pod, c corev1.Container) ([]string, error) {
	env := append([]string(nil), n.opts.Env...)
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			return nil, fmt.Errorf("pod %s: envFrom other than a ConfigMap", pod.Name)
		}
		cm, err := n.client.CoreV1().ConfigMaps(pod.Namespace).Get(n.ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("pod %s: envFrom: %w", pod.Name, err)
		}
		for k, v := range cm.Data {
			env = append(env, from.Prefix+k+"="+v)
		}
	}
	for _, e := range c.Env {
		v, err := n.value(pod, e)
		if err != nil {
			return nil, fmt.Errorf("pod %s: env %s: %w", pod.Name, e.Name, err)
		}
		env = append(env, e.Name+"="+v)
	}
	return env, nil
}

func (n *Node) value(pod *corev1.Pod, e corev1.EnvVar) (string, error) {
	switch from := e.ValueFrom; {
	case from == nil:
		return e.Value, nil
	case from.FieldRef != nil:
		return fieldValue(pod, from.FieldRef.FieldPath)
	case from.ConfigMapKeyRef != nil:
		cm, err := n.client.CoreV1().ConfigMaps(pod.Namespace).Get(n.ctx, from.ConfigMapKeyRef.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		v, ok := cm.Data[from.ConfigMapKeyRef.Key]
		if !ok {
			return "", fmt.Errorf("ConfigMap %s has no key %q", cm.Name, from.ConfigMapKeyRef.Key)
		}
		return v, nil
	}
	return "", errors.New("a valueFrom the stand-in does not resolve")
}

// fieldValue resolves a downward API field path, as the kubelet does for
// the paths it accepts in env: metadata.name, .namespace, .uid, and one
// annotation or label.
func fieldValue(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.annotations": pod.Annotations, "metadata.labels": pod.Labels} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(key, "']") {
			return m[strings.TrimSuffix(key, "']")], nil
		}
	}
	return "", fmt.Errorf("field path %q: the stand-in does not resolve it", path)
}
