package host

import (
	"bytes"
	"encoding/json"
	"sync"
)

// maxLineBytes bounds one kept stderr line, so a plugin that writes a huge
// line without a newline cannot make the host hold it all.
const maxLineBytes = 4 << 10

// ring is an io.Writer that keeps the last lines written to it. go-plugin
// writes a plugin's stderr to it, a line and its newline in separate
// writes, so it joins partial writes into lines.
type ring struct {
	mu      sync.Mutex
	lines   []string // oldest first, at most max
	max     int
	partial []byte // the line being written, not yet ended by '\n'
}

func newRing(max int) *ring { return &ring{max: max} }

// Write implements io.Writer. It never fails.
func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			r.addPartial(p)
			break
		}
		r.addPartial(p[:i])
		if line := bytes.TrimRight(r.partial, "\r"); !chatter(line) {
			r.push(string(line))
		}
		r.partial = r.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (r *ring) addPartial(p []byte) {
	if room := maxLineBytes - len(r.partial); room < len(p) {
		p = p[:max(room, 0)]
	}
	r.partial = append(r.partial, p...)
}

func (r *ring) push(line string) {
	if len(r.lines) == r.max {
		copy(r.lines, r.lines[1:])
		r.lines = r.lines[:r.max-1]
	}
	r.lines = append(r.lines, line)
}

// Lines returns the kept lines, oldest first, with a last unfinished line
// if there is one, because a crashing plugin may not end its last line.
func (r *ring) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.lines)+1)
	out = append(out, r.lines...)
	if len(r.partial) > 0 {
		out = append(out, string(r.partial))
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
