// Package host starts protocol plugins and stops them: it finds the binary,
// checks its sha256, runs it with go-plugin and hands back a
// protocols.Protocol. The wire itself (batched calls and samples, hang
// detection) is wire.Remote's; this package only manages the process.
package host

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/internal/sched"
	"github.com/hload/hload/plugins/internal/wire"
	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
)

// Defaults of LaunchSpec.
const (
	DefaultStartTimeout = 10 * time.Second
	DefaultHangTimeout  = wire.DefaultHangTimeout
)

// The wire versions this hload speaks to its plugins: go-plugin's
// handshake agrees with a plugin on the newest both speak, and refuses a
// plugin that speaks none of them.
const (
	ProtocolVersion       = wire.ProtocolVersion
	OldestProtocolVersion = wire.OldestProtocolVersion
)

// stderrLines is how many of a plugin's last stderr lines are kept for
// errors.
const stderrLines = 20

// LaunchSpec says which plugin binary to start and how.
type LaunchSpec struct {
	// Name names the plugin in errors; it is also the protocol name the
	// plugin is registered under, whatever the binary calls itself.
	Name string
	Path string
	Args []string
	// Env is added to the plugin's environment, before hload's own, so
	// a variable the user set wins.
	Env []string
	// SHA256, when set, is the hex sum the binary must have. It is checked
	// before the binary is started.
	SHA256 string
	// StartTimeout bounds the start, up to a described protocol;
	// DefaultStartTimeout when zero.
	StartTimeout time.Duration
	// HangTimeout is how long a plugin with calls pending may stay silent
	// before it is declared hung; DefaultHangTimeout when zero.
	HangTimeout time.Duration
	// Log receives every line the plugin writes to its stderr, prefixed
	// with "plugin NAME: "; os.Stderr when nil. It is hload's stderr, so
	// that stdout's progress and summary stay clean.
	Log io.Writer
}

// Plugin is a running plugin process. It implements protocols.Protocol
// under the name of its LaunchSpec. Kill it when done: nothing else stops
// the process.
type Plugin struct {
	spec     LaunchSpec
	cmd      *exec.Cmd
	client   *plugin.Client
	stderr   *ring
	remote   *wire.Remote
	info     protocols.Info // as the plugin describes itself
	killOnce sync.Once
	// dead reports whether process pid has exited; tests slow it down to
	// stand for a process that shows as dead late.
	dead func(pid int) bool
	// socket is the unix socket the plugin listens on, which go-plugin
	// creates in the plugin's temporary folder (/tmp) and only the
	// plugin removes, when it exits cleanly: Kill removes it after a
	// plugin that was killed.
	socket string
	// sockets is a folder of the plugin's own for its socket
	// (PLUGIN_UNIX_SOCKET_DIR), which Kill removes once the process has
	// exited: a plugin killed before hload learnt its socket's name (a
	// start that failed, say on the wire version) leaves it there, not
	// in /tmp. "" when it could not be made.
	sockets string
}

var (
	_ protocols.Protocol         = (*Plugin)(nil)
	_ protocols.TargetValidator  = (*Plugin)(nil)
	_ protocols.RequestValidator = (*Plugin)(nil)
)

