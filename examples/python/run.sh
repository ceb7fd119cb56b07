#!/usr/bin/env bash
# Generates the Python stubs from the repository's proto/ into gen/ (git-ignored) and
# runs the example against SUGGEST_TASK_ADDR (default 127.0.0.1:8080).
# Needs Debian's python3-grpcio, python3-protobuf, protobuf-compiler (with libprotobuf-dev for
# the well-known protos in /usr/include) and protobuf-compiler-grpc; or, from pip, grpcio,
# protobuf and grpcio-tools (whose grpc_tools.protoc stands in for protoc and the plugin).
# Before anything else it checks each of them, and names the Debian package of the first
# one missing (exit 1).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
protos="$here/../../proto"

# Names what is missing and the package that provides it, on one line, and stops.
missing() {
  echo "examples/python: $1 is missing: apt-get install $2" >&2
  exit 1
}

# python3 from PATH when it has grpcio and protobuf (a virtualenv's: pip install grpcio
# protobuf); else the system's, which has them from Debian's python3-grpcio and
# python3-protobuf.
python=python3
if ! python3 -c 'import grpc, google.protobuf' >/dev/null 2>&1; then python=/usr/bin/python3; fi
command -v "$python" >/dev/null 2>&1 || missing python3 python3
"$python" -c 'import grpc' >/dev/null 2>&1 || missing "the python3 module grpc" python3-grpcio
"$python" -c 'import google.protobuf' >/dev/null 2>&1 ||
  missing "the python3 module google.protobuf" python3-protobuf
# The stubs' generator: protoc with Debian's gRPC plugin, else pip's grpc_tools.
if command -v grpc_python_plugin >/dev/null 2>&1 || ! "$python" -c 'import grpc_tools' >/dev/null 2>&1; then
  command -v protoc >/dev/null 2>&1 || missing protoc protobuf-compiler
  [ -f /usr/include/google/protobuf/descriptor.proto ] ||
    missing "/usr/include/google/protobuf/descriptor.proto" libprotobuf-dev
  command -v grpc_python_plugin >/dev/null 2>&1 || missing grpc_python_plugin protobuf-compiler-grpc
  generate=(protoc --grpc_out="$here/gen" --plugin=protoc-gen-grpc="$(command -v grpc_python_plugin)")
  well_known=(-I /usr/include)
else
  generate=("$python" -m grpc_tools.protoc --grpc_python_out="$here/gen")
  well_known=() # grpc_tools.protoc adds its own copy
fi

rm -rf "$here/gen" && mkdir -p "$here/gen"
# google/rpc/status.proto is not in proto/ (the service never imports it); the copy here
# is the googleapis file. With pip, googleapis-common-protos provides both google.rpc modules.
"${generate[@]}" -I "$protos" -I "$here/proto" "${well_known[@]}" --python_out="$here/gen" \
  "$protos"/oda/suggest/v1/*.proto "$protos/google/rpc/error_details.proto" \
  "$here/proto/google/rpc/status.proto"
exec "$python" "$here/suggest_example.py"
