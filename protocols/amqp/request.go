package amqp

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/hload/hload/protocols"
)

// kind is what a request does.
type kind uint8

const (
	kindPublish kind = iota + 1
	kindConsume
	kindRPC
)

var kindNames = map[string]kind{"publish": kindPublish, "consume": kindConsume, "rpc": kindRPC}

// request is one call's values, validated.
type request struct {
	kind kind

	// publish and rpc
	exchange    string
	routingKey  string
	body        []byte
	headers     [][2]string
	contentType string
	messageID   string
	persistent  bool
	mandatory   bool
	confirm     bool

	// consume
	queue    string
	prefetch int
	autoAck  bool
	duration time.Duration // 0: until messages, or the end of the scenario
	messages int           // 0: no limit
	reply    []byte        // answer messages that carry reply_to with this body
	hasReply bool

	timeout time.Duration // publish's confirm wait, rpc's reply wait
}

// Which attributes each kind takes, for the message that names a misplaced
// one.
var kindAttrs = map[kind][]string{
	kindPublish: {"kind", "exchange", "routing_key", "body", "json", "headers", "content_type", "message_id", "persistent", "mandatory", "confirm", "timeout"},
	kindConsume: {"kind", "queue", "prefetch", "auto_ack", "duration", "messages", "reply"},
	kindRPC:     {"kind", "exchange", "routing_key", "body", "json", "headers", "content_type", "message_id", "persistent", "mandatory", "timeout"},
}

func parseRequest(r cty.Value) (*request, error) {
	name, err := stringAttr(r, "kind")
	if err != nil {
		return nil, err
	}
	k, ok := kindNames[name]
	if !ok {
		return nil, fmt.Errorf("amqp: request kind %q must be publish, consume or rpc", name)
	}
	if r.Type().IsObjectType() {
		// Sorted, so that the same mistake gets the same message.
		for _, attr := range slices.Sorted(maps.Keys(r.Type().AttributeTypes())) {
			if !protocols.Attr(r, attr).IsNull() && !slices.Contains(kindAttrs[k], attr) {
				return nil, fmt.Errorf("amqp: request %s does not apply to kind %q; it takes %s", attr, name, strings.Join(kindAttrs[k][1:], ", "))
			}
		}
	}
	q := &request{kind: k, confirm: true, prefetch: DefaultPrefetch, timeout: DefaultTimeout}
	if err := durationAttr(r, "request", "timeout", &q.timeout); err != nil {
		return nil, err
	}
	switch k {
	case kindPublish, kindRPC:
		err = q.parseMessage(r)
	case kindConsume:
		err = q.parseConsume(r)
	}
	if err != nil {
		return nil, err
	}
	return q, nil
}

func (q *request) parseMessage(r cty.Value) error {
	var err error
	if q.exchange, err = stringAttr(r, "exchange"); err != nil {
		return err
	}
	if q.routingKey, err = stringAttr(r, "routing_key"); err != nil {
		return err
	}
	if q.exchange == "" && q.routingKey == "" {
		return errors.New("amqp: request needs exchange or routing_key (a queue's name, through the default exchange)")
	}
	body, json := protocols.Attr(r, "body"), protocols.Attr(r, "json")
	switch {
	case !body.IsNull() && !json.IsNull():
		return errors.New("amqp: request sets both body and json; set one")
	case !body.IsNull():
		s, err := stringAttr(r, "body")
		if err != nil {
			return err
		}
		q.body = []byte(s)
	case !json.IsNull():
		if !json.IsWhollyKnown() {
			return errors.New("amqp: request json is not known")
		}
		json, _ = json.UnmarkDeep()
		b, err := ctyjson.Marshal(json, json.Type())
		if err != nil {
			return fmt.Errorf("amqp: request json: %v", err)
		}
		q.body, q.contentType = b, "application/json"
	}
	if h := protocols.Attr(r, "headers"); !h.IsNull() {
		if !h.IsWhollyKnown() || !(h.Type().IsMapType() || h.Type().IsObjectType()) {
			return errors.New("amqp: request headers must be a map of strings")
		}
		for it := h.ElementIterator(); it.Next(); {
			k, v := it.Element()
			v, _ = v.Unmark()
			if v.IsNull() {
				continue
			}
			if v.Type() != cty.String {
				return fmt.Errorf("amqp: request headers[%q] must be a string", k.AsString())
			}
			if k.AsString() == HeaderSentAt {
				return fmt.Errorf("amqp: request headers[%q] is set by hload at publish", HeaderSentAt)
			}
			q.headers = append(q.headers, [2]string{k.AsString(), v.AsString()})
		}
	}
	if s, err := stringAttr(r, "content_type"); err != nil {
		return err
	} else if s != "" {
		q.contentType = s
	}
	if q.messageID, err = stringAttr(r, "message_id"); err != nil {
		return err
	}
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"persistent", &q.persistent}, {"mandatory", &q.mandatory}, {"confirm", &q.confirm}} {
		if err := boolAttr(r, "request", b.name, b.dst); err != nil {
			return err
		}
	}
	return nil
}

func (q *request) parseConsume(r cty.Value) error {
	var err error
	if q.queue, err = stringAttr(r, "queue"); err != nil {
		return err
	}
	if q.queue == "" {
		return errors.New("amqp: request kind \"consume\" needs queue")
	}
	if err := intAttr(r, "request", "prefetch", 0, 65535, &q.prefetch); err != nil {
		return err
	}
	if err := boolAttr(r, "request", "auto_ack", &q.autoAck); err != nil {
		return err
	}
	if err := durationAttr(r, "request", "duration", &q.duration); err != nil {
		return err
	}
	if err := intAttr(r, "request", "messages", 1, 1<<31-1, &q.messages); err != nil {
		return err
	}
	if v := protocols.Attr(r, "reply"); !v.IsNull() {
		s, err := stringAttr(r, "reply")
		if err != nil {
			return err
		}
		q.reply, q.hasReply = []byte(s), true
	}
	return nil
}

// publishing builds the message, stamping it with the send time.
func (q *request) publishing(now time.Time) amqp.Publishing {
	h := make(amqp.Table, len(q.headers)+1)
	for _, kv := range q.headers {
		h[kv[0]] = kv[1]
	}
	h[HeaderSentAt] = now.UnixNano()
	m := amqp.Publishing{
		Headers:     h,
		ContentType: q.contentType,
		MessageId:   q.messageID,
		Body:        q.body,
	}
	if q.persistent {
		m.DeliveryMode = amqp.Persistent
	}
	return m
}
