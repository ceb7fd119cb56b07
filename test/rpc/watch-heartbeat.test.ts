import { type Client, Code, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { expect, test } from "vitest";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { connectErrorOf, eventually, putSession, uniqueId } from "../support/harness.js";
import { ids } from "../support/lists.js";
import { useTestServer } from "../support/server-fixture.js";
import { offerOne } from "../support/suggest.js";

const t = useTestServer();

/** A client of the server per protocol: gRPC (the fast path), Connect and gRPC-Web (connect-node). */
function clientsByProtocol(): [string, Client<typeof SuggestionService>][] {
  return [
    ["gRPC", createClient(SuggestionService, createGrpcTransport({ baseUrl: t.url }))],
    [
      "Connect over HTTP/1.1",
      createClient(
        SuggestionService,
        createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }),
      ),
    ],
    [
      "gRPC-Web over HTTP/1.1",
      createClient(
        SuggestionService,
        createGrpcWebTransport({ baseUrl: t.url, httpVersion: "1.1" }),
      ),
    ],
  ];
}

test("heartbeat_seconds from 1 to 4 is INVALID_ARGUMENT saying what it takes, on both watches", async () => {
  for (const [, client] of clientsByProtocol()) {
    const chat = await connectErrorOf(
      (async () => {
        for await (const _ of client.watchSuggestions({
          sessionId: uniqueId(),
          heartbeatSeconds: 4,
        }))
          break;
      })(),
    );
    expect([chat.code, chat.rawMessage]).toEqual([
      Code.InvalidArgument,
      "heartbeat_seconds must be 0 (no heartbeats) or at least 5 (got 4)",
    ]);
    const inbox = await connectErrorOf(
      (async () => {
        for await (const _ of client.watchWorkspaceSuggestions({
          workspaceId: "ws-1",
          heartbeatSeconds: 1,
        }))
          break;
      })(),
    );
    expect([inbox.code, inbox.rawMessage]).toEqual([
      Code.InvalidArgument,
      "heartbeat_seconds must be 0 (no heartbeats) or at least 5 (got 1)",
    ]);
  }
});

test("while nothing changes, a watch that asked for heartbeats gets heartbeat messages with no lists, then the next change; on every protocol, both watches", async () => {
  const clients = clientsByProtocol();
  const sessionId = uniqueId();
  const workspaceId = uniqueId("ws");
  await putSession(t.clients, { sessionId, workspaceId });
  const abort = new AbortController();
  type Seen = { heartbeat: boolean; open: string[] };
  const runs = clients.flatMap(([name, client]) => {
    const chatSeen: Seen[] = [];
    const inboxSeen: Seen[] = [];
    const chat = async (): Promise<Seen[]> => {
      const seen = chatSeen;
      for await (const m of client.watchSuggestions(
        { sessionId, heartbeatSeconds: 5 },
        { signal: abort.signal },
      )) {
        seen.push({ heartbeat: m.heartbeat, open: ids(m.open) });
        if (!m.heartbeat && m.open.length > 0) break;
      }
      return seen;
    };
    const inbox = async (): Promise<Seen[]> => {
      const seen = inboxSeen;
      for await (const m of client.watchWorkspaceSuggestions(
        { workspaceId, heartbeatSeconds: 5 },
        { signal: abort.signal },
      )) {
        seen.push({ heartbeat: m.heartbeat, open: ids(m.suggestions) });
        if (!m.heartbeat && m.suggestions.length > 0) break;
      }
      return seen;
    };
    return [
      { name: `${name} WatchSuggestions`, live: chatSeen, seen: chat() },
      { name: `${name} WatchWorkspaceSuggestions`, live: inboxSeen, seen: inbox() },
    ];
  });
  // Every watch has had a heartbeat before the offer (the shortest period is 5 s).
  await eventually(async () => runs.every((run) => run.live.some((m) => m.heartbeat)), 30_000);
  const offered = (await offerOne(t.clients, sessionId, "A")).id;
  for (const run of runs) {
    const seen = await run.seen;
    expect({ name: run.name, first: seen[0] }).toEqual({
      name: run.name,
      first: { heartbeat: false, open: [] },
    });
    expect({ name: run.name, last: seen.at(-1) }).toEqual({
      name: run.name,
      last: { heartbeat: false, open: [offered] },
    });
    const between = seen.slice(1, -1);
    expect(between.length).toBeGreaterThan(0);
    expect(between.every((m) => m.heartbeat && m.open.length === 0)).toBe(true);
  }
  abort.abort();
});
