// Package merge folds the summary exports of the segments of one run
// (hload apply --segment i/n --summary-export) into the summary one
// process would have produced from the same calls: counters add up, rates
// run over the merged run's wall-clock span, and percentiles come from the
// merged HDR histograms, over the run and point by point. It refuses
// inputs that are not the segments of one run, naming the files.
package merge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/hload/hload/metrics"
)

// Input is one segment's result: a summary export and where it came from.
type Input struct {
	// Name says where the result came from, for messages: the file's
	// name, or the line of standard input that held it.
	Name    string
	Summary *metrics.Summary
}

// maxLine bounds one line of a stream: a long run's export on one line
// takes a few MB.
const maxLine = 512 << 20

// errNoResult is a stream that holds no result.
var errNoResult = errors.New("no result found")

// ReadFile reads one summary export, as --summary-export writes it.
func ReadFile(name string, data []byte) (Input, error) {
	var sum metrics.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		return Input{}, fmt.Errorf("%s: not a summary export (hload apply --summary-export): %w", name, err)
	}
	if !isSummary(&sum) {
		return Input{}, fmt.Errorf("%s: not a summary export (hload apply --summary-export): it has no run_id and no scenarios", name)
	}
	return Input{Name: name, Summary: &sum}, nil
}

// ReadPath reads the file name holds: a summary export, or a log that
// holds results as lines (a pod's `kubectl logs > pod-0.log`), which is
// read as ReadStream reads standard input. A file is taken as a log when
// it does not start with a JSON object.
func ReadPath(name string, data []byte) ([]Input, error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] != '{' {
		in, err := ReadStream(name, bytes.NewReader(data))
		if errors.Is(err, errNoResult) {
			return nil, fmt.Errorf("%s: not a summary export (hload apply --summary-export), nor a log with one "+
				"on a line of its own (hload apply --summary-export - prints it as the last line of its output)", name)
		}
		return in, err
	}
	in, err := ReadFile(name, data)
	if err != nil {
		return nil, err
	}
	return []Input{in}, nil
}

// isSummary tells a summary export from other JSON.
func isSummary(sum *metrics.Summary) bool {
	return sum.Mergeable != nil || (sum.RunID != "" && sum.Scenarios != nil)
}

// ReadStream reads the results in a stream such as `kubectl logs` prints
// for the pods of a run: every line that holds a summary export as one
// line of JSON, possibly after a prefix (kubectl logs --prefix), and
// nothing else; other lines are the run's own output and are skipped.
// name names the stream in messages. It is an error when no line holds a
// result.
func ReadStream(name string, r io.Reader) ([]Input, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var out []Input
	for line := 1; sc.Scan(); line++ {
		text := sc.Bytes()
		i := bytes.IndexByte(text, '{')
		if i < 0 || !bytes.Contains(text[i:], []byte(`"hload_version"`)) {
			continue
		}
		var sum metrics.Summary
		if json.Unmarshal(text[i:], &sum) != nil || !isSummary(&sum) {
			continue
		}
		where := fmt.Sprintf("%s, line %d", name, line)
		if prefix := bytes.TrimSpace(text[:i]); len(prefix) > 0 {
			where += " " + string(prefix)
		}
		out = append(out, Input{Name: where, Summary: &sum})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: a line is longer than %d MB", name, maxLine>>20)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w: no line holds a summary export as one line of JSON "+
			"(hload apply --summary-export - prints it as the last line of its output)", name, errNoResult)
	}
	return out, nil
}
