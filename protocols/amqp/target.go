package amqp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/hload/hload/protocols"
)

// targetConfig is a validated target block.
type targetConfig struct {
	url           string
	tls           *tls.Config // nil for amqp://
	channels      int
	heartbeat     time.Duration
	reconnectWait time.Duration
	name          string // the connection_name client property
	exchanges     []exchangeDecl
	queues        []queueDecl
	bindings      []bindingDecl
}

type exchangeDecl struct {
	name, kind                    string
	durable, autoDelete, internal bool
	args                          amqp.Table
}

type queueDecl struct {
	name                           string
	durable, autoDelete, exclusive bool
	args                           amqp.Table
}

type bindingDecl struct {
	exchange, queue, key string
	args                 amqp.Table
}

// inAttr marks err, when not nil, as a mistake in attr
// (protocols.AttrError): ValidateTarget names the attribute, so that the
// config points at it, and Open reports the same message.
func inAttr(attr string, err error) error {
	if err == nil {
		return nil
	}
	return &protocols.AttrError{Attr: attr, Err: err}
}

// parseTarget is the one decoder of a target block: Open and
// ValidateTarget both go through it.
func parseTarget(target cty.Value) (*targetConfig, error) {
	if target.IsNull() || !target.IsKnown() || !target.Type().IsObjectType() {
		return nil, errors.New("amqp: target must be a known object")
	}
	cfg := &targetConfig{
		channels:      DefaultChannels,
		heartbeat:     DefaultHeartbeat,
		reconnectWait: DefaultReconnectWait,
		name:          "hload",
	}
	raw, err := stringAttr(target, "url")
	if err != nil {
		return nil, inAttr("url", err)
	}
	if raw == "" {
		return nil, inAttr("url", errors.New("amqp: target url is required, such as url = \"amqp://guest:guest@127.0.0.1:5672/\""))
	}
	if !strings.Contains(raw, "://") {
		return nil, inAttr("url", fmt.Errorf("amqp: target url %q has no scheme: write \"amqp://%s\", or amqps:// for TLS", redact(raw), redact(raw)))
	}
	uri, err := amqp.ParseURI(raw)
	if err != nil {
		return nil, inAttr("url", fmt.Errorf("amqp: target url %q: %v; write it as amqp://user:password@host:5672/vhost, or amqps:// for TLS", redact(raw), err))
	}
	cfg.url = raw
	if cfg.tls, err = parseTLS(target, uri, raw); err != nil {
		return nil, err
	}
	if err := intAttr(target, "target", "channels", 1, 2047, &cfg.channels); err != nil {
		return nil, inAttr("channels", err)
	}
	if err := durationAttr(target, "target", "heartbeat", &cfg.heartbeat); err != nil {
		return nil, inAttr("heartbeat", err)
	}
	if err := durationAttr(target, "target", "reconnect_wait", &cfg.reconnectWait); err != nil {
		return nil, inAttr("reconnect_wait", err)
	}
	if s, err := stringAttr(target, "connection_name"); err != nil {
		return nil, inAttr("connection_name", err)
	} else if s != "" {
		cfg.name = s
	}
	if cfg.exchanges, err = parseExchanges(protocols.Attr(target, "exchanges")); err != nil {
		return nil, inAttr("exchanges", err)
	}
	if cfg.queues, err = parseQueues(protocols.Attr(target, "queues")); err != nil {
		return nil, inAttr("queues", err)
	}
	if cfg.bindings, err = parseBindings(protocols.Attr(target, "bindings")); err != nil {
		return nil, inAttr("bindings", err)
	}
	return cfg, nil
}