// Error is a plugin that could not be started or checked. It names the
// plugin and carries its last stderr lines, which usually say why.
type Error struct {
	Plugin string
	Path   string
	Err    error
	Hint   string   // what the failure likely means, or ""
	Stderr []string // the plugin's last stderr lines, oldest first
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plugin %q (%s): %v", e.Plugin, e.Path, e.Err)
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	if len(e.Stderr) > 0 {
		fmt.Fprintf(&b, "\nlast %d line(s) of its stderr:", len(e.Stderr))
		for _, l := range e.Stderr {
			b.WriteString("\n  " + l)
		}
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrChecksum is wrapped by the error of a binary whose sha256 differs from
// the pinned one.
var ErrChecksum = errors.New("sha256 mismatch")

// Launch checks and starts the plugin binary, and describes its protocol.
// On error no process is left running.
func Launch(ctx context.Context, spec LaunchSpec) (*Plugin, error) {
	if spec.StartTimeout <= 0 {
		spec.StartTimeout = DefaultStartTimeout
	}
	if spec.HangTimeout <= 0 {
		spec.HangTimeout = DefaultHangTimeout
	}
	if err := checkExecutable(spec.Path); err != nil {
		return nil, &Error{Plugin: spec.Name, Path: spec.Path, Err: err}
	}
	if spec.SHA256 != "" {
		if err := checkSum(spec.Path, spec.SHA256); err != nil {
			return nil, &Error{Plugin: spec.Name, Path: spec.Path, Err: err,
				Hint: "the binary is not the one the config pins; rebuild it or update sha256"}
		}
	}

	p := &Plugin{spec: spec, stderr: newRing(stderrLines), dead: dead}
	log := spec.Log
	if log == nil {
		log = os.Stderr
	}
	p.stderr.copyTo(log, "plugin "+spec.Name+": ")
	p.cmd = exec.Command(spec.Path, spec.Args...)
	// The plugin puts itself under SCHED_BATCH (see package sched); this
	// process keeps its policy. go-plugin appends hload's environment
	// after these, so a variable the user set wins.
	p.cmd.Env = append(append([]string{}, spec.Env...), sched.Env+"="+sched.Batch)
	if dir, err := os.MkdirTemp("", "hload-"); err == nil {
		if len(dir)+len("/plugin0123456789") <= maxSocketPath {
			p.sockets = dir
			p.cmd.Env = append(p.cmd.Env, plugin.EnvUnixSocketDir+"="+dir)
		} else {
			// A socket's path has a length limit; in the temporary folder
			// itself, the socket's name is shorter.
			os.Remove(dir)
		}
	}
	p.cmd.SysProcAttr = procAttr()
	p.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake(),
		VersionedPlugins: wire.PluginSets(nil),
		Cmd:              p.cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		GRPCDialOptions:  wire.GRPCDialOptions(),
		StartTimeout:     spec.StartTimeout,
		// The process's own stderr: the runtime's crash output and what
		// the plugin writes before sdk.Serve.
		Stderr: p.stderr,
		// go-plugin's gRPC stdio: os.Stderr once sdk.Serve replaced it,
		// which is where log, fmt.Fprintln(os.Stderr) and the SDK's
		// recovered panics go. Without it go-plugin drops them.
		SyncStderr: p.stderr.stream(),
		// go-plugin logs every plugin stderr line and its own chatter;
		// the user sees the lines that matter in errors instead.
		Logger:  hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: io.Discard, Level: hclog.Off}),
		Managed: false,
	})
	if err := p.start(ctx); err != nil {
		// Kill waits for go-plugin's stderr reader, so the lines that
		// explain the failure are all in before they are read.
		p.Kill()
		return nil, &Error{Plugin: spec.Name, Path: spec.Path, Err: steadyVersions(err), Hint: startHint(err, p.stderr.Lines(), spec), Stderr: p.stderr.Lines()}
	}
	return p, nil
}

func (p *Plugin) start(ctx context.Context) error {
	rpc, err := p.client.Client()
	if rc := p.client.ReattachConfig(); rc != nil && rc.Addr != nil && rc.Addr.Network() == "unix" {
		p.socket = rc.Addr.String()
	}
	if err != nil {
		return err
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		return err
	}
	pc, ok := raw.(proto.ProtocolClient)
	if !ok {
		return fmt.Errorf("dispensed %T, not a protocol client", raw)
	}
	// A plugin that started but never answers Describe is hung at start.
	dctx, cancel := context.WithTimeout(ctx, p.spec.StartTimeout)
	defer cancel()
	p.remote, err = wire.NewRemote(dctx, pc, wire.RemoteOptions{
		Name:        p.spec.Name,
		HangTimeout: p.spec.HangTimeout,
		Stderr:      p.lastLines,
		// A plugin built with the SDK of an older wire version gets what
		// that version has.
		ProtocolVersion: p.client.NegotiatedVersion(),
	})
	if err != nil {
		return fmt.Errorf("describing its protocol: %w", err)
	}
	p.info = p.remote.Describe()
	return nil
}

// pluginVersion finds the version in go-plugin's "Incompatible API
// version" error.
var pluginVersion = regexp.MustCompile(`Plugin version: (\d+)`)

// clientVersions is the list of hload's versions in go-plugin's
// "Incompatible API version" error.
var clientVersions = regexp.MustCompile(`Client versions: \[([\d ]+)\]`)

