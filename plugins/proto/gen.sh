#!/bin/sh
# Regenerates hload.pb.go and hload_grpc.pb.go. Needs protoc (Debian's
# protobuf-compiler); the Go generators are pinned to match go.mod's
# protobuf and grpc.
set -eu
cd "$(dirname "$0")"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOBIN=$bin GOFLAGS= go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.6
GOBIN=$bin GOFLAGS= go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.3.0
protoc --plugin=protoc-gen-go="$bin/protoc-gen-go" --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	hload.proto
