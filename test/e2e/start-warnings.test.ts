import { afterEach, expect, test } from "vitest";
import { grpcClients, spawnService, tempDir } from "../support/harness.js";

/*
 * What a deployment is told at start: a service with no credentials stays on loopback
 * unless ALLOW_UNAUTHENTICATED=1 says a mesh or gateway authenticates for it, and the
 * embedded chat host on a reachable address is named as such.
 */

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function started(env: Record<string, string>) {
  const data = tempDir("warn");
  cleanups.push(data.remove);
  const service = await spawnService(undefined, { DATA_DIR: data.dir, ...env });
  cleanups.push(() => service.kill("SIGTERM"));
  return service;
}

test("without credentials on HOST=0.0.0.0 it listens on loopback only and says how to opt out", async () => {
  const service = await started({ HOST: "0.0.0.0" });
  expect(service.output()).toContain(
    "suggest-task: no AUTH_TOKENS (nor AUTH_JWKS_FILE or AUTH_JWKS_URL) are set, so it listens on loopback only (127.0.0.1), not on 0.0.0.0; ALLOW_UNAUTHENTICATED=1 listens there without credentials",
  );
  expect(service.output()).toMatch(
    /no auth \(AUTH_TOKENS unset\): loopback only; .*listening on http:\/\/127\.0\.0\.1:\d+ /,
  );
  expect(service.output()).not.toContain("warning:");
});

test("ALLOW_UNAUTHENTICATED=1 listens on HOST with no credentials, with warnings for it and the embedded host", async () => {
  const service = await started({ HOST: "0.0.0.0", ALLOW_UNAUTHENTICATED: "1" });
  const out = service.output();
  expect(out).toContain(
    "suggest-task: warning: ALLOW_UNAUTHENTICATED=1: open on 0.0.0.0 with no credentials; every caller that reaches it is trusted, so a mesh or gateway must authenticate them",
  );
  expect(out).toContain(
    "suggest-task: warning: CHAT_HOST_URL is not set: started chats stay inside this service's embedded chat host until CHAT_HOST_URL names the product's chat host",
  );
  expect(out).toMatch(
    /no auth \(ALLOW_UNAUTHENTICATED=1\); .*listening on http:\/\/0\.0\.0\.0:\d+ /,
  );
  // Served without a credential, as the mesh in front of it would pass a call on.
  const { suggestions } = grpcClients(service.url);
  const listed = await suggestions.listSuggestions({ sessionId: "nobody-yet" });
  expect(listed.open).toEqual([]);
});

test("on loopback nothing is warned", async () => {
  const service = await started({ HOST: "127.0.0.1", ALLOW_UNAUTHENTICATED: "1" });
  expect(service.output()).not.toContain("warning:");
});
