package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// stream subscribes to user's notifications and returns the data lines
// it reads, one per event.
func stream(t *testing.T, ctx context.Context, base, user string) <-chan string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/notification/subscribe/"+user, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("subscribe: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	out := make(chan string, 100)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				out <- data
			}
		}
	}()
	return out
}

func stats(t *testing.T, base string) NotificationStats {
	t.Helper()
	resp, err := http.Get(base + "/api/notification/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st NotificationStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func post(t *testing.T, base, body string) int {
	t.Helper()
	resp, err := http.Post(base+"/api/notification/send", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestNotificationsReachTheUsersSubscribers(t *testing.T) {
	for _, mode := range []string{DeliverySequential, DeliveryPool} {
		t.Run(mode, func(t *testing.T) {
			srv := httptest.NewServer(NewHandler(Options{NotificationDelivery: mode}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			a, b, other := stream(t, ctx, srv.URL, "1"), stream(t, ctx, srv.URL, "1"), stream(t, ctx, srv.URL, "2")
			for st := stats(t, srv.URL); st.Subscribers != 3; st = stats(t, srv.URL) {
				time.Sleep(time.Millisecond) // the handlers register as they start
			}
			for i := range 3 {
				if code := post(t, srv.URL, fmt.Sprintf(`{"userId": 1, "message": "m%d"}`, i)); code != 200 {
					t.Fatalf("send: status %d", code)
				}
			}
			// Sequential delivery keeps the order of the sends; the pool's
			// workers deliver concurrently, so there only the set is sure.
			want := []string{`{"userId":1,"message":"m0"}`, `{"userId":1,"message":"m1"}`, `{"userId":1,"message":"m2"}`}
			for _, ch := range []<-chan string{a, b} {
				var got []string
				for range 3 {
					select {
					case e := <-ch:
						got = append(got, e)
					case <-ctx.Done():
						t.Fatal("an event did not arrive")
					}
				}
				if mode == DeliveryPool {
					slices.Sort(got)
				}
				if !slices.Equal(got, want) {
					t.Errorf("events %q, want %q", got, want)
				}
			}
			// In pool mode a worker counts a delivery after its write, so
			// the subscribers can read an event before it is counted: wait,
			// boundedly, for the count to settle before comparing.
			st := stats(t, srv.URL)
			for deadline := time.Now().Add(2 * time.Second); st.Delivered < 6 && time.Now().Before(deadline); st = stats(t, srv.URL) {
				time.Sleep(5 * time.Millisecond)
			}
			if st.Delivery != mode || st.Delivered != 6 || st.Failed != 0 || st.Users["1"].Delivered != 6 || st.Users["2"].Delivered != 0 {
				t.Errorf("stats %+v", st)
			}
			select {
			case got := <-other:
				t.Errorf("user 2 got %s", got)
			default:
			}
		})
	}
}

func TestNotificationDropsAndErrors(t *testing.T) {
	srv := httptest.NewServer(NewHandler(Options{NotificationDelivery: DeliverySequential, NotificationDropEvery: 2}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events := stream(t, ctx, srv.URL, "u")
	for st := stats(t, srv.URL); st.Subscribers != 1; st = stats(t, srv.URL) {
		time.Sleep(time.Millisecond)
	}
	codes := map[int]int{}
	for i := range 4 {
		codes[post(t, srv.URL, fmt.Sprintf(`{"userId": "u", "n": %d}`, i))]++
	}
	// Every second delivery is dropped, and a sequential send that failed
	// answers 500, as the service of field report 3 did.
	if codes[200] != 2 || codes[500] != 2 {
		t.Errorf("statuses %v, want two 200 and two 500", codes)
	}
	for range 2 {
		<-events
	}
	if st := stats(t, srv.URL); st.Delivered != 2 || st.Failed != 2 || st.Dropped != 2 {
		t.Errorf("stats %+v", st)
	}
	for _, body := range []string{`{"message": "no user"}`, `not json`} {
		if code := post(t, srv.URL, body); code != 400 {
			t.Errorf("send %s: status %d, want 400", body, code)
		}
	}
	req, _ := http.NewRequest("PUT", srv.URL+"/api/notification/delivery", strings.NewReader("pool"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("switch to pool: %v %v", resp, err)
	}
	if st := stats(t, srv.URL); st.Delivery != DeliveryPool {
		t.Errorf("delivery %q after the switch", st.Delivery)
	}
}
