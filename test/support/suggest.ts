import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { Cluster } from "ioredis";
import { expect } from "vitest";
import { type ErrorInfo, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  AgentRole,
  RefusalReason,
  type Suggestion,
  type SuggestTaskRefusal,
  SuggestTaskRefusalSchema,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { SuggestTaskResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import type { SuggestionStore } from "../../server/store/suggestion-store.js";
import { type Clients, connectErrorOf, putSession, uniqueId } from "./harness.js";
import { logRecords } from "./lists.js";

/** The refusal texts, copied from docs/contract.md. */
export const REFUSAL_TEXT = {
  helper:
    "suggest_task is only for the top-level agent; report the follow-up in your result instead.",
  noSession: "suggest_task requires an owning agent session",
  scheduled:
    "suggest_task: this chat runs in a scheduled task folder, where no new chat can start; offer no suggestions here",
  noTurn: "suggest_task: requires an open model turn",
  lifetime: "suggest_task: this chat already offered 10 suggestions; offer no more",
  open: "suggest_task: 3 suggestions already wait for the user; offer no more until one is started or dismissed",
  turn: "suggest_task: one suggestion per turn; this turn already offered one",
} as const;

/** The reference's success line for a title. */
export function successText(title: string): string {
  return `Suggested "${title}". The user decides whether to start it; do not start it yourself.`;
}

/** A tool call's context and arguments, with defaults that pass every check. */
export interface OfferInput {
  sessionId: string;
  turnId?: string;
  role?: AgentRole;
  toolCallId?: string;
  title?: string;
  tldr?: string;
  brief?: string;
}

let turns = 0;

/** A turn id no other call of this test process used: the suite's one turn counter. */
export function nextTurnId(): string {
  turns++;
  return `turn-${turns}`;
}

/**
 * Calls SuggestTask, the suite's one way to offer through the tool: each call gets a
 * turn of its own (`nextTurnId`) and its own title unless told otherwise.
 */
export function offer(clients: Clients, input: OfferInput): Promise<SuggestTaskResponse> {
  const fresh = nextTurnId();
  const turnId = input.turnId ?? fresh;
  return clients.suggestions.suggestTask({
    context: {
      sessionId: input.sessionId,
      turnId,
      role: input.role ?? AgentRole.TOP_LEVEL,
      toolCallId: input.toolCallId ?? "",
    },
    args: {
      title: input.title ?? `Title of ${fresh}`,
      tldr: input.tldr ?? "Worth doing",
      brief: input.brief ?? "Do the follow-up.",
    },
  });
}

/**
 * Offers one suggestion (`offer`) titled `title` (by default a title of its own, as the
 * tool refuses a second open offer of one title), and answers the suggestion recorded.
 */
export async function offerOne(
  clients: Clients,
  sessionId: string,
  title?: string,
): Promise<Suggestion> {
  const res = await offer(clients, title === undefined ? { sessionId } : { sessionId, title });
  if (res.suggestion === undefined) throw new Error("SuggestTask answered no suggestion");
  return res.suggestion;
}

/** A refusal as the wire carries it. */
export interface WireRefusal {
  readonly message: string;
  readonly code: Code;
  readonly refusal: SuggestTaskRefusal | undefined;
  readonly info: ErrorInfo | undefined;
}

/** Awaits a call that must fail and reads its refusal details. */
export async function refusalOf(call: Promise<unknown>): Promise<WireRefusal> {
  const err = await connectErrorOf(call);
  return {
    message: err.rawMessage,
    code: err.code,
    refusal: err.findDetails(SuggestTaskRefusalSchema)[0],
    info: err.findDetails(ErrorInfoSchema)[0],
  };
}

/** The expected refusal on the wire: text, code, typed detail and ErrorInfo. */
export function expectRefusal(
  actual: WireRefusal,
  expected: {
    message: string;
    code: Code;
    reason: RefusalReason;
    field?: string;
    limit?: number;
    got?: number;
    /** The ErrorInfo domain: the tool's name; suggest_task unless told. */
    domain?: string;
  },
): void {
  const field = expected.field ?? "";
  const limit = expected.limit ?? 0;
  const got = expected.got ?? 0;
  expect(actual.message).toBe(expected.message);
  expect(Code[actual.code]).toBe(Code[expected.code]);
  expect(actual.refusal).toMatchObject({ reason: expected.reason, field, limit, got });
  const metadata: Record<string, string> = {};
  if (field !== "") metadata.field = field;
  if (limit !== 0) metadata.limit = String(limit);
  if (got !== 0) metadata.got = String(got);
  expect(actual.info).toMatchObject({
    domain: expected.domain ?? "suggest_task",
    reason: RefusalReason[expected.reason],
    metadata,
  });
}

/** The `offered` records on a session's stream, as field maps (`logRecords`). */
export async function offeredRecords(
  redis: RedisClient,
  sessionId: string,
): Promise<Record<string, string>[]> {
  return (await logRecords(redis, sessionId)).filter((fields) => fields.type === "offered");
}

/** Every key of a session on the server (on every primary of a cluster): what a call left. */
export async function keysOf(redis: RedisClient, id: string): Promise<string[]> {
  const found: string[] = [];
  for (const node of redis instanceof Cluster ? redis.nodes("master") : [redis]) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(
        cursor,
        "MATCH",
        `*{${id.replace(/([*?[\]\\])/g, "\\$1")}}*`,
        "COUNT",
        1000,
      );
      found.push(...keys);
      cursor = next;
    } while (cursor !== "0");
  }
  return found;
}

/**
 * A new session on the embedded host (a normal folder in a workspace) with one offer of
 * each title, in order, each on a turn of its own; answers the session and the offer ids.
 */
export async function sessionWithOffers(clients: Clients, ...titles: string[]) {
  const sessionId = uniqueId();
  await putSession(clients, { sessionId });
  const ids: string[] = [];
  for (const title of titles) ids.push((await offerOne(clients, sessionId, title)).id);
  return { sessionId, ids };
}

/**
 * A new session on the embedded host (workspace ws-1, a normal folder) with one offer
 * titled `title`: what the Start suites begin from. Answers both ids.
 */
export async function sessionWithOffer(clients: Clients, title = "Write the migration guide") {
  const { sessionId, ids } = await sessionWithOffers(clients, title);
  return { sessionId, suggestionId: ids[0] ?? "" };
}

/**
 * A new chat on the embedded host, in a normal folder of workspace ws-1 unless `init`
 * says otherwise; answers its session id. The suggest_task rule suites start from one.
 */
export async function newChat(
  clients: Clients,
  init: Partial<Parameters<typeof putSession>[1]> = {},
): Promise<string> {
  const sessionId = uniqueId();
  await putSession(clients, { ...init, sessionId });
  return sessionId;
}

/**
 * One open offer recorded straight through a store (no RPC, no host check), of
 * `workspaceId` if given, in a fresh turn: answers its suggestion's id.
 */
export async function storeOffer(
  store: SuggestionStore,
  sessionId: string,
  workspaceId = "",
): Promise<string> {
  const id = randomUUID();
  const offer = { id, turnId: nextTurnId(), toolCallId: "", title: "T", tldr: "L", brief: "B" };
  const offered = await store.offer(sessionId, offer, false, workspaceId);
  if (offered.kind !== "recorded") throw new Error(`the offer answered ${offered.kind}`);
  return id;
}
