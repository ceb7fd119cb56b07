#!/usr/bin/env bash
# Runs the Python and Go examples against a real service: installs the Debian packages a
# fresh machine lacks (only those: examples/install-packages.sh), starts the service as
# `npm start` does (its own private redis-server, on a free port), once on the gRPC fast
# path and once with GRPC_FAST_PATH=0, runs both examples against each, and stops it. Exits
# non-zero when any example fails, i.e. when the service drifts from the contract.
set -euo pipefail
cd "$(dirname "$0")/.."

examples/install-packages.sh

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
