package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The notification service's delivery modes: the before and after of
// field report 3. Sequential sends each notification to the user's
// subscribers inside the POST, so the POST waits for every subscriber;
// pool hands it to a small pool of workers and answers at once, or with
// 429 when the pool's queue is full.
const (
	DeliverySequential = "sequential"
	DeliveryPool       = "pool"
)

// Defaults of the notification options.
const (
	DefaultNotificationWorkers = 4
	DefaultNotificationQueue   = 1024
)

// subscriberWriteTimeout bounds one write to a subscriber, so that a
// subscriber that stopped reading cannot hold a sender (or a worker) for
// ever; the write then counts as failed.
const subscriberWriteTimeout = 5 * time.Second

// notifier is the notification service: subscribers per user, and counts
// of what it delivered, so that a load test's received and missed events
// can be checked against the server's own figures.
type notifier struct {
	mode      atomic.Value // string: DeliverySequential or DeliveryPool
	workers   int32
	dropEvery int64

	mu    sync.Mutex
	users map[string]*userSubscribers

	nextID  atomic.Int64
	queue   chan notification
	running atomic.Int32 // workers running; they start on demand, end when idle

	deliveries atomic.Int64 // attempts, for dropEvery
	delivered  atomic.Int64
	failed     atomic.Int64
	dropped    atomic.Int64
	rejected   atomic.Int64 // notifications refused with 429
}

type userSubscribers struct {
	subs      map[*subscriber]struct{}
	delivered int64
	failed    int64
}

// subscriber is one open stream. mu serialises writes, which come from
// senders and workers, and dead stops them before the handler returns.
type subscriber struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	rc   *http.ResponseController
	dead bool
}

// notification is one event for one user's subscribers.
type notification struct {
	user string
	id   int64
	data []byte
}

func newNotifier(opts Options) *notifier {
	n := &notifier{
		workers:   int32(opts.NotificationWorkers),
		dropEvery: int64(opts.NotificationDropEvery),
		users:     map[string]*userSubscribers{},
	}
	if n.workers <= 0 {
		n.workers = DefaultNotificationWorkers
	}
	q := opts.NotificationQueue
	if q <= 0 {
		q = DefaultNotificationQueue
	}
	n.queue = make(chan notification, q)
	mode := opts.NotificationDelivery
	if mode == "" {
		mode = DeliveryPool
	}
	n.mode.Store(mode)
	return n
}

// validDelivery reports whether mode is a delivery mode.
func validDelivery(mode string) bool { return mode == DeliverySequential || mode == DeliveryPool }

// subscribe serves GET /api/notification/subscribe/{userId}: an event
// stream of the user's notifications, held until the client leaves.
func (n *notifier) subscribe(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("userId")
	if user == "" {
		http.Error(w, "userId is required", http.StatusBadRequest)
		return
	}
	rc := http.NewResponseController(w)
	// A stream outlives the server's read and write timeouts by design.
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	// A comment, so that the client sees the stream open at once; the
	// subscriber is registered before, so nothing sent after it is lost.
	sub := &subscriber{w: w, rc: rc}
	n.mu.Lock()
	u := n.users[user]
	if u == nil {
		u = &userSubscribers{subs: map[*subscriber]struct{}{}}
		n.users[user] = u
	}
	u.subs[sub] = struct{}{}
	n.mu.Unlock()
	sub.mu.Lock()
	io.WriteString(w, ": subscribed\n\n")
	rc.Flush()
	sub.mu.Unlock()

	<-r.Context().Done()
	n.mu.Lock()
	delete(u.subs, sub)
	n.mu.Unlock()
	sub.mu.Lock()
	sub.dead = true
	sub.mu.Unlock()
}

// send serves POST /api/notification/send with a JSON body that has a
// userId. The body is the event's data, as received.
func (n *notifier) send(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "cannot read the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var msg struct {
		UserID json.RawMessage `json:"userId"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || len(msg.UserID) == 0 {
		http.Error(w, `the body must be a JSON object with a userId, such as {"userId": 3, "message": "hi"}`, http.StatusBadRequest)
		return
	}
	user := strings.Trim(string(msg.UserID), `"`)
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		http.Error(w, "invalid JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	note := notification{user: user, id: n.nextID.Add(1), data: compact.Bytes()}
	w.Header().Set("Content-Type", "application/json")
	if n.mode.Load().(string) == DeliverySequential {
		sent, failed := n.deliver(note)
		if failed > 0 {
			w.WriteHeader(http.StatusInternalServerError)
		}
		fmt.Fprintf(w, `{"id":%d,"delivered":%d,"failed":%d}`, note.id, sent, failed)
		return
	}
	select {
	case n.queue <- note:
	default:
		n.rejected.Add(1)
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, `{"error":"the delivery queue is full"}`)
		return
	}
	n.startWorker()
	fmt.Fprintf(w, `{"id":%d,"queued":true}`, note.id)
}

