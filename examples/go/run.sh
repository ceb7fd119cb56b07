#!/usr/bin/env bash
# Generates the Go stubs from the repository's proto/ into .gopath/ (git-ignored), builds
# the example offline against Debian's Go packages (GOPATH mode) and runs it against
# SUGGEST_TASK_ADDR (default 127.0.0.1:8080). See README.md for the packages.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
protos="$here/../../proto"
gopath="$here/.gopath"
rm -rf "$gopath/src" && mkdir -p "$gopath/src" "$gopath/bin"
# The protos set no go_package: map each file to one Go package of this example's own.
pkg="suggestexample/oda/suggest/v1;suggestv1"
maps=""
for f in chat_host suggestion suggestion_service tool_options; do
  maps="$maps,Moda/suggest/v1/$f.proto=$pkg"
done
maps="${maps#,}"
protoc -I "$protos" -I /usr/include \
  --go_out="$gopath/src" --go_opt="$maps" \
  --go-grpc_out="$gopath/src" --go-grpc_opt="$maps" \
  "$protos"/oda/suggest/v1/*.proto
export GO111MODULE=off GOFLAGS= GOPATH="$gopath:/usr/share/gocode" GOCACHE="$gopath/cache"
(cd "$here" && go build -o "$gopath/bin/suggest-example" .)
# grpc-go before 1.40 (Debian 12 has 1.33) applies a service config's retryPolicy only with
# this set; later releases retry by default.
export GRPC_GO_RETRY=on
exec "$gopath/bin/suggest-example"
