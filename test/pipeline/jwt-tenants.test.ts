import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { FolderKind, LocalHostService } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { uniqueId } from "../support/harness.js";
import { useOwnRedis, useTestServer } from "../support/server-fixture.js";

const ISSUER = "https://issuer.test";
const AUDIENCE = "suggest-task";
const ADMIN = "admin-token-0123456789";
const STATIC_APP = "static-app-token-0123456789";
const METRICS = "metrics-token-0123456789";
const dir = mkdtempSync(join(tmpdir(), "jwks-"));
const jwksFile = join(dir, "jwks.json");
let key: Awaited<ReturnType<typeof generateKeyPair>>;
let publicJwk: JWK;

function writeJwks(...keys: JWK[]) {
  writeFileSync(jwksFile, JSON.stringify({ keys }));
}

beforeAll(async () => {
  key = await generateKeyPair("ES256", { extractable: true });
  publicJwk = { ...(await exportJWK(key.publicKey)), kid: "k1", alg: "ES256", use: "sig" };
  writeJwks(publicJwk);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const own = useOwnRedis();
const t = useTestServer({
  redisUrl: () => own.url,
  settings: () => ({
    authTokens: [
      { role: "host-admin", token: ADMIN },
      { role: "app", token: STATIC_APP },
      { role: "metrics", token: METRICS },
    ],
    authJwt: { jwksFile, issuer: ISSUER, audience: AUDIENCE },
  }),
});

/** A token signed by `signer` (the configured key unless told otherwise). */
async function jwt(
  scope: string,
  options: {
    iss?: string;
    aud?: string;
    exp?: number;
    nbf?: number;
    kid?: string;
    signer?: Parameters<SignJWT["sign"]>[0];
  } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ scope })
    .setProtectedHeader({ alg: "ES256", kid: options.kid ?? "k1" })
    .setIssuer(options.iss ?? ISSUER)
    .setAudience(options.aud ?? AUDIENCE)
    .setIssuedAt(now)
    .setNotBefore(options.nbf ?? now)
    .setExpirationTime(options.exp ?? now + 600)
    .sign(options.signer ?? key.privateKey);
}

function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

