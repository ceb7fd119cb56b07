"""A Python grpcio client under a deploy, for test/e2e/haproxy.test.ts.

Usage: python3 grpcio_drill.py <address> <descriptor set> <watched session id>

On a channel made with examples/python/staying_connected.py's options (the retry policy of
the retry-safe calls, keepalive), it runs an agent loop (PutSession on a fresh session, then
SuggestTask with a tool_call_id) in a thread, and follows the watched session with
watch_forever, printing `state <open ids as JSON>` for every state it gives. Once a state has
an open suggestion it stops the loop and prints `summary <JSON>`: calls made, the failures
(code and details), the watch's connections. Messages are built from the descriptor set
(the service's protos), so no stubs are generated.
"""

import json
import os
import sys
import threading
import uuid

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "examples", "python"))

import grpc  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402
from staying_connected import (  # noqa: E402
    HEARTBEAT_SECONDS,
    LOCAL_HOST,
    SUGGESTIONS,
    channel_options,
    watch_forever,
)

address, descriptor_set, watched = sys.argv[1:4]

pool = descriptor_pool.DescriptorPool()
files = descriptor_pb2.FileDescriptorSet.FromString(open(descriptor_set, "rb").read())
for file in files.file:
    pool.Add(file)
factory = message_factory.MessageFactory(pool)


def message(name):
    """The message class of a full protobuf name."""
    return factory.GetPrototype(pool.FindMessageTypeByName(name))


PutSessionRequest = message("oda.suggest.v1.PutSessionRequest")
PutSessionResponse = message("oda.suggest.v1.PutSessionResponse")
SuggestTaskRequest = message("oda.suggest.v1.SuggestTaskRequest")
SuggestTaskResponse = message("oda.suggest.v1.SuggestTaskResponse")
WatchSuggestionsRequest = message("oda.suggest.v1.WatchSuggestionsRequest")
WatchSuggestionsResponse = message("oda.suggest.v1.WatchSuggestionsResponse")
TOP_LEVEL = pool.FindEnumTypeByName("oda.suggest.v1.AgentRole").values_by_name[
    "AGENT_ROLE_TOP_LEVEL"
].number
NORMAL = pool.FindEnumTypeByName("oda.suggest.v1.FolderKind").values_by_name[
    "FOLDER_KIND_NORMAL"
].number


def method(channel, service, name, request, response, stream=False):
    """A callable of one RPC, as a generated stub would make it."""
    make = channel.unary_stream if stream else channel.unary_unary
    return make(f"/{service}/{name}", request_serializer=request.SerializeToString,
                response_deserializer=response.FromString)


def out(line):
    print(line, flush=True)


with grpc.insecure_channel(address, options=channel_options()) as channel:
    put_session = method(channel, LOCAL_HOST, "PutSession", PutSessionRequest, PutSessionResponse)
    suggest_task = method(channel, SUGGESTIONS, "SuggestTask", SuggestTaskRequest,
                          SuggestTaskResponse)
    watch = method(channel, SUGGESTIONS, "WatchSuggestions", WatchSuggestionsRequest,
                   WatchSuggestionsResponse, stream=True)
    stop = threading.Event()
    calls = 0
    failures = []

    def agent():
        global calls
        while not stop.is_set():
            session_id = f"py-{uuid.uuid4()}"
            try:
                request = PutSessionRequest()
                request.session.session_id = session_id
                request.session.workspace_id = "ws-1"
                request.session.folder = NORMAL
                put_session(request, timeout=30)
                calls += 1
                request = SuggestTaskRequest()
                request.context.session_id = session_id
                request.context.turn_id = "turn-1"
                request.context.role = TOP_LEVEL
                request.context.tool_call_id = "call-1"
                request.args.title = "Follow up"
                request.args.tldr = "Worth doing"
                request.args.brief = "Do the follow-up."
                suggest_task(request, timeout=30)
                calls += 1
            except grpc.RpcError as err:
                failures.append(f"{err.code().name}: {err.details()}")

    worker = threading.Thread(target=agent)
    worker.start()

    def on_state(state):
        open_ids = [s.id for s in state.open]
        out(f"state {json.dumps(open_ids)}")
        return len(open_ids) > 0

    try:
        connections = watch_forever(
            watch,
            WatchSuggestionsRequest(session_id=watched, heartbeat_seconds=HEARTBEAT_SECONDS),
            on_state,
            timeout=60,
        )
    finally:
        stop.set()
        worker.join()
    out("summary " + json.dumps({"calls": calls, "failures": failures,
                                 "connections": connections}))
