package protocols

import (
	"context"
	"testing"
)

func TestEndingInContext(t *testing.T) {
	ctx := context.Background()
	if Ending(ctx) != nil {
		t.Fatal("empty context carries an ending")
	}
	ch := make(chan struct{})
	ctx = WithEnding(ctx, ch)
	close(ch)
	select {
	case <-Ending(ctx):
	default:
		t.Error("Ending did not return the channel")
	}
}
