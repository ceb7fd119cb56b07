import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { SecureClientSessionOptions } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  create,
  type DescMessage,
  type DescMethod,
  type DescService,
  toBinary,
  toJson,
} from "@bufbuild/protobuf";
import {
  type Client,
  Code,
  ConnectError,
  createClient,
  type Interceptor,
} from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { afterAll, beforeAll } from "vitest";
import {
  ChatHostService,
  FolderKind,
  LocalHostService,
  MessageAuthor,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { uniqueId } from "./harness.js";

/** The `iss` and `aud` of the test tokens. */
export const ISSUER = "https://issuer.test";
export const AUDIENCE = "suggest-task";

/** What a test token may say otherwise than a good one. */
export interface TokenOptions {
  readonly iss?: string;
  readonly aud?: string;
  readonly exp?: number;
  readonly nbf?: number;
  readonly kid?: string;
  readonly signer?: Parameters<SignJWT["sign"]>[0];
}

/** A token issuer of a file's own: its ES256 key (`k1`) published in a JWKS file. */
export interface JwtIssuer {
  /** The JWKS file the server reads (`AUTH_JWKS_FILE`). */
  readonly jwksFile: string;
  /** The public key `k1` as the JWKS file holds it. */
  readonly publicJwk: JWK;
  /** Replaces the keys of the JWKS file. */
  writeJwks(...keys: JWK[]): void;
  /** A token with `scope`, signed by `k1` unless told otherwise, valid for 10 minutes. */
  sign(scope: string, options?: TokenOptions): Promise<string>;
}

/**
 * A JWT issuer for the file: its key made and its JWKS file written by a `beforeAll`
 * registered before the server's (so that the server's settings may name the file),
 * the folder removed after the tests.
 */
export function useJwtIssuer(): JwtIssuer {
  const dir = mkdtempSync(join(tmpdir(), "jwks-"));
  const jwksFile = join(dir, "jwks.json");
  let key: Awaited<ReturnType<typeof generateKeyPair>> | undefined;
  let publicJwk: JWK | undefined;
  const writeJwks = (...keys: JWK[]) => writeFileSync(jwksFile, JSON.stringify({ keys }));
  beforeAll(async () => {
    key = await generateKeyPair("ES256", { extractable: true });
    publicJwk = { ...(await exportJWK(key.publicKey)), kid: "k1", alg: "ES256", use: "sig" };
    writeJwks(publicJwk);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return {
    jwksFile,
    get publicJwk() {
      if (publicJwk === undefined) throw new Error("the issuer is read before its beforeAll");
      return publicJwk;
    },
    writeJwks,
    async sign(scope, options = {}) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ scope })
        .setProtectedHeader({ alg: "ES256", kid: options.kid ?? "k1" })
        .setIssuer(options.iss ?? ISSUER)
        .setAudience(options.aud ?? AUDIENCE)
        .setIssuedAt(now)
        .setNotBefore(options.nbf ?? now)
        .setExpirationTime(options.exp ?? now + 600)
        .sign(options.signer ?? (key as { privateKey: Parameters<SignJWT["sign"]>[0] }).privateKey);
    },
  };
}

/** How the test clients reach the server: gRPC (the fast path) or Connect (connect-node). */
export type Protocol = "grpc" | "connect";

/**
 * Clients of the server at `baseUrl` presenting `token` as a bearer token (none when
 * undefined): gRPC over HTTP/2, which the gRPC fast path serves, or Connect over
 * HTTP/1.1, which connect-node serves. `tls` carries a client certificate and the CA.
 */
export function clientsWith(
  baseUrl: string,
  token: string | undefined,
  protocol: Protocol = "grpc",
  tls?: SecureClientSessionOptions,
) {
  const bearer: Interceptor = (next) => (req) => {
    if (token !== undefined) req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const interceptors = [bearer];
  const transport =
    protocol === "grpc"
      ? createGrpcTransport({ baseUrl, interceptors, ...(tls && { nodeOptions: tls }) })
      : tls === undefined
        ? createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors })
        : createConnectTransport({ baseUrl, httpVersion: "2", interceptors, nodeOptions: tls });
  return {
    suggestions: createClient(SuggestionService, transport),
    local: createClient(LocalHostService, transport),
    host: createClient(ChatHostService, transport),
  };
}

/** What a call answered, comparable byte for byte. */
export type Answer =
  | { readonly ok: string; readonly json: unknown }
  | {
      readonly code: string;
      readonly message: string;
      readonly details: readonly { readonly type: string; readonly bytes: string }[];
    };

/**
 * What a call of `method` answered: OK with the response's binary encoding (and its JSON,
 * to read), or the error's code, message and each detail's type and bytes.
 */
