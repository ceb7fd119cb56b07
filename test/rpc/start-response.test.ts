import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, expect, test } from "vitest";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  StartSuggestionRequestSchema,
  StartSuggestionResponseSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { EmbeddedChatHost } from "../../server/host/embedded-host.js";
import { subscriberConnection } from "../../server/redis/redis-client.js";
import { signalEnd } from "../../server/rpc/call-end.js";
import { StartFlights } from "../../server/rpc/start-flights.js";
import { startSuggestion } from "../../server/rpc/start-suggestion.js";
import { PubSub } from "../../server/store/pubsub.js";
import { StartLocks } from "../../server/store/start-locks.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { frameOf } from "../../server/transport/grpc-wire.js";
import { putSession, uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

/*
 * The concurrent Starts of one suggestion on one instance share one flight, and with it
 * one answer: the same object, frozen in depth, so that the gRPC fast path encodes it
 * once for all of them (server/transport/encoded-once.ts), as it does a read's.
 */

const t = useTestServer();
let pubsub: PubSub;
let deps: Parameters<typeof startSuggestion>[0];
beforeAll(() => {
  const store = new SuggestionStore(t.redis);
  const embeddedHost = new EmbeddedChatHost(t.redis);
  pubsub = new PubSub(() => subscriberConnection(t.redis));
  const startLocks = new StartLocks(t.redis, pubsub, { ttlMs: 1_500, maxHoldMs: 10_000 });
  deps = { store, host: embeddedHost, embeddedHost, startLocks, startFlights: new StartFlights() };
});
afterAll(async () => {
  await pubsub.close();
});

test("the Starts of one flight get one frozen answer, encoded once; a later Start another", async () => {
  const sessionId = uniqueId();
  await putSession(t.clients, { sessionId });
  const { id: suggestionId } = await offerOne(t.clients, sessionId, "Shared answer");
  const request = create(StartSuggestionRequestSchema, { sessionId, suggestionId });
  const answers = await Promise.all(
    Array.from({ length: 5 }, () =>
      startSuggestion(deps, request, () => signalEnd(new AbortController().signal)),
    ),
  );
  const [first] = answers;
  if (first === undefined) throw new Error("no answer");
  expect(answers.every((a) => a === first)).toBe(true);
  expect(first.suggestion).toMatchObject({ state: SuggestionState.STARTED, chatId: first.chatId });
  expect(Object.isFrozen(first)).toBe(true);
  expect(Object.isFrozen(first.suggestion)).toBe(true);
  const frame = frameOf(StartSuggestionResponseSchema, first);
  expect(frameOf(StartSuggestionResponseSchema, first)).toBe(frame);

  // A repeated Start, after the flight: its own answer, with the same chat.
  const again = await startSuggestion(deps, request);
  expect(again).not.toBe(first);
  expect(again.chatId).toBe(first.chatId);
  expect(Object.isFrozen(again)).toBe(true);
  const { chat } = await t.clients.local.getChat({ chatId: first.chatId });
  expect(chat?.messages).toHaveLength(1);
});
