"""Staying connected to suggest-task from grpcio: retries, keepalive and a watch that reconnects.

Needs no generated stubs, so any grpcio client can import it: `channel_options()` for
`grpc.insecure_channel` / `grpc.secure_channel`, and `watch_forever` around a watch method.
docs/contract.md ("Retry safety") says which calls may be sent again; the service config
below lists exactly those this client sends.
"""

import json
import random
import time

import grpc

SUGGESTIONS = "oda.suggest.v1.SuggestionService"
LOCAL_HOST = "oda.suggest.v1.LocalHostService"

# The calls whose repeat is harmless (docs/contract.md, "Retry safety"). SuggestTask and
# WithdrawSuggestion are listed because this client always sends a tool_call_id (a repeat
# answers the first result); a client that may leave it empty must not list them, nor
# CreateGoal (never safe). The watches are not retried here: watch_forever reconnects them.
RETRY_SAFE_METHODS = {
    SUGGESTIONS: [
        "ListSuggestions",
        "GetSuggestion",
        "ListSettlements",
        "ListWorkspaceSuggestions",
        "DeleteSuggestions",
        "SuggestTask",
        "WithdrawSuggestion",
        "StartSuggestion",
        "DraftSuggestion",
        "DismissSuggestion",
        "RestoreSuggestion",
    ],
    LOCAL_HOST: ["PutSession", "GetChat"],
}

# gRPC's retry policy (gRFC A6): up to 5 attempts, waits drawn at random below 0.2 s, 0.4 s,
# 0.8 s and 1.6 s, on UNAVAILABLE: what a draining instance, a refused stream or a proxy's
# 502/503/504 answers. A retry never outlives the call's timeout.
RETRY_POLICY = {
    "maxAttempts": 5,
    "initialBackoff": "0.2s",
    "maxBackoff": "5s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"],
}

SERVICE_CONFIG = json.dumps(
    {
        "methodConfig": [
            {
                "name": [
                    {"service": service, "method": method}
                    for service, methods in RETRY_SAFE_METHODS.items()
                    for method in methods
                ],
                "retryPolicy": RETRY_POLICY,
            }
        ]
    }
)

# Asked of the server as heartbeat_seconds: while nothing changes, a heartbeat message at
# that interval keeps a proxy's idle timeout (60 s at AWS ALB and nginx) from cutting it.
HEARTBEAT_SECONDS = 15

# Codes a reconnect cannot mend: the watch ends with them. Any other end (UNAVAILABLE when an
# instance drains, a reset stream, a proxy's idle timeout, an unexpected OK) reconnects.
FINAL_CODES = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.UNAUTHENTICATED,
    }
)

# A connection that lasted this long starts the backoff afresh when it ends.
HEALTHY_CONNECTION_S = 5.0


def channel_options():
    """Channel options: the service config with its retry policy, and HTTP/2 keepalive.

    The keepalive pings after 30 s without a frame while a call is open (a watch) and drops
    a connection whose ping goes unanswered for 10 s, so a connection a proxy or a NAT forgot
    in silence is noticed and the watch reconnects.
    """
    return [
        ("grpc.service_config", SERVICE_CONFIG),
        ("grpc.enable_retries", 1),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.http2.max_pings_without_data", 0),
    ]


def watch_forever(open_watch, request, on_state, timeout=None, initial_backoff=0.25,
                  max_backoff=10.0):
    """Follows a watch (WatchSuggestions or WatchWorkspaceSuggestions) until `on_state` says so.

    `open_watch(request, timeout=...)` is the stub's method; `request` should ask for
    heartbeats (heartbeat_seconds). Heartbeats are skipped and a state equal to the last one
    given is not given again (a reconnect answers the current state first). `on_state(state)`
    returns True to stop. After any end that was not asked for it reconnects, waiting at random
    below a ceiling that doubles from `initial_backoff` to `max_backoff`; it raises the
    grpc.RpcError of a code in FINAL_CODES, or DEADLINE_EXCEEDED once `timeout` (seconds, all
    connections together) has run out. Answers how many connections it made.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    last = None
    failures = 0
    connections = 0
    while True:
        opened = time.monotonic()
        left = None if deadline is None else max(0.001, deadline - opened)
        stream = open_watch(request, timeout=left)
        connections += 1
        try:
            for message in stream:
                if message.heartbeat or message == last:
                    continue
                last = message
                if on_state(message):
                    return connections
        except grpc.RpcError as err:
            if err.code() in FINAL_CODES:
                raise
            if deadline is not None and time.monotonic() >= deadline:
                raise
        finally:
            stream.cancel()
        failures = 1 if time.monotonic() - opened >= HEALTHY_CONNECTION_S else failures + 1
        time.sleep(random.uniform(0, min(max_backoff, initial_backoff * 2 ** (failures - 1))))