export async function answerOf(method: DescMethod, call: Promise<unknown>): Promise<Answer> {
  try {
    const value = (await call) as Parameters<typeof toBinary>[1];
    const schema: DescMessage = method.output;
    return {
      ok: Buffer.from(toBinary(schema, value)).toString("hex"),
      json: toJson(schema, value),
    };
  } catch (err) {
    const e = ConnectError.from(err);
    return {
      code: Code[e.code],
      message: e.rawMessage,
      details: e.details.map((d) =>
        "desc" in d
          ? {
              type: d.desc.typeName,
              bytes: Buffer.from(toBinary(d.desc, create(d.desc, d.value))).toString("hex"),
            }
          : { type: d.type, bytes: Buffer.from(d.value).toString("hex") },
      ),
    };
  }
}

/** The first message of a server stream (the stream is then cancelled), or its error. */
export async function firstOf<T>(stream: AsyncIterable<T>): Promise<T | undefined> {
  for await (const message of stream) return message;
  return undefined;
}

/** One chat as a battery aims at it. */
export interface Target {
  readonly sessionId: string;
  readonly suggestionId: string;
  readonly workspaceId: string;
}

/**
 * Every RPC of SuggestionService against one chat, by the RPC's name (the tenant tests
 * check that the names are the service's, so that a new RPC must join it).
 */
export function rpcBattery(c: Client<typeof SuggestionService>, target: Target) {
  const { sessionId, suggestionId, workspaceId } = target;
  const ids = { sessionId, suggestionId };
  const turn = () => ({ sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL });
  return {
    SuggestTask: () =>
      c.suggestTask({ context: turn(), args: { title: "Another", tldr: "R", brief: "B" } }),
    ListSuggestions: () => c.listSuggestions({ sessionId }),
    GetSuggestion: () => c.getSuggestion(ids),
    StartSuggestion: () => c.startSuggestion(ids),
    DraftSuggestion: () => c.draftSuggestion(ids),
    DismissSuggestion: () => c.dismissSuggestion(ids),
    RestoreSuggestion: () => c.restoreSuggestion(ids),
    WatchSuggestions: () => firstOf(c.watchSuggestions({ sessionId })),
    WithdrawSuggestion: () =>
      c.withdrawSuggestion({ context: turn(), args: { title: "Offer", reason: "R" } }),
    ListSettlements: () => c.listSettlements({ sessionId, after: "" }),
    ListWorkspaceSuggestions: () => c.listWorkspaceSuggestions({ workspaceId }),
    WatchWorkspaceSuggestions: () => firstOf(c.watchWorkspaceSuggestions({ workspaceId })),
    DeleteSuggestions: () => c.deleteSuggestions({ sessionId }),
  };
}

/** The name of an RPC of SuggestionService. */
export type RpcName = keyof ReturnType<typeof rpcBattery>;

/** The descriptor of the RPC `name` of SuggestionService (or of `services`). */
export function methodOf(
  name: string,
  services: readonly DescService[] = [SuggestionService],
): DescMethod {
  const method = services.flatMap((s) => s.methods).find((m) => m.name === name);
  if (method === undefined) throw new Error(`no RPC ${name}`);
  return method;
}

/** The services of the embedded host, whose RPCs `hostBattery` calls. */
export const HOST_SERVICES: readonly DescService[] = [ChatHostService, LocalHostService];

/** A session of the embedded host, the chat started from it, and that chat's first message. */
export interface HostTarget {
  readonly sessionId: string;
  readonly chatId: string;
  readonly messageId: string;
  readonly workspaceId: string;
}

/**
 * Every RPC of the embedded host (ChatHostService and LocalHostService) against one
 * target, by the RPC's name: the reads and writes of its session and chat; CreateChat
 * makes a chat in the target's workspace, PutSession puts the session again in its
 * workspace but in a scheduled task's folder. Repeated, each call is the same call.
 */
export function hostBattery(
  c: {
    readonly host: Client<typeof ChatHostService>;
    readonly local: Client<typeof LocalHostService>;
  },
  target: HostTarget,
) {
  const { sessionId, chatId, messageId, workspaceId } = target;
  return {
    GetSession: () => c.host.getSession({ sessionId }),
    CreateChat: () =>
      c.host.createChat({ idempotencyKey: `create-${chatId}`, workspaceId, title: "Mine" }),
    PostMessage: () =>
      c.host.postMessage({
        chatId,
        idempotencyKey: `post-${chatId}`,
        author: MessageAuthor.PERSON,
        text: "Do it",
      }),
    PutSession: () =>
      c.local.putSession({
        session: { sessionId, workspaceId, folder: FolderKind.SCHEDULED_TASK },
      }),
    GetChat: () => c.local.getChat({ chatId }),
    CreateGoal: () => c.local.createGoal({ chatId, messageId }),
  };
}

/** The name of an RPC of the embedded host. */
export type HostRpcName = keyof ReturnType<typeof hostBattery>;
