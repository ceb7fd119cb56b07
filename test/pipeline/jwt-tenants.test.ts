import { createHmac } from "node:crypto";
import { exportJWK, generateKeyPair } from "jose";
import { afterEach, describe, expect, test } from "vitest";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { uniqueId } from "../support/harness.js";
import { type Monitor, startMonitor } from "../support/monitor.js";
import { useOwnRedis, useTestServer } from "../support/server-fixture.js";
import {
  AUDIENCE,
  answerOf,
  clientsWith,
  ISSUER,
  methodOf,
  type RpcName,
  rpcBattery,
  useJwtIssuer,
} from "../support/tenant-auth.js";

const ADMIN = "admin-token-0123456789";
const STATIC_APP = "static-app-token-0123456789";
const METRICS = "metrics-token-0123456789";
const issuer = useJwtIssuer();
const own = useOwnRedis();
const t = useTestServer({
  redisUrl: () => own.url,
  settings: () => ({
    authTokens: [
      { role: "host-admin", token: ADMIN },
      { role: "app", token: STATIC_APP },
      { role: "metrics", token: METRICS },
    ],
    authJwt: { jwksFile: issuer.jwksFile, issuer: ISSUER, audience: AUDIENCE },
  }),
});

function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

let monitor: Monitor | undefined;
afterEach(async () => {
  await monitor?.stop();
  monitor = undefined;
});

/**
 * Every command the service's Redis ran while `run` ran: a MONITOR connection opened
 * before it, and a marker sent after it and awaited, so that every command sent before
 * the marker has been reported.
 */
async function commandsDuring(run: () => Promise<void>): Promise<string[]> {
  monitor = await startMonitor(own.process.port);
  await run();
  const marker = uniqueId("marker");
  await t.redis.echo(marker);
  await monitor.seen((c) => c.name === "echo" && c.args[0]?.toString() === marker);
  // The answer watch's PINGs (redis/answer-watch.ts) carry no call: left out.
  return monitor.commands
    .filter((c) => !(c.name === "echo" && c.args[0]?.toString() === marker))
    .filter((c) => c.name !== "ping")
    .map((c) => [c.name, ...c.args.map((a) => a.toString())].join(" "));
}

describe("bearer JWTs", () => {
  test("bad tokens are UNAUTHENTICATED for every RPC on both transports, and no Redis command is sent", async () => {
    const now = Math.floor(Date.now() / 1000);
    const good = await issuer.sign("agent app workspace:*");
    const [header, , signature] = good.split(".") as [string, string, string];
    const other = await generateKeyPair("ES256");
    const claims = { scope: "agent app workspace:*", iss: ISSUER, aud: AUDIENCE, exp: now + 600 };
    const hs256 = (() => {
      const head = b64({ alg: "HS256", kid: "k1", typ: "JWT" });
      const body = b64(claims);
      // The public key as the HMAC secret, as the JWKS serves it and as PEM-less JSON.
      const secret = JSON.stringify(issuer.publicJwk);
      const mac = createHmac("sha256", secret).update(`${head}.${body}`).digest("base64url");
      return `${head}.${body}.${mac}`;
    })();
    const bad: Record<string, string | undefined> = {
      expired: await issuer.sign("agent app workspace:*", { exp: now - 120 }),
      "not yet valid": await issuer.sign("agent app workspace:*", { nbf: now + 300 }),
      "wrong issuer": await issuer.sign("agent app workspace:*", { iss: "https://other.test" }),
      "wrong audience": await issuer.sign("agent app workspace:*", { aud: "other" }),
      "alg none": `${b64({ alg: "none", typ: "JWT" })}.${b64(claims)}.`,
      "HS256 with the public key as secret": hs256,
      "unknown kid": await issuer.sign("agent app workspace:*", { kid: "k-unknown" }),
      "another key under a known kid": await issuer.sign("agent app workspace:*", {
        signer: other.privateKey,
      }),
      "payload changed after signing": `${header}.${b64({ ...claims, exp: now + 6000 })}.${signature}`,
      garbage: "eyJhbGciOi.garbage.x",
      none: undefined,
    };
    const target = { sessionId: uniqueId(), suggestionId: "s1", workspaceId: "wa" };
    const answers: unknown[] = [];
    const commands = await commandsDuring(async () => {
      for (const [what, token] of Object.entries(bad)) {
        for (const protocol of ["grpc", "connect"] as const) {
          const calls = rpcBattery(clientsWith(t.url, token, protocol).suggestions, target);
          for (const name of Object.keys(calls) as RpcName[]) {
            answers.push([what, protocol, name, await answerOf(methodOf(name), calls[name]())]);
          }
        }
      }
    });
    const rpcs = SuggestionService.methods.length;
    expect(answers).toHaveLength(Object.keys(bad).length * 2 * rpcs);
    for (const answer of answers) {
      expect(answer).toEqual([
        ...(answer as unknown[]).slice(0, 3),
        { code: "Unauthenticated", message: "a valid bearer token is required", details: [] },
      ]);
    }
    expect(commands).toEqual([]);
    // The good token itself is accepted, and its call reaches Redis (the MONITOR sees it).
    const seen = await commandsDuring(async () => {
      const lists = await clientsWith(t.url, good).suggestions.listSuggestions(target);
      expect([lists.open, lists.settled]).toEqual([[], []]);
    });
    expect(seen.some((c) => c.includes(target.sessionId))).toBe(true);
  });

  test("a key rotated into the JWKS file is accepted without a restart", async () => {
    const next = await generateKeyPair("ES256", { extractable: true });
    const nextJwk = { ...(await exportJWK(next.publicKey)), kid: "k2", alg: "ES256" };
    const token = await issuer.sign("app workspace:*", { kid: "k2", signer: next.privateKey });
    const c = clientsWith(t.url, token).suggestions;
    const list = () =>
      answerOf(methodOf("ListSuggestions"), c.listSuggestions({ sessionId: uniqueId() }));
    expect(await list()).toMatchObject({ code: "Unauthenticated" });
    issuer.writeJwks(issuer.publicJwk, nextJwk);
    // The file is read again for an unknown kid at most once a second.
    await new Promise((r) => setTimeout(r, 1_100));
    expect(await list()).toMatchObject({ json: {} });
  });
});

test("a static token without grants opens every workspace", async () => {
  const sessionId = uniqueId();
  const ws = uniqueId("wa");
  await clientsWith(t.url, ADMIN).local.putSession({ session: { sessionId, workspaceId: ws } });
  const agent = clientsWith(t.url, await issuer.sign(`agent workspace:${ws}`)).suggestions;
  const battery = rpcBattery(agent, { sessionId, suggestionId: "", workspaceId: ws });
  const { suggestion } = await battery.SuggestTask();
  const c = clientsWith(t.url, STATIC_APP).suggestions;
  expect(
    (await c.getSuggestion({ sessionId, suggestionId: suggestion?.id ?? "" })).suggestion?.id,
  ).toBe(suggestion?.id);
});

test("GET /metrics with auth on answers only a credential of the metrics role", async () => {
  const get = (token?: string) =>
    fetch(`${t.url}/metrics`, {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
  for (const token of [undefined, "wrong-token-0123456789", STATIC_APP, ADMIN]) {
    const res = await get(token);
    expect([token, res.status, await res.text()]).toEqual([
      token,
      401,
      "a bearer token of the metrics role is required\n",
    ]);
  }
  const ok = await get(METRICS);
  expect(ok.status).toBe(200);
  expect(await ok.text()).toContain("# TYPE");
  const viaJwt = await get(await issuer.sign("metrics"));
  expect(viaJwt.status).toBe(200);
});
