import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { beforeAll, expect, test } from "vitest";
import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  ListWorkspaceSuggestionsRequestSchema,
  ListWorkspaceSuggestionsResponseSchema,
  SuggestionService,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { encodingOf } from "../../server/codec/encoded-message.js";
import { encodePageToken } from "../../server/domain/inbox-page.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { listWorkspaceSuggestions } from "../../server/rpc/workspace-suggestions.js";
import type { SuggestServer } from "../../server/server.js";
import { workspaceKeys } from "../../server/store/keys.js";
import { SuggestionStore } from "../../server/store/suggestion-store.js";
import { type Clients, connectErrorOf, putSession, uniqueId } from "../support/harness.js";
import { ids } from "../support/lists.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

let clients: Clients;
let redis: RedisClient;
let server: SuggestServer;
const service = useTestServer();
beforeAll(() => {
  ({ clients, redis, server } = service);
});

/** Every page of a workspace's inbox, `size` at a time. */
async function allPages(workspaceId: string, pageSize: number): Promise<Suggestion[][]> {
  const pages: Suggestion[][] = [];
  let pageToken = "";
  do {
    const res = await clients.suggestions.listWorkspaceSuggestions({
      workspaceId,
      pageSize,
      pageToken,
    });
    pages.push(res.suggestions);
    pageToken = res.nextPageToken;
  } while (pageToken !== "" && pages.length < 100);
  return pages;
}

/** Chats in a workspace of their own, each with `perChat` offers, in offer order. */
async function workspaceWith(chats: number, perChat: number) {
  const workspaceId = uniqueId("ws");
  const offered: Suggestion[] = [];
  const sessions: string[] = [];
  for (let c = 0; c < chats; c++) {
    const sessionId = uniqueId();
    sessions.push(sessionId);
    await putSession(clients, { sessionId, workspaceId });
    for (let i = 0; i < perChat; i++)
      offered.push(await offerOne(clients, sessionId, `C${c}O${i}`));
  }
  return { workspaceId, sessions, offered };
}

const ms = (s: Suggestion) => (s.offeredAt === undefined ? 0 : timestampMs(s.offeredAt));

/**
 * Offers (in offer order) as the inbox lists them: newest offer first; offers of one
 * millisecond by session id, then later offers of one chat first.
 */
const newestFirst = (list: readonly Suggestion[]) =>
  list
    .map((s, i) => ({ s, i }))
    .sort(
      (a, b) =>
        ms(b.s) - ms(a.s) ||
        (a.s.sessionId === b.s.sessionId ? b.i - a.i : a.s.sessionId < b.s.sessionId ? 1 : -1),
    )
    .map(({ s }) => s);

test("every chat's open suggestions, newest offer first, with their workspace and session", async () => {
  const { workspaceId, sessions, offered } = await workspaceWith(3, 2);
  const res = await clients.suggestions.listWorkspaceSuggestions({ workspaceId });
  expect(ids(res.suggestions)).toEqual(ids(newestFirst(offered)));
  const times = res.suggestions.map(ms);
  expect(times).toEqual([...times].sort((x, y) => y - x));
  expect(res.nextPageToken).toBe("");
  for (const s of res.suggestions) {
    expect(s.workspaceId).toBe(workspaceId);
    expect(sessions).toContain(s.sessionId);
    // Each as its chat lists it.
    const { open } = await clients.suggestions.listSuggestions({ sessionId: s.sessionId });
    expect(open.find((o) => o.id === s.id)).toEqual(s);
  }
  // SuggestTask, GetSuggestion and ListSuggestions say the workspace too.
  expect(offered.every((s) => s.workspaceId === workspaceId)).toBe(true);
  const first = offered[0] as Suggestion;
  const got = await clients.suggestions.getSuggestion({
    sessionId: first.sessionId,
    suggestionId: first.id,
  });
  expect(got.suggestion?.workspaceId).toBe(workspaceId);
});

test("pages of page_size, each next_page_token going on where the last stopped", async () => {
  const { workspaceId, offered } = await workspaceWith(4, 3);
  const pages = await allPages(workspaceId, 5);
  expect(pages.map((p) => p.length)).toEqual([5, 5, 2]);
  expect(ids(pages.flat())).toEqual(ids(newestFirst(offered)));
  // A token is opaque: base64url, and not the member it stands for.
  const res = await clients.suggestions.listWorkspaceSuggestions({ workspaceId, pageSize: 5 });
  expect(res.nextPageToken).toMatch(/^[A-Za-z0-9_-]+$/);
});

test("a settled suggestion leaves the inbox by the next read; a restored one comes back", async () => {
  const { workspaceId, offered } = await workspaceWith(2, 2);
  const [a, b] = offered as [Suggestion, Suggestion];
  await clients.suggestions.dismissSuggestion({ sessionId: a.sessionId, suggestionId: a.id });
  await clients.suggestions.draftSuggestion({ sessionId: b.sessionId, suggestionId: b.id });
  const after = await clients.suggestions.listWorkspaceSuggestions({ workspaceId });
  expect(ids(after.suggestions)).toEqual(ids(newestFirst(offered.slice(2))));
  // The index dropped them too: the next read's window holds only open offers.
  const members = await redis.zrange(workspaceKeys(workspaceId).offers, 0, -1);
  expect(members).toHaveLength(2);
  await clients.suggestions.restoreSuggestion({ sessionId: a.sessionId, suggestionId: a.id });
  const restored = await clients.suggestions.listWorkspaceSuggestions({ workspaceId });
  expect(ids(restored.suggestions)).toEqual(ids(newestFirst([a, ...offered.slice(2)])));
});