function clientsWith(token: string | undefined, connect = false) {
  const bearer: Interceptor = (next) => (req) => {
    if (token !== undefined) req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const transport = connect
    ? createConnectTransport({ baseUrl: t.url, httpVersion: "1.1", interceptors: [bearer] })
    : createGrpcTransport({ baseUrl: t.url, interceptors: [bearer] });
  return {
    suggestions: createClient(SuggestionService, transport),
    local: createClient(LocalHostService, transport),
  };
}

/** What a call answered: OK and its message, or the error's code, message and details. */
async function answerOf(call: Promise<unknown>): Promise<unknown> {
  try {
    const value = await call;
    return {
      ok: JSON.parse(JSON.stringify(value, (_, v) => (typeof v === "bigint" ? `${v}` : v))),
    };
  } catch (err) {
    const e = ConnectError.from(err);
    return {
      code: Code[e.code],
      message: e.rawMessage,
      details: e.details.map((d) => ("desc" in d ? d.desc.typeName : d.type)),
      bytes: e.details.map((d) =>
        "desc" in d ? "" : Buffer.from((d as { value: Uint8Array }).value).toString("hex"),
      ),
    };
  }
}

async function commandsProcessed(): Promise<number> {
  const info = await t.redis.info("stats");
  return Number(/total_commands_processed:(\d+)/.exec(info)?.[1]);
}

describe("bearer JWTs", () => {
  test("bad tokens are UNAUTHENTICATED on both transports, and nothing reaches Redis", async () => {
    const now = Math.floor(Date.now() / 1000);
    const good = await jwt("app workspace:*");
    const [header, payload, signature] = good.split(".") as [string, string, string];
    const other = await generateKeyPair("ES256");
    const hs256 = (() => {
      const head = b64({ alg: "HS256", kid: "k1", typ: "JWT" });
      const body = b64({ scope: "app workspace:*", iss: ISSUER, aud: AUDIENCE, exp: now + 600 });
      const secret = JSON.stringify(publicJwk);
      const mac = createHmac("sha256", secret).update(`${head}.${body}`).digest("base64url");
      return `${head}.${body}.${mac}`;
    })();
    const bad: Record<string, string | undefined> = {
      expired: await jwt("app workspace:*", { exp: now - 120 }),
      "not yet valid": await jwt("app workspace:*", { nbf: now + 300 }),
      "wrong issuer": await jwt("app workspace:*", { iss: "https://other.test" }),
      "wrong audience": await jwt("app workspace:*", { aud: "other" }),
      "alg none": `${b64({ alg: "none", typ: "JWT" })}.${payload}.`,
      "HS256 with the public key as secret": hs256,
      "unknown kid": await jwt("app workspace:*", { kid: "k-unknown" }),
      "another key under a known kid": await jwt("app workspace:*", { signer: other.privateKey }),
      "payload changed after signing": `${header}.${b64({ scope: "app workspace:*", iss: ISSUER, aud: AUDIENCE, exp: now + 6000 })}.${signature}`,
      garbage: "eyJhbGciOi.garbage.x",
      none: undefined,
    };
    const sessionId = uniqueId();
    for (const [what, token] of Object.entries(bad)) {
      for (const connect of [false, true]) {
        const c = clientsWith(token, connect).suggestions;
        const before = await commandsProcessed();
        const answers = [
          await answerOf(c.listSuggestions({ sessionId })),
          await answerOf(
            (async () => {
              for await (const _ of c.watchSuggestions({ sessionId })) return;
            })(),
          ),
        ];
        for (const answer of answers) {
          expect([what, connect, answer]).toMatchObject([
            what,
            connect,
            { code: "Unauthenticated", message: "a valid bearer token is required" },
          ]);
        }
        // Only the INFO that reads the counter.
        expect([what, await commandsProcessed()]).toEqual([what, before + 1]);
      }
    }
    // The good token itself is accepted.
    expect(
      await answerOf(clientsWith(good).suggestions.listSuggestions({ sessionId })),
    ).toMatchObject({
      ok: { open: [], settled: [] },
    });
  });

  test("a key rotated into the JWKS file is accepted without a restart", async () => {
    const next = await generateKeyPair("ES256", { extractable: true });
    const nextJwk = { ...(await exportJWK(next.publicKey)), kid: "k2", alg: "ES256" };
    const token = await jwt("app workspace:*", { kid: "k2", signer: next.privateKey });
    const c = clientsWith(token).suggestions;
    expect(await answerOf(c.listSuggestions({ sessionId: uniqueId() }))).toMatchObject({
      code: "Unauthenticated",
    });
    writeJwks(publicJwk, nextJwk);
    // The file is read again for an unknown kid at most once a second.
    await new Promise((r) => setTimeout(r, 1_100));
    expect(await answerOf(c.listSuggestions({ sessionId: uniqueId() }))).toMatchObject({
      ok: { open: [], settled: [] },
    });
  });

  test("a role outside the RPC's is PERMISSION_DENIED", async () => {
    const c = clientsWith(await jwt("agent workspace:*")).suggestions;
    expect(await answerOf(c.listSuggestions({ sessionId: uniqueId() }))).toMatchObject({
      code: "PermissionDenied",
      message:
        "a token of the agent role may not call oda.suggest.v1.SuggestionService/ListSuggestions",
    });
  });
});

describe("the tenant rule", () => {
  /** Every RPC of SuggestionService against one chat, as a credential answers them. */
  function battery(token: string, sessionId: string, suggestionId: string, workspaceId: string) {
    const c = clientsWith(token).suggestions;
    const ids = { sessionId, suggestionId };
    const turn = () => ({ sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL });
    return {
      SuggestTask: () =>
        c.suggestTask({ context: turn(), args: { title: "Another", tldr: "R", brief: "B" } }),
      WithdrawSuggestion: () =>
        c.withdrawSuggestion({ context: turn(), args: { title: "Offer", reason: "R" } }),
      ListSettlements: () => c.listSettlements({ sessionId, after: "" }),
      ListSuggestions: () => c.listSuggestions({ sessionId }),
      GetSuggestion: () => c.getSuggestion(ids),
      WatchSuggestions: async () => {
        for await (const m of c.watchSuggestions({ sessionId })) return m;
        return undefined;
      },
      DraftSuggestion: () => c.draftSuggestion(ids),
      DismissSuggestion: () => c.dismissSuggestion(ids),
      RestoreSuggestion: () => c.restoreSuggestion(ids),
      StartSuggestion: () => c.startSuggestion(ids),
      ListWorkspaceSuggestions: () => c.listWorkspaceSuggestions({ workspaceId }),
      WatchWorkspaceSuggestions: async () => {
        for await (const m of c.watchWorkspaceSuggestions({ workspaceId })) return m;
        return undefined;
      },
    };
  }

  /** A chat of `workspaceId` with one open offer titled "Offer". */
  async function chatWithOffer(workspaceId: string) {
    const sessionId = uniqueId();
    await clientsWith(ADMIN).local.putSession({
      session: { sessionId, workspaceId, folder: FolderKind.NORMAL },
    });
    const agent = clientsWith(await jwt(`agent workspace:${workspaceId}`)).suggestions;
    const { suggestion } = await agent.suggestTask({
      context: { sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL },
      args: { title: "Offer", tldr: "R", brief: "B" },
    });
    return { sessionId, suggestionId: suggestion?.id ?? "" };
  }

  test("workspace B's credential gets, for A's chat, what a truly absent chat gets", async () => {
    const wsA = uniqueId("wa");
    const wsB = uniqueId("wb");
    const a = await chatWithOffer(wsA);
    const absent = { sessionId: uniqueId(), suggestionId: a.suggestionId };
    const token = await jwt(`agent app workspace:${wsB}`);
    const foreign = battery(token, a.sessionId, a.suggestionId, wsA);
    const none = battery(token, absent.sessionId, absent.suggestionId, wsA);
    for (const name of Object.keys(foreign) as (keyof typeof foreign)[]) {
      if (name.includes("Workspace")) continue;
      const got = await answerOf(foreign[name]());
      const want = await answerOf(none[name]());
      expect([name, got]).toEqual([name, want]);
    }
    // The offer is untouched: A's credential still sees it open.
    const own = clientsWith(await jwt(`app workspace:${wsA}`)).suggestions;
    const lists = await own.listSuggestions({ sessionId: a.sessionId });
    expect(lists.open.map((s) => s.id)).toEqual([a.suggestionId]);
    // The inbox of a workspace not granted.
    for (const name of ["ListWorkspaceSuggestions", "WatchWorkspaceSuggestions"] as const) {
      expect([name, await answerOf(foreign[name]())]).toEqual([
        name,
        {
          code: "PermissionDenied",
          message: `this credential is not granted workspace ${wsA}`,
          details: [],
          bytes: [],
        },
      ]);
    }
  });

  test.each([
    ["A's own credential", (ws: string) => `agent app workspace:${ws}`],
    ["a workspace:* credential", () => "agent app workspace:*"],
  ])("%s sees and acts on A's chat", async (_, scope) => {
    const wsA = uniqueId("wa");
    const a = await chatWithOffer(wsA);
    const calls = battery(await jwt(scope(wsA)), a.sessionId, a.suggestionId, wsA);
    expect((await calls.GetSuggestion()).suggestion?.id).toBe(a.suggestionId);
    expect((await calls.ListSuggestions()).open.map((s) => s.id)).toEqual([a.suggestionId]);
    expect((await calls.WatchSuggestions())?.open.map((s) => s.id)).toEqual([a.suggestionId]);
    expect((await calls.ListWorkspaceSuggestions()).suggestions.map((s) => s.id)).toEqual([
      a.suggestionId,
    ]);
    expect((await calls.SuggestTask()).suggestion?.title).toBe("Another");
    expect((await calls.WithdrawSuggestion()).suggestion?.id).toBe(a.suggestionId);
    expect((await calls.ListSettlements()).settlements).toHaveLength(1);
    expect((await calls.RestoreSuggestion()).suggestion?.id).toBe(a.suggestionId);
    expect((await calls.DismissSuggestion()).suggestion?.id).toBe(a.suggestionId);
    expect((await calls.RestoreSuggestion()).suggestion?.id).toBe(a.suggestionId);
    expect((await calls.DraftSuggestion()).suggestion?.id).toBe(a.suggestionId);
  });

  test("a static token without grants opens every workspace", async () => {
    const wsA = uniqueId("wa");
    const a = await chatWithOffer(wsA);
    const c = clientsWith(STATIC_APP).suggestions;
    expect((await c.getSuggestion(a)).suggestion?.id).toBe(a.suggestionId);
  });
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
  const viaJwt = await get(await jwt("metrics"));
  expect(viaJwt.status).toBe(200);
});
