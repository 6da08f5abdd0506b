package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hload/hload/sinks/dashboard"
)

const (
	envDashboard       = "HLOAD_DASHBOARD"
	envDashboardToken  = "HLOAD_DASHBOARD_TOKEN"
	envDashboardLinger = "HLOAD_DASHBOARD_LINGER"
)

// dashboardFlags are apply's --dashboard flags.
type dashboardFlags struct {
	fs                  *flag.FlagSet
	addr, token, linger string
	getenv              func(string) string
}

func (d *dashboardFlags) register(fs *flag.FlagSet) {
	d.fs = fs
	fs.StringVar(&d.addr, "dashboard", "", "serve a live dashboard of the run at this `host:port`, such as 127.0.0.1:5665; a non-loopback address needs --dashboard-token (env "+envDashboard+")")
	fs.StringVar(&d.token, "dashboard-token", "", "a `token` every request to the dashboard must carry, as ?token= or Authorization: Bearer (env "+envDashboardToken+", which keeps it out of the process list)")
	fs.StringVar(&d.linger, "dashboard-linger", "0s", "keep serving the dashboard this `long` after the run; Ctrl-C ends it sooner (env "+envDashboardLinger+")")
}

// dashboardConfig is a resolved set of --dashboard flags; addr is empty
// when there is no dashboard.
type dashboardConfig struct {
	addr, token string
	linger      time.Duration
}

// resolve reads the flags and their variables, and checks the address
// before anything runs: a non-loopback address without a token is a
// mistake (exit 2), as a bad port is.
func (d *dashboardFlags) resolve() (dashboardConfig, error) {
	getenv := d.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	addr, addrFrom := flagOrEnv(d.fs, "dashboard", d.addr, envDashboard, getenv)
	token, _ := flagOrEnv(d.fs, "dashboard-token", d.token, envDashboardToken, getenv)
	linger, lingerFrom := flagOrEnv(d.fs, "dashboard-linger", d.linger, envDashboardLinger, getenv)
	var c dashboardConfig
	var err error
	if c.linger, err = time.ParseDuration(strings.TrimSpace(linger)); err != nil || c.linger < 0 {
		return c, fmt.Errorf("%s: want a duration of 0 or more, such as 30s", lingerFrom)
	}
	c.addr, c.token = strings.TrimSpace(addr), token
	if c.addr == "" {
		if c.token != "" {
			return c, fmt.Errorf("--dashboard-token without --dashboard: there is no dashboard to guard")
		}
		return c, nil
	}
	if err := dashboard.CheckAddr(c.addr, c.token); err != nil {
		return c, fmt.Errorf("%s: %w", addrFrom, err)
	}
	return c, nil
}

// linger keeps the dashboard serving for c.linger after the run, or until
// stop closes (Ctrl-C), then shuts it down.
func (c dashboardConfig) end(d *dashboard.Sink, stop <-chan struct{}, stderr io.Writer) {
	if c.linger > 0 {
		fmt.Fprintf(stderr, "hload: the dashboard stays at %s for %s; Ctrl-C ends it\n", d.URL(), c.linger)
		t := time.NewTimer(c.linger)
		select {
		case <-t.C:
		case <-stop:
		}
		t.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.Shutdown(ctx)
}
