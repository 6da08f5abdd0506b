package host

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/hload/hload/metrics"
)

// maxLineBytes bounds one kept stderr line, so a plugin that writes a huge
// line without a newline cannot make the host hold it all.
const maxLineBytes = 4 << 10

// ring keeps the last lines of a plugin's stderr and copies every line,
// prefixed with the plugin's name, to hload's own stderr (out), so that
// what the author wrote reaches the user while it happens, and the last
// lines reach the failure message.
//
// A plugin's stderr arrives by two ways, each a stream of its own: the
// process's file descriptor 2 (the Go runtime's crash output, and what
// go-plugin writes before it serves), and go-plugin's gRPC stdio, which
// carries what the plugin writes to os.Stderr once sdk.Serve has replaced
// it with a pipe (fmt.Fprintln(os.Stderr), log, the SDK's recovered
// panics). Each stream joins its own partial writes into lines, so two
// half lines never mix.
type ring struct {
	mu     sync.Mutex
	lines  []string // oldest first, at most max
	max    int
	out    io.Writer // hload's stderr, or nil
	prefix string    // put before each line copied to out
	main   *stream   // Write's stream
	all    []*stream
}

// stream is one source of stderr lines of a ring.
type stream struct {
	r       *ring
	partial []byte // the line being written, not yet ended by '\n'
}

func newRing(max int) *ring {
	r := &ring{max: max}
	r.main = r.stream()
	return r
}

// copyTo makes the ring copy each line, after prefix, to out.
func (r *ring) copyTo(out io.Writer, prefix string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out, r.prefix = out, prefix
}

// stream returns a new stream of the ring.
func (r *ring) stream() *stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &stream{r: r}
	r.all = append(r.all, s)
	return s
}

// Write implements io.Writer on the ring's first stream. It never fails.
func (r *ring) Write(p []byte) (int, error) { return r.main.Write(p) }

// Write implements io.Writer. It never fails.
func (s *stream) Write(p []byte) (int, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.addPartial(p)
			break
		}
		s.addPartial(p[:i])
		if line := bytes.TrimRight(s.partial, "\r"); !chatter(line) {
			r.push(string(line))
		}
		s.partial = s.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (s *stream) addPartial(p []byte) {
	if room := maxLineBytes - len(s.partial); room < len(p) {
		p = p[:max(room, 0)]
	}
	s.partial = append(s.partial, p...)
}

func (r *ring) push(line string) {
	// A plugin may quote its server: no control character of its reaches
	// hload's terminal or the summary's failure.
	line = metrics.Printable(line)
	if r.out != nil {
		// Best effort: a closed stderr must not stop the plugin's calls.
		io.WriteString(r.out, r.prefix+line+"\n")
	}
	if len(r.lines) == r.max {
		copy(r.lines, r.lines[1:])
		r.lines = r.lines[:r.max-1]
	}
	r.lines = append(r.lines, line)
}

// flush ends each stream's unfinished line, as a crashing plugin may leave
// its last line without a newline; it is called once the plugin is gone.
func (r *ring) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.all {
		if len(s.partial) > 0 {
			r.push(string(s.partial))
			s.partial = s.partial[:0]
		}
	}
}

// Lines returns the kept lines, oldest first, with the unfinished lines
// if there are some, because a crashing plugin may not end its last line.
func (r *ring) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.lines)+len(r.all))
	out = append(out, r.lines...)
	for _, s := range r.all {
		if len(s.partial) > 0 {
			out = append(out, string(s.partial))
		}
	}
	if len(out) > r.max {
		out = out[len(out)-r.max:]
	}
	return out
}

// chatter reports a debug or trace line of go-plugin's JSON log, which the
// plugin side writes to stderr at every start ("plugin address" ...). Kept,
// such lines would push out the ones that say why a plugin failed.
func chatter(line []byte) bool {
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	var entry struct {
		Level string `json:"@level"`
	}
	if json.Unmarshal(line, &entry) != nil {
		return false
	}
	return entry.Level == "debug" || entry.Level == "trace"
}
