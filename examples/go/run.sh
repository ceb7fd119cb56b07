#!/usr/bin/env bash
# Generates the Go stubs from the repository's proto/ into .gopath/ (git-ignored), builds
# the example offline against Debian's Go packages (GOPATH mode) and runs it against
# SUGGEST_TASK_ADDR (default 127.0.0.1:8080). See README.md for the packages. Before anything
# else it checks each command and Go source tree it needs, and names the Debian package of
# the first one missing (exit 1).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

# Names what is missing and the package that provides it, on one line, and stops.
missing() {
  echo "examples/go: $1 is missing: apt-get install $2" >&2
  exit 1
}
command -v go >/dev/null 2>&1 || missing go golang-go
command -v protoc >/dev/null 2>&1 || missing protoc protobuf-compiler
[ -f /usr/include/google/protobuf/descriptor.proto ] ||
  missing /usr/include/google/protobuf/descriptor.proto libprotobuf-dev
command -v protoc-gen-go >/dev/null 2>&1 || missing protoc-gen-go protoc-gen-go
command -v protoc-gen-go-grpc >/dev/null 2>&1 || missing protoc-gen-go-grpc protoc-gen-go-grpc
# The Go packages main.go and the generated stubs import, from Debian's source packages in
# /usr/share/gocode (GOPATH mode, no download).
gocode=/usr/share/gocode/src
for source in google.golang.org/grpc:golang-google-grpc-dev \
  google.golang.org/protobuf:golang-google-protobuf-dev \
  github.com/golang/protobuf:golang-github-golang-protobuf-1-5-dev \
  google.golang.org/genproto/googleapis/rpc/errdetails:golang-google-genproto-dev; do
  [ -d "$gocode/${source%%:*}" ] || missing "the Go package ${source%%:*} ($gocode)" "${source#*:}"
done

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
