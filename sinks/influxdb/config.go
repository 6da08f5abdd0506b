package influxdb

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
)

// Defaults of the optional attributes.
const (
	// DefaultBuffer is the bound on points held while InfluxDB is slow or
	// down. A run with 20 requests writes about 70 points a second, so
	// this covers an outage of 20 minutes; with raw = true at 10k
	// requests/s, 10 s. At about 300 bytes a point it bounds the memory
	// to about 30 MB.
	DefaultBuffer = 100_000
	// DefaultBatchSize is the most points sent in one HTTP write, as
	// InfluxDB's documentation recommends.
	DefaultBatchSize = 5_000
	// DefaultFlushTimeout is how long Close waits for InfluxDB to take
	// the points still buffered before it gives up and reports them.
	DefaultFlushTimeout = 30 * time.Second
	// DefaultOptionalFlushTimeout is flush_timeout with required = false:
	// an optional InfluxDB may hold the end of the run up only briefly,
	// as its failures are only warnings. A healthy one takes a run's last
	// points in milliseconds.
	DefaultOptionalFlushTimeout = 3 * time.Second
	// writeTimeout bounds one HTTP write.
	writeTimeout = 10 * time.Second
	// startTimeout bounds the ping and the first write at Start.
	startTimeout = 5 * time.Second
)

// reservedTags are set by the sink; a static tag may not replace them, or
// the dashboard's filters would read another run's data.
var reservedTags = []string{
	"run_id", "test", "instance", "segment", "scenario", "request",
	"status_class", "kind", "metric",
}

// Spec is the schema of a `sink "influxdb"` block.
func Spec() hcldec.ObjectSpec {
	return hcldec.ObjectSpec{
		"url":           &hcldec.AttrSpec{Name: "url", Type: cty.String, Required: true},
		"token":         &hcldec.AttrSpec{Name: "token", Type: cty.String},
		"org":           &hcldec.AttrSpec{Name: "org", Type: cty.String},
		"bucket":        &hcldec.AttrSpec{Name: "bucket", Type: cty.String, Required: true},
		"tags":          &hcldec.AttrSpec{Name: "tags", Type: cty.Map(cty.String)},
		"instance":      &hcldec.AttrSpec{Name: "instance", Type: cty.String},
		"raw":           &hcldec.AttrSpec{Name: "raw", Type: cty.Bool},
		"required":      &hcldec.AttrSpec{Name: "required", Type: cty.Bool},
		"buffer":        &hcldec.AttrSpec{Name: "buffer", Type: cty.Number},
		"batch_size":    &hcldec.AttrSpec{Name: "batch_size", Type: cty.Number},
		"flush_timeout": &hcldec.AttrSpec{Name: "flush_timeout", Type: cty.String},
	}
}

// settings are a decoded, validated block.
type settings struct {
	url          string
	token        string
	org          string
	bucket       string
	tags         map[string]string
	instance     string // "" means the hostname
	raw          bool
	required     bool
	buffer       int
	batchSize    int
	flushTimeout time.Duration
}

// decode checks a block that conforms to Spec and returns its settings,
// with the defaults of what it leaves out.
func decode(cfg cty.Value) (settings, error) {
	s := settings{
		required:     true,
		buffer:       DefaultBuffer,
		batchSize:    DefaultBatchSize,
		flushTimeout: DefaultFlushTimeout,
	}
	if cfg.IsNull() || !cfg.Type().IsObjectType() || !cfg.IsWhollyKnown() {
		return s, errors.New("the block must be a known object")
	}
	strs, err := stringAttrs(cfg, "url", "token", "org", "bucket", "instance", "flush_timeout")
	if err != nil {
		return s, err
	}
	s.url, s.token, s.org, s.bucket, s.instance = strs[0], strs[1], strs[2], strs[3], strs[4]
	if err := checkDestination(s.url, s.bucket); err != nil {
		return s, err
	}
	if s.tags, err = decodeTags(attr(cfg, "tags")); err != nil {
		return s, err
	}
	if v := attr(cfg, "raw"); !v.IsNull() {
		s.raw = v.True()
	}
	if v := attr(cfg, "required"); !v.IsNull() {
		s.required = v.True()
	}
	if err := s.decodeLimits(cfg, strs[5]); err != nil {
		return s, err
	}
	return s, nil
}

