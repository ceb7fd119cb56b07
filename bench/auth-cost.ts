/**
 * What a JWT costs against a static token: the service started with both, GetSuggestion
 * under h2load with one credential and then the other, in the same run. Windows go
 * static, JWT, JWT, static (after one window that warms the process up and is not
 * counted), so that a machine drifting over the run weighs on both alike.
 * The JWT is one token presented over and over, as a client reuses its token until it
 * expires: verified once, then found in the service's cache of verified tokens
 * (server/pipeline/auth.ts `Credentials`).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { GetSuggestionRequestSchema } from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { freePort } from "../server/redis/redis-server-process.js";
import { builtService, startNode } from "./measure.js";
import type { Row } from "./report.js";
import { h2loadRow, type LoadShape } from "./rows.js";

/** The two credentials' figures. */
export interface AuthCostResult {
  /** Server CPU per call, µs, with the static token (mean of its windows). */
  readonly staticUsPerCall: number;
  /** The same with the JWT. */
  readonly jwtUsPerCall: number;
  /** `jwtUsPerCall / staticUsPerCall`. */
  readonly ratio: number;
  /** The windows, for the report's table. */
  readonly rows: readonly Row[];
}

const STATIC_TOKEN = "bench-static-app-token-0123456789";
const ISSUER = "https://issuer.bench";
const AUDIENCE = "suggest-task";

/** An ES256 key in a JWKS file in `dir`, and a token of `app workspace:*` it signed. */
async function issuer(dir: string): Promise<{ jwksFile: string; token: string }> {
  const key = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(key.publicKey)), kid: "bench", alg: "ES256", use: "sig" };
  const jwksFile = join(dir, "jwks.json");
  writeFileSync(jwksFile, JSON.stringify({ keys: [jwk] }));
  const token = await new SignJWT({ scope: "app workspace:*" })
    .setProtectedHeader({ alg: "ES256", kid: "bench" })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setExpirationTime("2h")
    .sign(key.privateKey);
  return { jwksFile, token };
}

/** GetSuggestion with a JWT against a static token, on a service of its own. */
export async function measureAuthCost(
  redis: { url: string; socketUrl: string | undefined; pid: number },
  readChat: string,
  shape: LoadShape,
): Promise<AuthCostResult> {
  const dir = mkdtempSync(join(tmpdir(), "suggest-task-auth-"));
  const port = await freePort();
  try {
    const { jwksFile, token } = await issuer(dir);
    const server = await startNode(
      [builtService()],
      {
        PORT: String(port),
        REDIS_URL: redis.socketUrl ?? redis.url,
        LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "info",
        AUTH_TOKENS: `app:${STATIC_TOKEN}`,
        AUTH_JWKS_FILE: jwksFile,
        AUTH_JWT_ISSUER: ISSUER,
        AUTH_JWT_AUDIENCE: AUDIENCE,
      },
      /listening on/,
    );
    try {
      const watched = { server: server.pid, redis: redis.pid };
      const windowOf = (credential: "static token" | "JWT") =>
        h2loadRow(
          {
            scenario: `GetSuggestion with a ${credential} (\`app workspace:*\`)`,
            writes: false,
          },
          `127.0.0.1:${port}`,
          watched,
          shape,
          {
            path: "/oda.suggest.v1.SuggestionService/GetSuggestion",
            schema: GetSuggestionRequestSchema,
            init: { sessionId: readChat, suggestionId: "o9" },
            headers: {
              authorization: `Bearer ${credential === "JWT" ? token : STATIC_TOKEN}`,
            },
          },
        );
      // A fresh process's first window runs before its code is optimized: not counted.
      await windowOf("static token");
      const rows: Row[] = [];
      for (const credential of ["static token", "JWT", "JWT", "static token"] as const) {
        rows.push(await windowOf(credential));
      }
      const mean = (prefix: string) => {
        const of = rows.filter((r) => r.scenario.startsWith(prefix));
        return of.reduce((sum, r) => sum + r.serverCpuUsPerCall, 0) / of.length;
      };
      const staticUsPerCall = mean("GetSuggestion with a static token");
      const jwtUsPerCall = mean("GetSuggestion with a JWT");
      return { staticUsPerCall, jwtUsPerCall, ratio: jwtUsPerCall / staticUsPerCall, rows };
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
