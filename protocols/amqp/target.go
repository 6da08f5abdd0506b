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
		return nil, err
	}
	if raw == "" {
		return nil, errors.New("amqp: target url is required, such as url = \"amqp://guest:guest@127.0.0.1:5672/\"")
	}
	uri, err := amqp.ParseURI(raw)
	if err != nil {
		return nil, fmt.Errorf("amqp: target url %q: %v", redact(raw), err)
	}
	cfg.url = raw

	ca, err := stringAttr(target, "tls_ca")
	if err != nil {
		return nil, err
	}
	cert, err := stringAttr(target, "tls_cert")
	if err != nil {
		return nil, err
	}
	key, err := stringAttr(target, "tls_key")
	if err != nil {
		return nil, err
	}
	serverName, err := stringAttr(target, "tls_server_name")
	if err != nil {
		return nil, err
	}
	insecure := false
	if err := boolAttr(target, "target", "insecure_skip_verify", &insecure); err != nil {
		return nil, err
	}
	if uri.Scheme == "amqps" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName, InsecureSkipVerify: insecure} //nolint:gosec // the user's explicit choice
		if tc.ServerName == "" {
			tc.ServerName = uri.Host
		}
		if ca != "" {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM([]byte(ca)) {
				return nil, errors.New("amqp: target tls_ca holds no PEM certificate; pass its content, such as tls_ca = file(\"ca.pem\")")
			}
			tc.RootCAs = pool
		}
		if (cert == "") != (key == "") {
			return nil, errors.New("amqp: target tls_cert and tls_key go together: set both for a client certificate, or neither")
		}
		if cert != "" {
			pair, err := tls.X509KeyPair([]byte(cert), []byte(key))
			if err != nil {
				return nil, fmt.Errorf("amqp: target tls_cert and tls_key: %v", err)
			}
			tc.Certificates = []tls.Certificate{pair}
		}
		cfg.tls = tc
	} else if ca != "" || cert != "" || key != "" || serverName != "" || insecure {
		return nil, fmt.Errorf("amqp: target tls_* and insecure_skip_verify need an amqps:// url; url %q is plain amqp", redact(raw))
	}

	if err := intAttr(target, "target", "channels", 1, 2047, &cfg.channels); err != nil {
		return nil, err
	}
	if err := durationAttr(target, "target", "heartbeat", &cfg.heartbeat); err != nil {
		return nil, err
	}
	if err := durationAttr(target, "target", "reconnect_wait", &cfg.reconnectWait); err != nil {
		return nil, err
	}
	if s, err := stringAttr(target, "connection_name"); err != nil {
		return nil, err
	} else if s != "" {
		cfg.name = s
	}
	if cfg.exchanges, err = parseExchanges(protocols.Attr(target, "exchanges")); err != nil {
		return nil, err
	}
	if cfg.queues, err = parseQueues(protocols.Attr(target, "queues")); err != nil {
		return nil, err
	}
	if cfg.bindings, err = parseBindings(protocols.Attr(target, "bindings")); err != nil {
		return nil, err
	}
	return cfg, nil
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
