package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hload/hload/demo"
)

func cmdDemo(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8080", "address to serve the demo shop on")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: exitUsage}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	srv, err := demo.Start(ctx, *listen, demo.Options{})
	if err != nil {
		return &exitError{code: exitRuntime, err: fmt.Errorf("--listen %s: %w", *listen, err)}
	}
	defer srv.Close()
	fmt.Fprintf(stdout, "demo shop serving on %s (GET /, POST /login, GET /products, GET /products/{id}, POST /orders); Ctrl-C stops it\n", srv.URL())
	<-ctx.Done()
	return nil
}
