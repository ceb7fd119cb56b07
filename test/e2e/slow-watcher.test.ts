import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, expect, test } from "vitest";
import {
  WatchSuggestionsRequestSchema,
  type WatchSuggestionsResponse,
  WatchSuggestionsResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { eventually, putSession, uniqueId } from "../support/harness.js";
import { ids, watch } from "../support/lists.js";
import { grpcFrame } from "../support/raw-grpc.js";
import { useTestServer } from "../support/server-fixture.js";
import { offer } from "../support/suggest.js";

/*
 * A watcher whose client stops reading (server/transport/grpc-fast-path/grpc-server-stream.ts, pushed
 * by the hub: server/store/push-source.ts). Once HTTP/2's window and the stream's buffer
 * are full the server stops writing to it and keeps only the newest lists, so a client
 * that stops talking holds a bounded amount of the server's memory; when it reads again
 * it gets those newest lists, and every change after them.
 */

const t = useTestServer();
const sessions: http2.ClientHttp2Session[] = [];
afterAll(() => {
  for (const s of sessions) s.destroy();
});

/** A WatchSuggestions call on raw HTTP/2, its messages decoded as they are read. */
function rawWatch(url: string, sessionId: string) {
  const session = http2.connect(url);
  sessions.push(session);
  const stream = session.request({
    ":method": "POST",
    ":path": "/oda.suggest.v1.SuggestionService/WatchSuggestions",
    "content-type": "application/grpc",
    te: "trailers",
  });
  const request = create(WatchSuggestionsRequestSchema, { sessionId });
  stream.end(grpcFrame(Buffer.from(toBinary(WatchSuggestionsRequestSchema, request))));
  const messages: WatchSuggestionsResponse[] = [];
  let buffered = Buffer.alloc(0);
  stream.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 5 && buffered.length >= 5 + buffered.readUInt32BE(1)) {
      const end = 5 + buffered.readUInt32BE(1);
      messages.push(fromBinary(WatchSuggestionsResponseSchema, buffered.subarray(5, end)));
      buffered = buffered.subarray(end);
    }
  });
  return { stream, messages };
}

test("a watcher that stops reading is written to no more; reading again, it gets the newest lists, then every change", async () => {
  const sessionId = uniqueId();
  await putSession(t.clients, { sessionId });
  // Lists of about 12 KB: three open offers with the longest brief.
  const open: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await offer(t.clients, { sessionId, brief: "x".repeat(4000) });
    open.push(res.suggestion?.id ?? "");
  }
  const [first] = open as [string];
  const steady = watch(t.clients, sessionId);
  await steady.waitFor(() => true);
  const slow = rawWatch(t.url, sessionId);
  await eventually(async () => slow.messages.length === 1);
  slow.stream.pause();

  // 40 changes, each read by the hub before the next (the steady watcher has it).
  const changes = 40;
  for (let k = 0; k < changes; k++) {
    const req = { sessionId, suggestionId: first };
    if (k % 2 === 0) await t.clients.suggestions.dismissSuggestion(req);
    else await t.clients.suggestions.restoreSuggestion(req);
    const seen = steady.messages.length;
    await steady.waitFor(() => true, seen);
  }
  await t.clients.suggestions.draftSuggestion({ sessionId, suggestionId: open[1] ?? "" });
  const final = await t.clients.suggestions.listSuggestions({ sessionId });
  await steady.waitFor((m) => ids(m.settled).join() === ids(final.settled).join());

  slow.stream.resume();
  await eventually(
    async () => ids(slow.messages.at(-1)?.settled ?? []).join() === ids(final.settled).join(),
  );
  await new Promise((r) => setTimeout(r, 200));
  // The window and the buffers hold a handful of 12 KB lists; the rest were skipped.
  expect(slow.messages.length).toBeLessThan(changes / 2);
  expect(slow.messages.at(-1)?.open).toEqual(final.open);
  expect(slow.messages.at(-1)?.settled).toEqual(final.settled);

  // It is written to again: the next change reaches it.
  const before = slow.messages.length;
  await t.clients.suggestions.draftSuggestion({ sessionId, suggestionId: open[2] ?? "" });
  await eventually(async () => slow.messages.length === before + 1);
  expect(ids(slow.messages.at(-1)?.open ?? [])).toEqual([first]);
  slow.stream.close();
  steady.cancel();
  await steady.ended;
});
