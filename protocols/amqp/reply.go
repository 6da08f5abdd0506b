package amqp

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The names under which an rpc's reply hands its properties to captures
// (protocols.Sample.Headers): AMQP 0-9-1's property names, spelt as
// hload's request attributes spell content_type and message_id.
const (
	PropContentType     = "content_type"
	PropContentEncoding = "content_encoding"
	PropDeliveryMode    = "delivery_mode"
	PropPriority        = "priority"
	PropCorrelationID   = "correlation_id"
	PropReplyTo         = "reply_to"
	PropExpiration      = "expiration"
	PropMessageID       = "message_id"
	PropTimestamp       = "timestamp"
	PropType            = "type"
	PropUserID          = "user_id"
	PropAppID           = "app_id"
)

// replyHeaders returns what captures read as an rpc reply's headers: the
// properties the reply carries, then its headers table with each value as
// text. A table entry named as a property comes after the property's value,
// so header(), which takes the first value, reads the property.
func replyHeaders(d *amqp.Delivery) map[string][]string {
	h := make(map[string][]string, len(d.Headers)+4)
	add := func(name, value string) {
		if value != "" {
			h[name] = append(h[name], value)
		}
	}
	add(PropContentType, d.ContentType)
	add(PropContentEncoding, d.ContentEncoding)
	if d.DeliveryMode != 0 {
		add(PropDeliveryMode, strconv.Itoa(int(d.DeliveryMode)))
	}
	if d.Priority != 0 {
		add(PropPriority, strconv.Itoa(int(d.Priority)))
	}
	add(PropCorrelationID, d.CorrelationId)
	add(PropReplyTo, d.ReplyTo)
	add(PropExpiration, d.Expiration)
	add(PropMessageID, d.MessageId)
	if !d.Timestamp.IsZero() {
		add(PropTimestamp, tableText(d.Timestamp))
	}
	add(PropType, d.Type)
	add(PropUserID, d.UserId)
	add(PropAppID, d.AppId)
	for k, v := range d.Headers {
		// An empty value is kept: the header is there, and says "".
		h[k] = append(h[k], tableText(v))
	}
	return h
}

// tableText writes an AMQP field value as text: a string or bytes as they
// are, a number in decimal, a timestamp in RFC 3339 (UTC, to the second, as
// AMQP keeps it), void as "", and an array or a nested table as JSON.
func tableText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case amqp.Decimal:
		return decimalText(v)
	case time.Time:
		return v.UTC().Format(time.RFC3339)
	case []any, amqp.Table:
		b, err := json.Marshal(jsonValue(v))
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
	// Booleans and numbers of every width: fmt writes them as Go does,
	// floats in their shortest exact form.
	return fmt.Sprint(v)
}

// decimalText writes d's value, d.Value / 10^d.Scale, exactly.
func decimalText(d amqp.Decimal) string {
	r := new(big.Rat).SetFrac(big.NewInt(int64(d.Value)), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))
	return r.FloatString(int(d.Scale))
}

// jsonValue turns a field value into what encoding/json writes as the value
// means: bytes and timestamps as their text, tables as objects.
func jsonValue(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = jsonValue(e)
		}
		return out
	case amqp.Table:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = jsonValue(e)
		}
		return out
	case []byte, time.Time:
		return tableText(v)
	case amqp.Decimal:
		return json.Number(decimalText(v))
	}
	return v
}
