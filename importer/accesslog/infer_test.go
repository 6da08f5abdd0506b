package accesslog

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var t0 = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

// req is a logged request at second sec of the log.
func req(sec int, method, target string, status int) Entry {
	e := Entry{Time: t0.Add(time.Duration(sec) * time.Second), Status: status}
	setTarget(&e, method, target)
	return e
}

// templates is Infer's templates as "METHOD DISPLAY COUNT", in order.
func templates(r *Result) []string {
	var out []string
	for _, t := range r.Templates {
		out = append(out, fmt.Sprintf("%s %s %d", t.Method, t.Display, t.Count))
	}
	return out
}

func TestInferTemplates(t *testing.T) {
	cases := []struct {
		name     string
		entries  []Entry
		minShare float64
		want     []string
		notes    []string // each in one note
	}{
		{"numeric ids collapse", []Entry{
			req(0, "GET", "/products/1", 200), req(0, "GET", "/products/1999", 200), req(1, "GET", "/products/7", 404),
			req(1, "GET", "/", 200),
		}, 0, []string{"GET /products/{id} 3", "GET / 1"}, nil},
		{"uuids and hex ids collapse; words do not", []Entry{
			req(0, "GET", "/orders/0b6f2c1e-8a55-4d5e-9d5b-6a4f0c1e2d3f/items", 200),
			req(0, "GET", "/orders/11111111-2222-4333-8444-555555555555/items", 200),
			req(0, "GET", "/blob/5f2b7c9e1d3a", 200), req(0, "GET", "/blob/abc123def456", 200),
			req(0, "GET", "/blob/deadbeef", 200), // no digit: a word
		}, 0, []string{"GET /orders/{uuid}/items 2", "GET /blob/{hex} 2", "GET /blob/deadbeef 1"}, nil},
		{"methods apart", []Entry{
			req(0, "GET", "/cart", 200), req(0, "POST", "/cart", 201), req(0, "GET", "/cart", 200),
		}, 0, []string{"GET /cart 2", "POST /cart 1"}, nil},
		{"query names part of the template, their values not", []Entry{
			req(0, "GET", "/products?page=1", 200), req(0, "GET", "/products?page=9", 200),
			req(0, "GET", "/products?page=2&sort=price", 200), req(0, "GET", "/products", 200),
		}, 0, []string{"GET /products?page 2", "GET /products?page&sort 1", "GET /products 1"}, nil},
		{"rare templates fold into their nearest", []Entry{
			req(0, "GET", "/static/app.js", 200), req(0, "GET", "/static/app.js", 200), req(0, "GET", "/static/app.js", 200),
			req(0, "GET", "/static/app.js", 200), req(0, "GET", "/static/app.js", 200), req(0, "GET", "/static/app.js", 200),
			req(0, "GET", "/static/app.js", 200), req(0, "GET", "/static/app.js", 200), req(0, "GET", "/static/app.js", 200),
			req(0, "GET", "/static/logo.png", 200), // 5 %, under 10 %
			req(0, "POST", "/rare", 200),           // 5 %, like nothing
			req(0, "GET", "/", 200), req(0, "GET", "/", 200), req(0, "GET", "/", 200), req(0, "GET", "/", 200),
			req(0, "GET", "/", 200), req(0, "GET", "/", 200), req(0, "GET", "/", 200), req(0, "GET", "/", 200), req(0, "GET", "/", 200),
		}, 0.10, []string{"GET /static/app.js 10", "GET / 9"}, []string{
			"GET /static/logo.png (1 request, 5.0 %) is below --min-share 10.0 %: counted in GET /static/app.js.",
			"POST /rare (1 request, 5.0 %) is below --min-share 10.0 % and like no other template: left out.",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Infer(tc.entries, Options{MinShare: tc.minShare})
			if err != nil {
				t.Fatal(err)
			}
			if got := templates(r); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("templates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for _, n := range tc.notes {
				if !strings.Contains(strings.Join(r.Notes, "\n"), n) {
					t.Errorf("notes lack %q:\n%s", n, strings.Join(r.Notes, "\n"))
				}
			}
		})
	}
}

