import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, test } from "vitest";
import { putSession, uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import { offer } from "../support/suggest.js";

/*
 * The reads marked `idempotency_level = NO_SIDE_EFFECTS` answer Connect GET
 * (`?connect=v1&encoding=json&message=...`) on the service's port, with the caching
 * headers of server/transport/connect-get.ts; plain curl is the client.
 */

const run = promisify(execFile);

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** `curl -i` of `url` with `headers`, its answer split up. */
async function curl(url: string, headers: string[] = []): Promise<Answer> {
  const args = ["-sS", "-i", ...headers.flatMap((h) => ["-H", h]), url];
  const { stdout } = await run("curl", args, { encoding: "utf8" });
  const [head = "", body = ""] = stdout.split("\r\n\r\n", 2);
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headerPairs = lines.map((l) => {
    const at = l.indexOf(":");
    return [l.slice(0, at).toLowerCase(), l.slice(at + 1).trim()] as const;
  });
  return {
    status: Number(statusLine.split(" ")[1]),
    headers: Object.fromEntries(headerPairs),
    body,
  };
}

describe("Connect GET of the reads", () => {
  const t = useTestServer();
  const get = (rpc: string, message: object) =>
    `${t.url}/oda.suggest.v1.SuggestionService/${rpc}?connect=v1&encoding=json&message=${encodeURIComponent(JSON.stringify(message))}`;

  async function chatWithOffer(title: string) {
    const sessionId = uniqueId();
    const workspaceId = uniqueId("ws");
    await putSession(t.clients, { sessionId, workspaceId });
    const offered = await offer(t.clients, { sessionId, title });
    return { sessionId, workspaceId, suggestionId: offered.suggestion?.id ?? "" };
  }

  test("curl GET of ListSuggestions answers 200 with the JSON, private and revalidated", async () => {
    const { sessionId, suggestionId } = await chatWithOffer("First");
    const res = await curl(get("ListSuggestions", { sessionId }));
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json");
    expect(res.headers["cache-control"]).toBe("private, no-cache");
    expect(res.headers.vary).toBe("authorization");
    expect(res.headers.etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    const body = JSON.parse(res.body) as { open: { id: string; title: string; state: string }[] };
    expect(body.open.map((s) => [s.id, s.title, s.state])).toEqual([
      [suggestionId, "First", "SUGGESTION_STATE_OPEN"],
    ]);
  });

  test("GetSuggestion, ListSettlements and ListWorkspaceSuggestions answer GET too", async () => {
    const { sessionId, workspaceId, suggestionId } = await chatWithOffer("Second");
    const one = await curl(get("GetSuggestion", { sessionId, suggestionId }));
    expect(one.status).toBe(200);
    expect(JSON.parse(one.body).suggestion.title).toBe("Second");
    const settlements = await curl(get("ListSettlements", { sessionId }));
    expect(settlements.status).toBe(200);
    expect(JSON.parse(settlements.body).settlements).toBeUndefined();
    const inbox = await curl(get("ListWorkspaceSuggestions", { workspaceId }));
    expect(inbox.status).toBe(200);
    expect(JSON.parse(inbox.body).suggestions.map((s: { id: string }) => s.id)).toEqual([
      suggestionId,
    ]);
  });

  test("If-None-Match of the current ETag answers 304 without a body, until the list changes", async () => {
    const { sessionId } = await chatWithOffer("Third");
    const first = await curl(get("ListSuggestions", { sessionId }));
    const etag = first.headers.etag as string;
    const again = await curl(get("ListSuggestions", { sessionId }), [`If-None-Match: ${etag}`]);
    expect(again.status).toBe(304);
    expect(again.headers.etag).toBe(etag);
    expect(again.body).toBe("");
    await offer(t.clients, { sessionId, title: "Fourth" });
    const changed = await curl(get("ListSuggestions", { sessionId }), [`If-None-Match: ${etag}`]);
    expect(changed.status).toBe(200);
    expect(changed.headers.etag).not.toBe(etag);
    expect(JSON.parse(changed.body).open.map((s: { title: string }) => s.title)).toEqual([
      "Fourth",
      "Third",
    ]);
  });

  test("a refused GET is not stored; a GET of an RPC that changes state is 405", async () => {
    const bad = await curl(get("ListSuggestions", { sessionId: "no spaces" }));
    expect(bad.status).toBe(400);
    expect(bad.headers["cache-control"]).toBe("no-store");
    expect(JSON.parse(bad.body).code).toBe("invalid_argument");
    const binary = await curl(
      `${t.url}/oda.suggest.v1.SuggestionService/ListSuggestions?connect=v1&encoding=proto&base64=1&message=_w`,
    );
    expect(binary.status).toBe(400);
    expect(JSON.parse(binary.body)).toMatchObject({ code: "invalid_argument" });
    expect(JSON.parse(binary.body).message).toMatch(/^parse binary: /);
    const write = await curl(get("DismissSuggestion", { sessionId: "s", suggestionId: "x" }));
    expect(write.status).toBe(405);
  });
});