// stringAttrs returns the values of the string attributes names, in
// their order, "" for one that is absent or null.
func stringAttrs(cfg cty.Value, names ...string) ([]string, error) {
	out := make([]string, len(names))
	for i, name := range names {
		v := attr(cfg, name)
		if v.IsNull() {
			continue
		}
		if v.Type() != cty.String {
			return nil, fmt.Errorf("%q must be a string", name)
		}
		out[i] = v.AsString()
	}
	return out, nil
}

// checkDestination checks where the points go: an http(s) address and a
// bucket.
func checkDestination(address, bucket string) error {
	u, err := url.Parse(address)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf(`"url" must be an http:// or https:// address such as http://127.0.0.1:8086, got %q`, address)
	}
	if bucket == "" {
		return errors.New(`"bucket" must not be empty (InfluxDB 1.8: "database" or "database/retention-policy")`)
	}
	return nil
}

// decodeTags returns the static tags of the block's tags attribute v, nil
// when it is null. A tag may be neither empty nor one the sink sets.
func decodeTags(v cty.Value) (map[string]string, error) {
	if v.IsNull() {
		return nil, nil
	}
	tags := map[string]string{}
	for k, val := range v.AsValueMap() {
		if val.IsNull() || val.AsString() == "" {
			return nil, fmt.Errorf(`"tags": tag %q has an empty value, which InfluxDB cannot store`, k)
		}
		for _, r := range reservedTags {
			if k == r {
				return nil, fmt.Errorf(`"tags": %q is set by the sink itself; reserved tags are %v`, k, reservedTags)
			}
		}
		if k == "" {
			return nil, errors.New(`"tags": a tag name must not be empty`)
		}
		tags[k] = val.AsString()
	}
	return tags, nil
}

// decodeLimits sets the bounds on the points held and sent at once, and
// how long the end of the run waits for them: flush is the flush_timeout
// attribute, "" for its default, which depends on required.
func (s *settings) decodeLimits(cfg cty.Value, flush string) error {
	var err error
	if s.buffer, err = positiveInt(cfg, "buffer", s.buffer); err != nil {
		return err
	}
	if s.batchSize, err = positiveInt(cfg, "batch_size", s.batchSize); err != nil {
		return err
	}
	if s.batchSize > s.buffer {
		return fmt.Errorf(`"batch_size" (%d) must not exceed "buffer" (%d)`, s.batchSize, s.buffer)
	}
	if !s.required {
		s.flushTimeout = DefaultOptionalFlushTimeout
	}
	if flush != "" {
		d, err := time.ParseDuration(flush)
		if err != nil || d <= 0 {
			return fmt.Errorf(`"flush_timeout" must be a positive duration such as "30s", got %q`, flush)
		}
		s.flushTimeout = d
	}
	return nil
}

// attr returns an attribute or a null value when the object lacks it.
func attr(cfg cty.Value, name string) cty.Value {
	if !cfg.Type().HasAttribute(name) {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	return cfg.GetAttr(name)
}

func positiveInt(cfg cty.Value, name string, def int) (int, error) {
	v := attr(cfg, name)
	if v.IsNull() {
		return def, nil
	}
	var n int
	if err := gocty.FromCtyValue(v, &n); err != nil || n <= 0 {
		return 0, fmt.Errorf("%q must be a positive whole number, got %s", name, v.AsBigFloat().Text('g', -1))
	}
	return n, nil
}

// sortedTags returns the static tags in key order, so that every point of
// a run carries them in the same order.
func sortedTags(m map[string]string) [][2]string {
	out := make([][2]string, 0, len(m))
	for k, v := range m {
		out = append(out, [2]string{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
