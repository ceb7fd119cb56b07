#!/usr/bin/env bash
# Runs the Python and Go examples against a real service: installs the Debian packages a
# fresh machine lacks (only those), starts the service as `npm start` does (its own
# private redis-server, on a free port), once on the gRPC fast path and once with
# GRPC_FAST_PATH=0, runs both examples against each, and stops it. Exits non-zero when
# any example fails, i.e. when the service drifts from the contract.
set -euo pipefail
cd "$(dirname "$0")/.."

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

work="$(mktemp -d)"
server_pid=""
stop_server() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid"
    wait "$server_pid" || true
  fi
  server_pid=""
}
trap 'stop_server; rm -rf "$work"' EXIT

# Starts the service on a free port with a private Redis; sets SUGGEST_TASK_ADDR.
start_server() {
  local port log="$work/server-$1.log"
  port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
  env -u REDIS_URL -u CHAT_HOST_URL -u AUTH_TOKENS HOST=127.0.0.1 PORT="$port" \
    DATA_DIR="$work/data-$1" GRPC_FAST_PATH="$1" \
    node --import tsx server/main.ts >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    grep -q "listening on" "$log" && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
      cat "$log" >&2
      echo "examples: the service did not start" >&2
      return 1
    fi
    sleep 0.1
  done
  grep -q "listening on" "$log" || { cat "$log" >&2; return 1; }
  export SUGGEST_TASK_ADDR="127.0.0.1:$port"
}

failed=0
for fast_path in 1 0; do
  start_server "$fast_path"
  for example in python go; do
    echo "examples: $example against GRPC_FAST_PATH=$fast_path ($SUGGEST_TASK_ADDR)"
    if ! "examples/$example/run.sh"; then
      echo "examples: $example FAILED (GRPC_FAST_PATH=$fast_path)" >&2
      failed=1
    fi
  done
  stop_server
done
exit "$failed"
