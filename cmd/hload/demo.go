package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hload/hload/demo"
)

func cmdDemo(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(demoHelp, stdout, stderr)
	listen := fs.String("listen", "127.0.0.1:8080", "`address` to serve the demo shop on")
	delivery := fs.String("notification-delivery", demo.DeliveryPool, "how POST /api/notification/send delivers, the `mode` pool or sequential")
	if err := fs.parseFlags(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fs.usageError("demo takes no file, got %q", fs.Arg(0))
	}
	if !demo.ValidDelivery(*delivery) {
		return &exitError{code: exitUsage, err: fmt.Errorf("--notification-delivery must be pool or sequential, not %q", *delivery)}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	srv, err := demo.Start(ctx, *listen, demo.Options{NotificationDelivery: *delivery})
	if err != nil {
		return &exitError{code: exitRuntime, err: fmt.Errorf("--listen %s: %w", *listen, err)}
	}
	defer srv.Close()
	fmt.Fprintf(stdout, "demo shop serving on %s (GET /, POST /login, GET /products, GET /products/{id}, POST /orders;\n"+
		"  notifications, %s delivery: POST /api/notification/send, GET /api/notification/subscribe/{userId} (SSE),\n"+
		"  GET /api/notification/stats, PUT /api/notification/delivery;\n"+
		"  journeys, with a bearer token: POST /api/login, GET /api/products, GET /api/products/{id}, POST /api/orders,\n"+
		"  GET /api/journey/stats; a slowed page, GET /slow?delay=D; a page of 200 requests/s at most, GET /capacity);\n"+
		"  Ctrl-C stops it\n", srv.URL(), *delivery)
	<-ctx.Done()
	return nil
}
