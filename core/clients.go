package core

import (
	"context"
	"fmt"
	"sync"

	"github.com/hload/hload/config"
	"github.com/hload/hload/protocols"
)

// clientGaugers returns the clients that report gauges.
func clientGaugers(clients map[string]protocols.Client) []protocols.Gauger {
	var gs []protocols.Gauger
	for _, c := range clients {
		if g, ok := c.(protocols.Gauger); ok {
			gs = append(gs, g)
		}
	}
	return gs
}

// readGauges adds up the gauges of gs by name, or returns nil when none
// reports any.
func readGauges(gs []protocols.Gauger) map[string]int64 {
	var out map[string]int64
	for _, g := range gs {
		g.Gauges(func(name string, v int64) {
			if out == nil {
				out = map[string]int64{}
			}
			out[name] += v
		})
	}
	return out
}

// watchFailures merges the Failed channels of the clients that have one
// into a channel that delivers the first failure. stop ends the watching
// goroutines and waits for them: a failure one of them had received by
// then is in failures, so a caller that stops after closing the clients
// misses none, however late it came.
func watchFailures(clients map[string]protocols.Client) (failures <-chan error, stop func()) {
	out := make(chan error, 1)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	forward := func(name string, err error, ok bool) {
		if ok && err != nil {
			select {
			case out <- fmt.Errorf("target %q: %w", name, err):
			default: // another client failed first
			}
		}
	}
	for name, c := range clients {
		f, ok := c.(protocols.Failer)
		if !ok {
			continue
		}
		ch := f.Failed()
		wg.Go(func() {
			select {
			case err, ok := <-ch:
				forward(name, err, ok)
			case <-quit:
				// A failure that came with the quit is not lost.
				select {
				case err, ok := <-ch:
					forward(name, err, ok)
				default:
				}
			}
		})
	}
	var once sync.Once
	return out, func() {
		once.Do(func() {
			close(quit)
			wg.Wait()
		})
	}
}

// openClients opens one client per target that a request uses. An
// isolated target's protocol comes from opts.Isolated.
func openClients(ctx context.Context, test *config.Test, opts Options) (map[string]protocols.Client, error) {
	used := map[string]bool{}
	for _, s := range test.Scenarios {
		for _, r := range s.Requests {
			used[r.Target] = true
		}
	}
	clients := map[string]protocols.Client{}
	for _, t := range test.Targets {
		if !used[t.Name] {
			continue
		}
		p, err := targetProtocol(t, opts)
		if err != nil {
			closeAll(clients)
			return nil, err
		}
		c, err := p.Open(ctx, t.Config)
		if err != nil {
			closeAll(clients)
			return nil, fmt.Errorf("target %q (%s): %w", t.Name, t.DeclRange, err)
		}
		clients[t.Name] = c
	}
	return clients, nil
}

func targetProtocol(t *config.Target, opts Options) (protocols.Protocol, error) {
	if t.Isolate {
		if opts.Isolated == nil {
			return nil, fmt.Errorf("target %q (%s): isolate = true, but this run cannot start isolated protocols", t.Name, t.DeclRange)
		}
		p, err := opts.Isolated(t)
		if err != nil {
			return nil, fmt.Errorf("target %q (%s): isolating protocol %q: %w", t.Name, t.DeclRange, t.Protocol, err)
		}
		return p, nil
	}
	p, ok := opts.Protocols.Lookup(t.Protocol)
	if !ok {
		return nil, fmt.Errorf("target %q: unknown protocol %q", t.Name, t.Protocol)
	}
	return p, nil
}

func closeAll(clients map[string]protocols.Client) {
	for _, c := range clients {
		c.Close()
	}
}
