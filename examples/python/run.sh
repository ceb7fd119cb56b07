#!/usr/bin/env bash
# Generates the Python stubs from the repository's proto/ into gen/ (git-ignored) and
# runs the example against SUGGEST_TASK_ADDR (default 127.0.0.1:8080).
# Needs Debian's python3-grpcio, python3-protobuf, protobuf-compiler (with libprotobuf-dev for
# the well-known protos in /usr/include) and protobuf-compiler-grpc.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
protos="$here/../../proto"
rm -rf "$here/gen" && mkdir -p "$here/gen"
# google/rpc/status.proto is not in proto/ (the service never imports it); the copy here
# is the googleapis file. With pip, googleapis-common-protos provides both google.rpc modules.
protoc -I "$protos" -I "$here/proto" -I /usr/include \
  --python_out="$here/gen" \
  --grpc_out="$here/gen" --plugin=protoc-gen-grpc="$(command -v grpc_python_plugin)" \
  "$protos"/oda/suggest/v1/*.proto "$protos/google/rpc/error_details.proto" \
  "$here/proto/google/rpc/status.proto"
# python3 from PATH when it has grpcio and protobuf (a virtualenv's: pip install grpcio
# protobuf); else the system's, which has them from Debian's python3-grpcio and
# python3-protobuf.
python=python3
if ! python3 -c 'import grpc, google.protobuf' 2>/dev/null; then python=/usr/bin/python3; fi
exec "$python" "$here/suggest_example.py"