test("an offer stays in the workspace its chat had when it was made", async () => {
  const from = uniqueId("ws");
  const to = uniqueId("ws");
  const sessionId = uniqueId();
  await putSession(clients, { sessionId, workspaceId: from });
  const before = await offerOne(clients, sessionId, "Before the move");
  await putSession(clients, { sessionId, workspaceId: to });
  const afterMove = await offerOne(clients, sessionId, "After the move");
  const inFrom = await clients.suggestions.listWorkspaceSuggestions({ workspaceId: from });
  const inTo = await clients.suggestions.listWorkspaceSuggestions({ workspaceId: to });
  expect(ids(inFrom.suggestions)).toEqual([before.id]);
  expect(ids(inTo.suggestions)).toEqual([afterMove.id]);
  expect(inFrom.suggestions[0]?.workspaceId).toBe(from);
  // A chat of no workspace offers into no inbox.
  const alone = uniqueId();
  await putSession(clients, { sessionId: alone, workspaceId: "" });
  expect((await offerOne(clients, alone)).workspaceId).toBe("");
});

test("the gRPC fast path's cached encoding says what Connect JSON and connect-node's gRPC say", async () => {
  const { workspaceId } = await workspaceWith(3, 3);
  const request = { workspaceId, pageSize: 4 };
  const fast = await clients.suggestions.listWorkspaceSuggestions(request);
  const json = createClient(
    SuggestionService,
    createConnectTransport({ baseUrl: server.url, httpVersion: "1.1", useBinaryFormat: false }),
  );
  expect(fast.suggestions).toHaveLength(4);
  expect(await json.listWorkspaceSuggestions(request)).toEqual(fast);
  // The attached bytes decode to the very message they were attached to.
  const direct = await listWorkspaceSuggestions(
    { store: new SuggestionStore(redis) },
    create(ListWorkspaceSuggestionsRequestSchema, request),
  );
  expect(
    fromBinary(ListWorkspaceSuggestionsResponseSchema, encodingOf(direct) ?? new Uint8Array()),
  ).toEqual(direct);
  expect(direct).toEqual(fast);
});

test("page_size 0 is 50 and more than 500 is 500", async () => {
  const workspaceId = uniqueId("ws");
  const store = new SuggestionStore(redis);
  // 510 open offers in 170 chats, through the store as SuggestTask records them.
  await Promise.all(
    Array.from({ length: 170 }, async (_, c) => {
      const sessionId = uniqueId();
      for (let i = 0; i < 3; i++) {
        const offer = { id: `o${i}`, turnId: `t${i}`, toolCallId: "", title: "T", tldr: "R" };
        await store.offer(sessionId, { ...offer, brief: `B${c}` }, false, workspaceId);
      }
    }),
  );
  const byDefault = await clients.suggestions.listWorkspaceSuggestions({ workspaceId });
  expect(byDefault.suggestions).toHaveLength(50);
  const capped = await clients.suggestions.listWorkspaceSuggestions({
    workspaceId,
    pageSize: 100_000,
  });
  expect(capped.suggestions).toHaveLength(500);
  const rest = await clients.suggestions.listWorkspaceSuggestions({
    workspaceId,
    pageSize: 100_000,
    pageToken: capped.nextPageToken,
  });
  expect(rest.suggestions).toHaveLength(10);
  expect(rest.nextPageToken).toBe("");
}, 30_000);

test("a malformed workspace id, a negative page_size or a foreign page_token is INVALID_ARGUMENT", async () => {
  const cases: [Parameters<Clients["suggestions"]["listWorkspaceSuggestions"]>[0], string][] = [
    [{ workspaceId: "" }, "workspace_id is required"],
    [
      { workspaceId: "ws one" },
      "workspace_id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'",
    ],
    [
      { workspaceId: "{ws}" },
      "workspace_id must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'",
    ],
    [{ workspaceId: "ws-1", pageSize: -1 }, "page_size must not be negative"],
    [
      { workspaceId: "ws-1", pageToken: "not a token" },
      "page_token is not a next_page_token of ListWorkspaceSuggestions",
    ],
    [
      { workspaceId: "ws-1", pageToken: Buffer.from("v1|1|2|3").toString("base64url") },
      "page_token is not a next_page_token of ListWorkspaceSuggestions",
    ],
    [
      { workspaceId: "ws-1", pageToken: encodePageToken("0000000000000001|{x}|0000000001") },
      "page_token is not a next_page_token of ListWorkspaceSuggestions",
    ],
  ];
  for (const [request, message] of cases) {
    const err = await connectErrorOf(clients.suggestions.listWorkspaceSuggestions(request));
    expect([Code[err.code], err.rawMessage]).toEqual(["InvalidArgument", message]);
  }
  const watchErr = await connectErrorOf(
    (async () => {
      for await (const _ of clients.suggestions.watchWorkspaceSuggestions({ workspaceId: "a b" }));
    })(),
  );
  expect(Code[watchErr.code]).toBe("InvalidArgument");
});
