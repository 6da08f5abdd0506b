package config

import (
	"fmt"
	"sync"
	"testing"
)

// TestFeederRowsBuiltOnce checks that a small file's rows, built on first
// use and kept, are the rows built afresh, whatever the order and however
// many VUs ask at once (run it with -race), and that a large file's are
// not kept.
func TestFeederRowsBuiltOnce(t *testing.T) {
	f := loadFeeder(t, "sequential", 300)
	if len(f.built) != 300 {
		t.Fatalf("a file of 300 rows keeps %d built", len(f.built))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for vu := range 4 {
		wg.Go(func() {
			for k := range 900 {
				i := (k*7 + vu*13) % 300
				if got, want := f.Row(i), f.buildRow(i); !got.RawEquals(want) {
					errs <- fmt.Errorf("row %d = %#v, built afresh %#v", i, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range 300 {
		if f.built[i].Load() == nil {
			t.Fatalf("row %d was not kept", i)
		}
	}
	if big := loadFeeder(t, "sequential", maxBuiltRows+1); len(big.built) != 0 {
		t.Fatalf("a file of %d rows keeps %d built", maxBuiltRows+1, len(big.built))
	}
}
