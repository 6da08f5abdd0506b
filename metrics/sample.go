package metrics

import "time"

// Sample is one measurement: what a protocol's call emits, and what the
// aggregator folds. protocols.Sample is this type, under the name
// protocol authors know. The Call fields named below are protocols'.
type Sample struct {
	Metric string
	Time   time.Time     // when the measurement ended
	Value  time.Duration // the measured time, taken with a monotonic clock
	Status int           // protocol status (HTTP status code); 0 when none
	Error  ErrorKind
	// BytesSent and BytesReceived count the wire bytes of the call,
	// including headers; set on the request sample.
	BytesSent     int64
	BytesReceived int64
	// Body is the response body, set only on the request sample when
	// Call.KeepBody is true, and valid only during emit. When the body
	// was longer than Call.MaxBody, Body is its first MaxBody bytes.
	Body []byte
	// BodySize is the length of the whole body, kept or not, set with
	// Body by a protocol that bounds it: more than len(Body) says the body
	// was cut at Call.MaxBody. 0 from a protocol that does not say:
	// len(Body) is then the body's length.
	BodySize int64
	// BodyFound says, for each of Call.BodyContains in order, whether the
	// body held it, from a BodySearcher; valid only during emit. nil when
	// the protocol did not look, so the core looks in Body.
	BodyFound []bool
	// Headers are the response's headers (an HTTP response's, an AMQP
	// reply's properties and headers), set only on the request sample when
	// Call.KeepHeaders is true, and valid only during emit. Keys are as
	// the protocol names them (HTTP: canonical MIME form); the core looks
	// them up without regard to case. A header sent several times, such as
	// Set-Cookie, has one value per line.
	Headers map[string][]string
	// Message says why the call failed, in a few words the user can act
	// on ("timeout \"fast\" is not a duration"); set only with Error, and
	// optional. The core keeps the first messages of each kind for the
	// summary.
	Message string
}

// ErrorKind classifies a failed call. The empty kind means success.
// protocols.ErrorKind is this type, and protocols.Err... these kinds.
type ErrorKind string

// The error kinds. A failed check is not an error; it is counted apart.
const (
	ErrNone              ErrorKind = ""
	ErrTimeout           ErrorKind = "timeout"
	ErrConnectionRefused ErrorKind = "connection_refused"
	ErrReset             ErrorKind = "reset"
	ErrDNS               ErrorKind = "dns"
	ErrTLS               ErrorKind = "tls"
	ErrProtocol          ErrorKind = "protocol"
	// ErrInterrupted marks a call cancelled by the end of the run, after the
	// graceful stop ran out, or by an abort.
	ErrInterrupted ErrorKind = "interrupted"
	// ErrIdleClosed marks a request that went out on a keep-alive
	// connection the server had already closed, and failed before any
	// byte of a response: the server most likely never saw it. It is
	// counted as a failed attempt of its own; a retry is a new attempt.
	ErrIdleClosed ErrorKind = "idle_closed"
	// ErrPanic marks a call whose Do panicked and was recovered (a
	// plugin's, by the SDK): a bug in the protocol, which hload warns of.
	ErrPanic ErrorKind = "panic"
)