// versionsError is go-plugin's error with its text made steady.
type versionsError struct {
	msg string
	err error
}

func (e *versionsError) Error() string { return e.msg }
func (e *versionsError) Unwrap() error { return e.err }

// steadyVersions sorts the versions go-plugin lists in its "Incompatible
// API version" error: it takes them from a map, so the same refusal
// printed [2 3] in one run and [3 2] in the next.
func steadyVersions(err error) error {
	msg := err.Error()
	m := clientVersions.FindStringSubmatchIndex(msg)
	if m == nil {
		return err
	}
	vs := strings.Fields(msg[m[2]:m[3]])
	slices.SortFunc(vs, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return cmp.Compare(x, y)
	})
	return &versionsError{msg: msg[:m[2]] + strings.Join(vs, " ") + msg[m[3]:], err: err}
}

// startHint explains go-plugin's start errors in the user's terms.
func startHint(err error, stderr []string, spec LaunchSpec) string {
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(strings.Join(stderr, "\n"), "This binary is a plugin"):
		return "the handshake's magic cookie did not match: the binary is not an hload protocol plugin, or it was built for another program"
	case strings.Contains(msg, "incompatible api version"):
		return versionHint(err)
	case strings.Contains(msg, "timeout while waiting for plugin to start"), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("it did not start within %s", spec.StartTimeout)
	case strings.Contains(msg, "plugin exited before we could connect"):
		return "it exited during the start"
	}
	return ""
}

// versionHint explains a plugin whose wire versions this hload does not
// speak: both versions, and what to do, which depends on which is newer.
func versionHint(err error) string {
	ours := fmt.Sprintf("this hload speaks protocol version %d (and %s, for plugins built before)", ProtocolVersion, olderVersions())
	m := pluginVersion.FindStringSubmatch(err.Error())
	if m == nil {
		return "the plugin speaks another protocol version of hload's plugin protocol and " + ours + "; rebuild it against this hload's plugins/sdk"
	}
	theirs, _ := strconv.Atoi(m[1])
	if theirs > ProtocolVersion {
		return fmt.Sprintf("the plugin speaks protocol version %d of hload's plugin protocol, newer than this hload: %s; run it with a newer hload, or rebuild it against this hload's plugins/sdk", theirs, ours)
	}
	return fmt.Sprintf("the plugin speaks protocol version %d of hload's plugin protocol, older than this hload: %s; rebuild it against this hload's plugins/sdk", theirs, ours)
}

// olderVersions lists the versions hload speaks besides ProtocolVersion,
// newest first: "3 and 2".
func olderVersions() string {
	var vs []string
	for v := ProtocolVersion - 1; v >= OldestProtocolVersion; v-- {
		vs = append(vs, strconv.Itoa(v))
	}
	if len(vs) < 2 {
		return strings.Join(vs, "")
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " and " + vs[len(vs)-1]
}

// checkExecutable gives a clear error for a missing or non-executable
// binary, before go-plugin's less specific one.
func checkExecutable(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("no such file: %w", err)
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return errors.New("not a regular file")
	case st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("not executable (mode %s); chmod +x it", st.Mode().Perm())
	}
	return nil
}

// checkSum compares the file's sha256 with want, in hex.
func checkSum(path, want string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("hashing: %w", err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if !strings.EqualFold(got, want) {
		return fmt.Errorf("%w: expected %s, actual %s", ErrChecksum, strings.ToLower(want), got)
	}
	return nil
}

// Describe implements protocols.Protocol. The name is the LaunchSpec's, so
// the protocol is the one the config's plugin block declared.
func (p *Plugin) Describe() protocols.Info {
	info := p.info
	info.Name = p.spec.Name
	return info
}

// Open implements protocols.Protocol. Its clients implement
// protocols.Failer: a crash or hang of the plugin fails the run.
func (p *Plugin) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	return p.remote.Open(ctx, target)
}

// ValidateTarget implements protocols.TargetValidator: the plugin checks
// the target with its own validator, without opening it. A plugin that has
// none accepts every target.
func (p *Plugin) ValidateTarget(target cty.Value) (string, error) {
	return p.remote.ValidateTarget(target)
}

