// Command hload-plugin-lines is an example hload protocol plugin: the lines
// protocol (send one line, read one line back over TCP) as its own binary.
// Build it with
//
//	go build -o plugins/hload-plugin-lines ./examples/plugins/lines
//
// and see README.md for a test that uses it.
package main

import (
	"github.com/hload/hload/examples/plugins/lines/lines"
	"github.com/hload/hload/plugins/sdk"
)

func main() { sdk.Serve(lines.New()) }
