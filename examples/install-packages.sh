#!/usr/bin/env bash
# Installs the Debian packages the Python and Go examples need, only those a machine lacks
# (as root, with apt-get). examples/run.sh runs it first; CI runs it before the tests, which
# run the examples' scripts (test/e2e/examples-prereqs.test.ts). Each example's run.sh,
# run on its own, names the package of anything missing instead of installing it.
set -euo pipefail

packages=(
  protobuf-compiler libprotobuf-dev protobuf-compiler-grpc python3-grpcio python3-protobuf
  golang-go protoc-gen-go protoc-gen-go-grpc golang-google-grpc-dev
  golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev golang-google-genproto-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "examples: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
