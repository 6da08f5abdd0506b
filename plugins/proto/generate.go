// Package proto holds the generated gRPC code of the plugin wire contract
// in hload.proto. The generated files are committed, so building hload
// needs no protoc; `go generate ./plugins/proto` regenerates them.
package proto

//go:generate ./gen.sh
