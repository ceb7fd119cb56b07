import { readFileSync } from "node:fs";
import http2 from "node:http2";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  CONTRACT_HEADER,
  contractRevision,
  VERSION_HEADER,
} from "../../server/pipeline/server-identity.js";
import { putSession, uniqueId } from "../support/harness.js";
import { ROOT } from "../support/sdk-consumer.js";
import { useTestServer } from "../support/server-fixture.js";

/*
 * Every RPC's answer names the server's release and the contract's revision it serves
 * (server/pipeline/server-identity.ts), on every protocol and path, errors and streams included.
 */

const VERSION = (
  JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }
).version;
const SERVICE = "/oda.suggest.v1.SuggestionService";

/** A gRPC call over HTTP/2 with an empty request message: its response headers. */
async function grpcHeaders(url: string, path: string): Promise<http2.IncomingHttpHeaders> {
  const session = http2.connect(url);
  try {
    const req = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
    });
    const headers = new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      req.once("response", resolve);
      req.once("error", reject);
    });
    req.end(Buffer.from([0, 0, 0, 0, 0]));
    req.resume();
    return await headers;
  } finally {
    session.close();
  }
}

describe.each([
  ["the gRPC fast path", true],
  ["connect-node only", false],
])("through %s", (_, grpcFastPath) => {
  const t = useTestServer({ settings: { grpcFastPath } });

  test("the revision is oda.suggest.v1@ and 12 hex digits of the descriptors", () => {
    expect(contractRevision()).toMatch(/^[0-9a-f]{12}$/);
  });

  const expected = () => ({
    [VERSION_HEADER]: VERSION,
    [CONTRACT_HEADER]: `oda.suggest.v1@${contractRevision()}`,
  });

  test("gRPC: an OK answer, an error and a stream carry them", async () => {
    const ok = await grpcHeaders(t.url, "/grpc.health.v1.Health/Check");
    expect(ok["grpc-status"]).toBeUndefined();
    expect(ok).toMatchObject({ ":status": 200, ...expected() });
    const refused = await grpcHeaders(t.url, `${SERVICE}/ListSuggestions`);
    expect(refused).toMatchObject(expected());
    const stream = await grpcHeaders(t.url, `${SERVICE}/WatchSuggestions`);
    expect(stream).toMatchObject(expected());
  });

  test("Connect: POST, GET and an error carry them", async () => {
    const sessionId = uniqueId();
    await putSession(t.clients, { sessionId });
    const post = await fetch(`${t.url}${SERVICE}/ListSuggestions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ sessionId }),
    });
    expect(post.status).toBe(200);
    const message = encodeURIComponent(JSON.stringify({ sessionId }));
    const get = await fetch(
      `${t.url}${SERVICE}/ListSuggestions?connect=v1&encoding=json&message=${message}`,
    );
    expect(get.status).toBe(200);
    const refused = await fetch(`${t.url}${SERVICE}/ListSuggestions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(refused.status).toBe(400);
    for (const res of [post, get, refused]) {
      expect(res.headers.get(VERSION_HEADER)).toBe(VERSION);
      expect(res.headers.get(CONTRACT_HEADER)).toBe(expected()[CONTRACT_HEADER]);
    }
  });
});
