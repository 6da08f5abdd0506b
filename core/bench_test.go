package core

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkIteration measures the per-request hot path: pick a request by
// weight, evaluate its expressions, execute it against a loopback server
// and record the samples.
func BenchmarkIteration(b *testing.B) {
	body := []byte("012345678901234567890123456789012345678901234567890123456789") // 60 bytes, a small API answer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body)
	}))
	defer srv.Close()
	for _, bc := range []struct {
		name, path string
	}{
		{"static", `"/static"`},
		{"dynamic", `"/item/${vu.id}/${random_int(1, 1000)}"`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			test := loadTest(b, loopbackTarget+`scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "a" {
    weight = 3
    path   = `+bc.path+`
  }
  request "b" {
    weight = 1
    path   = "/b"
    check {
      status = [200]
    }
  }
}
`, map[string]string{"base_url": srv.URL})
			sc := benchScenarioRun(b, test)
			v := sc.acquire()
			ctx := context.Background()
			v.runIteration(ctx, time.Time{}) // warm the VU's connection
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				v.runIteration(ctx, time.Time{})
			}
		})
	}
}