// ValidateRequest implements protocols.RequestValidator, as ValidateTarget.
func (p *Plugin) ValidateRequest(request cty.Value) (string, error) {
	return p.remote.ValidateRequest(request)
}

// Kill stops the plugin process and waits for it to exit, so no process is
// left behind. It is safe to call more than once.
func (p *Plugin) Kill() {
	p.killOnce.Do(func() {
		if p.remote != nil && p.remote.Hung() && p.cmd.Process != nil {
			// It stopped responding: asking it to shut down would only
			// wait out killGrace. Killed first, it breaks its connection,
			// and go-plugin's Kill below finishes at once.
			p.cmd.Process.Kill()
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.client.Kill()
		}()
		// go-plugin first asks the plugin to shut down over gRPC and waits
		// for the answer without a deadline; a hung or stopped plugin never
		// answers. After killGrace the process is killed outright, which
		// breaks the connection and lets go-plugin finish.
		defer p.removeSocket()
		select {
		case <-done:
			return
		case <-time.After(killGrace):
		}
		if p.cmd.Process != nil {
			p.cmd.Process.Kill()
		}
		<-done
		p.stderr.flush()
	})
}

// removeSocket removes the plugin's unix socket once the process is gone,
// if it is still there, with the folder hload made for it: a plugin that
// exits cleanly removes its own, but one that was killed (by hload, for a
// hang, or by anyone) leaves it. Outside that folder (the user set
// PLUGIN_UNIX_SOCKET_DIR), only a socket is removed, never a file that
// took its name since.
func (p *Plugin) removeSocket() {
	if p.sockets != "" {
		os.RemoveAll(p.sockets)
	}
	if p.socket == "" {
		return
	}
	if st, err := os.Lstat(p.socket); err == nil && st.Mode()&os.ModeSocket != 0 {
		os.Remove(p.socket)
	}
}

// maxSocketPath is the longest path of a unix socket on every system
// hload runs on: macOS allows 103 bytes, Linux 107.
const maxSocketPath = 103

// killGrace is how long a plugin may take to shut down when asked before
// it is killed.
const killGrace = 3 * time.Second

// Info is the protocol as the plugin describes itself, with its own name.
func (p *Plugin) Info() protocols.Info { return p.info }

// SDKVersion is the version of plugins/sdk the plugin was built with.
func (p *Plugin) SDKVersion() string { return p.remote.SDKVersion() }

// ProtocolVersion is the wire protocol version the handshake agreed on.
func (p *Plugin) ProtocolVersion() int { return p.client.NegotiatedVersion() }

// Name is the LaunchSpec's name.
func (p *Plugin) Name() string { return p.spec.Name }

// Path is the binary's path.
func (p *Plugin) Path() string { return p.spec.Path }

// Stderr returns the plugin's last stderr lines, oldest first.
func (p *Plugin) Stderr() []string { return p.stderr.Lines() }

// stderrDrain bounds the wait for a dead plugin's last stderr lines.
const stderrDrain = 2 * time.Second

// exitGrace is how long a plugin whose connection broke may take to show
// as dead in /proc: a process closes its files, and so its connection,
// before it becomes a zombie, and on a busy machine the host can read the
// broken connection in between (a CI run saw it 8 ms after the call).
const exitGrace = 500 * time.Millisecond

// lastLines returns the plugin's last stderr lines for a failure message.
// A plugin that crashed wrote its last lines (the runtime's panic and
// stack) just before it died, and the host sees the broken connection as
// soon as the lines: so when the process is dead, or dies within
// exitGrace, it waits until go-plugin has read its stderr to the end
// (Exited is set only after that). A plugin still alive after exitGrace
// did not crash (it hangs, or closed its end): its lines are taken as
// they are.
func (p *Plugin) lastLines() []string {
	pid := p.Pid()
	if pid == 0 {
		return p.stderr.Lines()
	}
	start := time.Now()
	for !p.client.Exited() && time.Since(start) < stderrDrain {
		if !p.dead(pid) && time.Since(start) >= exitGrace {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p.stderr.Lines()
}

// Pid is the plugin's process id, or 0 before it started.
func (p *Plugin) Pid() int {
	if p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited reports whether the plugin process has exited.
func (p *Plugin) Exited() bool { return p.client.Exited() }