func TestWeights(t *testing.T) {
	for _, tc := range []struct {
		counts []int
		want   []int
	}{
		{[]int{60, 20, 10, 5, 5}, []int{60, 20, 10, 5, 5}},
		{[]int{6000, 2000, 1000, 500, 500}, []int{6000, 2000, 1000, 500, 500}},
		// Over maxWeightSum: scaled to it, largest remainders first,
		// none below 1.
		{[]int{60003, 20001, 19995, 1}, []int{6000, 2000, 2000, 1}},
		{[]int{333333, 333333, 333334}, []int{3333, 3333, 3334}},
	} {
		t.Run(fmt.Sprint(tc.counts), func(t *testing.T) {
			r := &Result{}
			for _, c := range tc.counts {
				r.Templates = append(r.Templates, &Template{Count: c})
			}
			if got := r.Weights(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("weights %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRate(t *testing.T) {
	// 10 requests a second for 30 s, then 40 a second for 60 s: 90 s in
	// windows of 10 s.
	var entries []Entry
	for s := 0; s < 90; s++ {
		n := 10
		if s >= 30 {
			n = 40
		}
		for i := 0; i < n; i++ {
			entries = append(entries, req(s, "GET", "/", 200))
		}
	}
	for _, tc := range []struct {
		name  string
		scale float64
		want  string
		peak  float64
	}{
		{"as logged", 1, "10s:10 10s:10 10s:10 10s:40 10s:40 10s:40 10s:40 10s:40 10s:40", 40},
		{"scaled", 2.5, "10s:25 10s:25 10s:25 10s:100 10s:100 10s:100 10s:100 10s:100 10s:100", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Infer(entries, Options{Scale: tc.scale})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range r.Rate.Stages {
				got = append(got, fmt.Sprintf("%s:%s", s.Duration, decimal(s.Target)))
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("stages %s\nwant   %s", strings.Join(got, " "), tc.want)
			}
			if r.Rate.Peak != tc.peak || !r.Rate.PeakAt.Equal(t0.Add(30*time.Second)) || r.Rate.Span != 90*time.Second {
				t.Errorf("peak %v at %v over %v, want %v at +30s over 1m30s", r.Rate.Peak, r.Rate.PeakAt, r.Rate.Span, tc.peak)
			}
		})
	}
	t.Run("a day makes 12 stages of 2h", func(t *testing.T) {
		r, _ := Infer([]Entry{req(0, "GET", "/", 200), req(86399, "GET", "/", 200)}, Options{})
		if len(r.Rate.Stages) != 12 || r.Rate.Window != 2*time.Hour {
			t.Errorf("%d stages of %v", len(r.Rate.Stages), r.Rate.Window)
		}
	})
	t.Run("under a minute, the peak is the whole log", func(t *testing.T) {
		r, _ := Infer([]Entry{req(0, "GET", "/", 200), req(0, "GET", "/", 200), req(3, "GET", "/", 200), req(3, "GET", "/", 200)}, Options{})
		if r.Rate.Peak != 1 || r.Rate.PeakWindow != 4*time.Second {
			t.Errorf("peak %v over %v, want 1 over 4s", r.Rate.Peak, r.Rate.PeakWindow)
		}
	})
}

// TestHCL compares the test written for testdata/small.log, with each
// option, to its golden file (go test -update rewrites them).
func TestHCL(t *testing.T) {
	for _, tc := range []struct {
		golden string
		opts   Options
	}{
		{"small.hcl", Options{MinShare: 0.01}},
		{"small-peak.hcl", Options{MinShare: 0.01, Peak: true, Scale: 2}},
		{"small-feeder.hcl", Options{MinShare: 0.01, FeederPrefix: "small-feeder"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			f, err := os.Open("testdata/small.log")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			log, err := Parse(f, "testdata/small.log", FormatAuto)
			if err != nil {
				t.Fatal(err)
			}
			tc.opts.Files, tc.opts.Format = []string{"testdata/small.log"}, log.Format
			r, err := Infer(log.Entries, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{tc.golden: r.HCL()}
			for name, data := range r.Feeders {
				files[name] = data
			}
			for name, got := range files {
				path := filepath.Join("testdata", name)
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (go test -update writes it)", err)
				}
				if string(got) != string(want) {
					t.Errorf("%s differs from what was written (go test -update rewrites it):\n%s", path, got)
				}
			}
		})
	}
}

// TestInferManyRare: a log of many rare paths makes maxNotes notes and
// one that counts the rest, not a note each.
func TestInferManyRare(t *testing.T) {
	var entries []Entry
	for i := 0; i < 50; i++ {
		entries = append(entries, req(0, "GET", "/", 200))
		entries = append(entries, req(0, "GET", fmt.Sprintf("/page-%d/x", i), 200))
	}
	r, err := Infer(entries, Options{MinShare: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Notes) != maxNotes+1 || !strings.Contains(r.Notes[maxNotes], "40 more templates are below --min-share 5.0 % (50 requests below it in all)") {
		t.Errorf("%d notes:\n%s", len(r.Notes), strings.Join(r.Notes, "\n"))
	}
	if got := templates(r); len(got) != 1 || got[0] != "GET / 50" || len(r.Dropped) != 50 {
		t.Errorf("templates %v, %d dropped; want GET / alone, every /page-N/x left out", got, len(r.Dropped))
	}
}