// startWorker starts a worker unless the pool is full. Workers end when
// the queue is empty, so an idle demo keeps no goroutine.
func (n *notifier) startWorker() {
	for {
		r := n.running.Load()
		if r >= n.workers {
			return
		}
		if n.running.CompareAndSwap(r, r+1) {
			go n.work()
			return
		}
	}
}

func (n *notifier) work() {
	for {
		select {
		case note := <-n.queue:
			n.deliver(note)
			continue
		default:
		}
		n.running.Add(-1)
		// A notification queued while this worker was leaving, when the
		// pool looked full to its sender, must still find a worker.
		if len(n.queue) == 0 {
			return
		}
		r := n.running.Load()
		if r >= n.workers || !n.running.CompareAndSwap(r, r+1) {
			return
		}
	}
}

// deliver writes note to each current subscriber of its user.
func (n *notifier) deliver(note notification) (sent, failed int) {
	n.mu.Lock()
	u := n.users[note.user]
	var subs []*subscriber
	if u != nil {
		subs = make([]*subscriber, 0, len(u.subs))
		for s := range u.subs {
			subs = append(subs, s)
		}
	}
	n.mu.Unlock()
	frame := make([]byte, 0, len(note.data)+32)
	frame = append(frame, "id: "...)
	frame = strconv.AppendInt(frame, note.id, 10)
	frame = append(frame, "\ndata: "...)
	frame = append(frame, note.data...)
	frame = append(frame, "\n\n"...)
	for _, s := range subs {
		if n.dropEvery > 0 && n.deliveries.Add(1)%n.dropEvery == 0 {
			n.dropped.Add(1)
			failed++
			continue
		}
		if s.write(frame) {
			sent++
		} else {
			failed++
		}
	}
	n.delivered.Add(int64(sent))
	n.failed.Add(int64(failed))
	if u != nil && len(subs) > 0 {
		n.mu.Lock()
		u.delivered += int64(sent)
		u.failed += int64(failed)
		n.mu.Unlock()
	}
	return sent, failed
}

// write sends one frame; false if the subscriber is gone or the write
// failed. A subscriber that left is not counted as a failure by its caller
// only if it left before: a write that fails is a delivery that failed.
func (s *subscriber) write(frame []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return false
	}
	s.rc.SetWriteDeadline(time.Now().Add(subscriberWriteTimeout))
	if _, err := s.w.Write(frame); err != nil {
		s.dead = true
		return false
	}
	if err := s.rc.Flush(); err != nil {
		s.dead = true
		return false
	}
	return true
}

// NotificationStats are the notification service's own counts, served
// by GET /api/notification/stats.
type NotificationStats struct {
	Delivery    string                    `json:"delivery"`
	Delivered   int64                     `json:"delivered"`
	Failed      int64                     `json:"failed"`  // writes that failed, and deliveries dropped on purpose
	Dropped     int64                     `json:"dropped"` // of Failed: dropped by NotificationDropEvery
	Rejected    int64                     `json:"rejected"`
	Subscribers int                       `json:"subscribers"`
	Users       map[string]UserDeliveries `json:"users"`
}

// UserDeliveries are the counts of one user's subscribers.
type UserDeliveries struct {
	Subscribers int   `json:"subscribers"`
	Delivered   int64 `json:"delivered"`
	Failed      int64 `json:"failed"`
}

func (n *notifier) stats(w http.ResponseWriter, _ *http.Request) {
	st := NotificationStats{
		Delivery:  n.mode.Load().(string),
		Delivered: n.delivered.Load(),
		Failed:    n.failed.Load(),
		Dropped:   n.dropped.Load(),
		Rejected:  n.rejected.Load(),
		Users:     map[string]UserDeliveries{},
	}
	n.mu.Lock()
	for name, u := range n.users {
		st.Subscribers += len(u.subs)
		st.Users[name] = UserDeliveries{Subscribers: len(u.subs), Delivered: u.delivered, Failed: u.failed}
	}
	n.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(st)
}

// setDelivery serves PUT /api/notification/delivery with a body of
// "sequential" or "pool", so that the before and after can be compared
// against one running demo.
func (n *notifier) setDelivery(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 64))
	mode := strings.Trim(strings.TrimSpace(string(b)), `"`)
	if !validDelivery(mode) {
		http.Error(w, `the body must be "sequential" or "pool"`, http.StatusBadRequest)
		return
	}
	n.mode.Store(mode)
	w.WriteHeader(http.StatusNoContent)
}
