// Package sse is the built-in Server-Sent Events protocol.
package sse

import _ "github.com/r3labs/sse/v2" // replaced by the real use
