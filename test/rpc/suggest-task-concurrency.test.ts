import { Code, ConnectError } from "@connectrpc/connect";
import { expect, test } from "vitest";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { type Clients, putSession, uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import { offer, offeredRecords, REFUSAL_TEXT } from "../support/suggest.js";

// Two instances on one Redis: the atomic step must hold across processes' connections.
const instances = [useTestServer(), useTestServer()] as const;
/** The clients of instance `i % 2`. */
const clients = (i: number): Clients => instances[i % 2 === 0 ? 0 : 1].clients;

/** Settles every call: the successes' ids and the refusals' messages. */
async function settleAll(calls: Promise<{ suggestion?: { id: string } | undefined }>[]) {
  const results = await Promise.allSettled(calls);
  const ids: string[] = [];
  const refusals: string[] = [];
  for (const r of results) {
    if (r.status === "fulfilled") ids.push(r.value.suggestion?.id ?? "");
    else if (r.reason instanceof ConnectError) refusals.push(r.reason.rawMessage);
    else throw r.reason;
  }
  return { ids, refusals };
}

test("50 concurrent calls on one session with distinct turns record exactly 3", async () => {
  const sessionId = uniqueId();
  await putSession(clients(0), { sessionId });
  const calls = Array.from({ length: 50 }, (_, i) =>
    offer(clients(i % 2), { sessionId, turnId: `turn-${i}`, toolCallId: `call-${i}` }),
  );
  const { ids, refusals } = await settleAll(calls);
  expect(ids).toHaveLength(3);
  expect(refusals).toEqual(Array(47).fill(REFUSAL_TEXT.open));
  const records = await offeredRecords(instances[0].redis, sessionId);
  expect(records.map((r) => r.id).sort()).toEqual([...ids].sort());
});

test("concurrent calls in one turn record exactly one", async () => {
  const sessionId = uniqueId();
  await putSession(clients(0), { sessionId });
  const calls = Array.from({ length: 30 }, (_, i) =>
    offer(clients(i % 2), { sessionId, turnId: "the-turn", toolCallId: `call-${i}` }),
  );
  const { ids, refusals } = await settleAll(calls);
  expect(ids).toHaveLength(1);
  expect(refusals).toEqual(Array(29).fill(REFUSAL_TEXT.turn));
  expect(await offeredRecords(instances[0].redis, sessionId)).toHaveLength(1);
});

test("a chat never passes 10 offers, however offers and dismissals interleave", async () => {
  const sessionId = uniqueId();
  await putSession(clients(0), { sessionId });
  const store = new SuggestionStore(instances[0].redis);
  let lifetimeRefusals = 0;
  // Waves of concurrent offers, each wave followed by concurrent dismissals of what
  // it recorded, until the chat answers nothing but the lifetime refusal.
  for (let wave = 0; wave < 12 && lifetimeRefusals < 8; wave++) {
    const calls = Array.from({ length: 8 }, (_, i) => offer(clients(i % 2), { sessionId }));
    const { ids, refusals } = await settleAll(calls);
    lifetimeRefusals = refusals.filter((m) => m === REFUSAL_TEXT.lifetime).length;
    await Promise.all(ids.map((id) => store.settle(sessionId, id, "dismissed")));
    expect((await offeredRecords(instances[0].redis, sessionId)).length).toBeLessThanOrEqual(10);
  }
  expect(lifetimeRefusals).toBe(8);
  expect(await offeredRecords(instances[0].redis, sessionId)).toHaveLength(10);
});

test("a retried tool call answers the first result and records nothing new", async () => {
  const sessionId = uniqueId();
  await putSession(clients(0), { sessionId });
  const first = await offer(clients(0), {
    sessionId,
    turnId: "turn-1",
    toolCallId: "call-1",
    title: "First",
  });
  // A retry may come to another instance, even with a later turn or other arguments.
  const again = await offer(clients(1), {
    sessionId,
    turnId: "turn-1",
    toolCallId: "call-1",
    title: "First",
  });
  const later = await offer(clients(0), {
    sessionId,
    turnId: "turn-2",
    toolCallId: "call-1",
    title: "Changed",
  });
  expect(again).toEqual(first);
  expect(later).toEqual(first);
  expect(await offeredRecords(instances[0].redis, sessionId)).toHaveLength(1);

  // Concurrent retries of one call: one record, one answer.
  const calls = Array.from({ length: 10 }, (_, i) =>
    offer(clients(i % 2), { sessionId, turnId: "turn-3", toolCallId: "call-3" }),
  );
  const answers = await Promise.all(calls);
  expect(new Set(answers.map((a) => a.suggestion?.id)).size).toBe(1);
  expect(await offeredRecords(instances[0].redis, sessionId)).toHaveLength(2);
});

test("a refused call records nothing, so its retry is checked again", async () => {
  const sessionId = uniqueId();
  await putSession(clients(0), { sessionId });
  const refused = await offer(clients(0), {
    sessionId,
    toolCallId: "call-x",
    title: "",
  }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(ConnectError);
  expect((refused as ConnectError).code).toBe(Code.InvalidArgument);
  const ok = await offer(clients(0), { sessionId, toolCallId: "call-x", title: "Now" });
  expect(ok.suggestion?.title).toBe("Now");
  expect(await offeredRecords(instances[0].redis, sessionId)).toHaveLength(1);
});
