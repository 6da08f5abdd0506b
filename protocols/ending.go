package protocols

import "context"

// endingContextKey is the context key of the scenario's ending channel.
type endingContextKey struct{}

// WithEnding returns ctx carrying ending, a channel the core closes when
// the scenario stops starting iterations. A call that holds a stream
// until the scenario ends, such as an SSE subscription, ends then as a
// success, instead of being cancelled when the graceful stop runs out.
func WithEnding(ctx context.Context, ending <-chan struct{}) context.Context {
	return context.WithValue(ctx, endingContextKey{}, ending)
}

// Ending returns the channel WithEnding put in ctx, or nil, which never
// closes.
func Ending(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(endingContextKey{}).(<-chan struct{})
	return ch
}