// parseTLS reads the tls_* attributes and insecure_skip_verify: the TLS
// configuration of an amqps:// url, or nil for amqp://, which takes none.
func parseTLS(target cty.Value, uri amqp.URI, raw string) (*tls.Config, error) {
	names := []string{"tls_ca", "tls_cert", "tls_key", "tls_server_name"}
	values := map[string]string{}
	for _, name := range names {
		s, err := stringAttr(target, name)
		if err != nil {
			return nil, inAttr(name, err)
		}
		values[name] = s
	}
	insecure := false
	if err := boolAttr(target, "target", "insecure_skip_verify", &insecure); err != nil {
		return nil, inAttr("insecure_skip_verify", err)
	}
	ca, cert, key := values["tls_ca"], values["tls_cert"], values["tls_key"]
	if uri.Scheme != "amqps" {
		for _, name := range append(names, "insecure_skip_verify") {
			if values[name] != "" || (name == "insecure_skip_verify" && insecure) {
				return nil, inAttr(name, fmt.Errorf("amqp: target %s is set, but tls_* and insecure_skip_verify need an amqps:// url; url %q is plain amqp", name, redact(raw)))
			}
		}
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: values["tls_server_name"], InsecureSkipVerify: insecure} //nolint:gosec // the user's explicit choice
	if tc.ServerName == "" {
		tc.ServerName = uri.Host
	}
	if ca != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(ca)) {
			return nil, inAttr("tls_ca", errors.New("amqp: target tls_ca holds no PEM certificate; pass its content, such as tls_ca = file(\"ca.pem\")"))
		}
		tc.RootCAs = pool
	}
	if (cert == "") != (key == "") {
		set := "tls_cert"
		if cert == "" {
			set = "tls_key"
		}
		return nil, inAttr(set, errors.New("amqp: target tls_cert and tls_key go together: set both for a client certificate, or neither"))
	}
	if cert != "" {
		pair, err := tls.X509KeyPair([]byte(cert), []byte(key))
		if err != nil {
			return nil, inAttr("tls_cert", fmt.Errorf("amqp: target tls_cert and tls_key: %v", err))
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// redact hides a URL's password in messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// topology walks a list-of-objects attribute (exchanges, queues,
// bindings), checking that each element is an object with only the known
// keys; each element's fields are then read with the element's own name in
// messages, such as queues[1].durable.
func topology(list cty.Value, attr string, keys []string, each func(obj cty.Value, where string) error) error {
	if list.IsNull() {
		return nil
	}
	if !list.IsWhollyKnown() || !(list.Type().IsListType() || list.Type().IsTupleType() || list.Type().IsSetType()) {
		return fmt.Errorf("amqp: target %s must be a list of objects, such as %s", attr, topologyExample[attr])
	}
	i := 0
	for it := list.ElementIterator(); it.Next(); i++ {
		_, e := it.Element()
		e, _ = e.UnmarkDeep()
		where := fmt.Sprintf("%s[%d]", attr, i)
		if e.IsNull() || !(e.Type().IsObjectType() || e.Type().IsMapType()) {
			return fmt.Errorf("amqp: target %s must be an object, such as %s", where, topologyExample[attr])
		}
		for it := e.ElementIterator(); it.Next(); {
			k, _ := it.Element()
			if !slices.Contains(keys, k.AsString()) {
				return fmt.Errorf("amqp: target %s has no attribute %q; known: %s", where, k.AsString(), strings.Join(keys, ", "))
			}
		}
		if err := each(e, where); err != nil {
			return err
		}
	}
	return nil
}

var topologyExample = map[string]string{
	"exchanges": `[{ name = "logs", type = "topic", durable = true }]`,
	"queues":    `[{ name = "logs", durable = true }]`,
	"bindings":  `[{ exchange = "logs", queue = "logs", routing_key = "#" }]`,
}

func parseExchanges(list cty.Value) ([]exchangeDecl, error) {
	var out []exchangeDecl
	err := topology(list, "exchanges", []string{"name", "type", "durable", "auto_delete", "internal", "arguments"}, func(e cty.Value, where string) error {
		d := exchangeDecl{kind: "direct"}
		var err error
		if d.name, err = requiredString(e, where, "name"); err != nil {
			return err
		}
		if s, err := stringAttr(e, "type"); err != nil {
			return fmt.Errorf("amqp: target %s: %w", where, err)
		} else if s != "" {
			d.kind = s
		}
		for _, b := range []struct {
			name string
			dst  *bool
		}{{"durable", &d.durable}, {"auto_delete", &d.autoDelete}, {"internal", &d.internal}} {
			if err := boolAttr(e, "target "+where, b.name, b.dst); err != nil {
				return err
			}
		}
		if d.args, err = tableAttr(e, "target "+where, "arguments"); err != nil {
			return err
		}
		out = append(out, d)
		return nil
	})
	return out, err
}

func parseQueues(list cty.Value) ([]queueDecl, error) {
	var out []queueDecl
	err := topology(list, "queues", []string{"name", "durable", "auto_delete", "exclusive", "arguments"}, func(e cty.Value, where string) error {
		var d queueDecl
		var err error
		if d.name, err = requiredString(e, where, "name"); err != nil {
			return err
		}
		for _, b := range []struct {
			name string
			dst  *bool
		}{{"durable", &d.durable}, {"auto_delete", &d.autoDelete}, {"exclusive", &d.exclusive}} {
			if err := boolAttr(e, "target "+where, b.name, b.dst); err != nil {
				return err
			}
		}
		if d.args, err = tableAttr(e, "target "+where, "arguments"); err != nil {
			return err
		}
		out = append(out, d)
		return nil
	})
	return out, err
}

func parseBindings(list cty.Value) ([]bindingDecl, error) {
	var out []bindingDecl
	err := topology(list, "bindings", []string{"exchange", "queue", "routing_key", "arguments"}, func(e cty.Value, where string) error {
		var d bindingDecl
		var err error
		if d.exchange, err = requiredString(e, where, "exchange"); err != nil {
			return err
		}
		if d.queue, err = requiredString(e, where, "queue"); err != nil {
			return err
		}
		if d.key, err = stringAttr(e, "routing_key"); err != nil {
			return fmt.Errorf("amqp: target %s: %w", where, err)
		}
		if d.args, err = tableAttr(e, "target "+where, "arguments"); err != nil {
			return err
		}
		out = append(out, d)
		return nil
	})
	return out, err
}

func requiredString(obj cty.Value, where, name string) (string, error) {
	s, err := stringAttr(obj, name)
	if err != nil {
		return "", fmt.Errorf("amqp: target %s: %w", where, err)
	}
	if s == "" {
		return "", fmt.Errorf("amqp: target %s.%s is required and must not be empty", where, name)
	}
	return s, nil
}

// The readers below take the value's owner ("target", "request", or
// "target queues[0]") so that a message names the attribute in the user's
// terms.

func stringAttr(obj cty.Value, name string) (string, error) {
	v, err := protocols.StringAttr(obj, name)
	if err != nil {
		return "", fmt.Errorf("amqp: %w", err)
	}
	return v, nil
}

func boolAttr(obj cty.Value, owner, name string, dst *bool) error {
	v := protocols.Attr(obj, name)
	if v.IsNull() {
		return nil
	}
	c, err := convert.Convert(v, cty.Bool)
	if err != nil || !c.IsKnown() || c.IsNull() {
		return fmt.Errorf("amqp: %s %s must be a bool", owner, name)
	}
	*dst = c.True()
	return nil
}

func intAttr(obj cty.Value, owner, name string, lo, hi int, dst *int) error {
	v := protocols.Attr(obj, name)
	if v.IsNull() {
		return nil
	}
	c, err := convert.Convert(v, cty.Number)
	if err != nil || !c.IsKnown() || c.IsNull() {
		return fmt.Errorf("amqp: %s %s must be a number", owner, name)
	}
	bf := c.AsBigFloat()
	if !bf.IsInt() || bf.Cmp(big.NewFloat(float64(lo))) < 0 || bf.Cmp(big.NewFloat(float64(hi))) > 0 {
		return fmt.Errorf("amqp: %s %s must be a whole number from %d to %d, not %s", owner, name, lo, hi, bf.Text('g', -1))
	}
	n, _ := bf.Int64()
	*dst = int(n)
	return nil
}

func durationAttr(obj cty.Value, owner, name string, dst *time.Duration) error {
	s, err := stringAttr(obj, name)
	if err != nil {
		return err
	}
	if s == "" {
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("amqp: %s %s %q must be a positive duration such as \"10s\"", owner, name, s)
	}
	*dst = d
	return nil
}

// tableAttr converts an object or map attribute into an AMQP field table:
// strings, bools, whole numbers (int64), other numbers (float64), and
// nested lists and objects.
func tableAttr(obj cty.Value, owner, name string) (amqp.Table, error) {
	v := protocols.Attr(obj, name)
	if v.IsNull() {
		return nil, nil
	}
	if !v.IsWhollyKnown() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return nil, fmt.Errorf("amqp: %s %s must be an object, such as { \"x-queue-type\" = \"quorum\" }", owner, name)
	}
	v, _ = v.UnmarkDeep()
	t := amqp.Table{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		f, err := fieldValue(e)
		if err != nil {
			return nil, fmt.Errorf("amqp: %s %s[%q]: %v", owner, name, k.AsString(), err)
		}
		if f != nil {
			t[k.AsString()] = f
		}
	}
	return t, nil
}

func fieldValue(v cty.Value) (any, error) {
	if v.IsNull() {
		return nil, nil
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return v.AsString(), nil
	case ty == cty.Bool:
		return v.True(), nil
	case ty == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			if n, acc := bf.Int64(); acc == big.Exact {
				return n, nil
			}
		}
		f, _ := bf.Float64()
		return f, nil
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		var out []any
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			f, err := fieldValue(e)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
		return out, nil
	case ty.IsObjectType() || ty.IsMapType():
		t := amqp.Table{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			f, err := fieldValue(e)
			if err != nil {
				return nil, err
			}
			t[k.AsString()] = f
		}
		return t, nil
	}
	return nil, fmt.Errorf("a %s cannot be an AMQP field", ty.FriendlyName())
}
