import { Code } from "@connectrpc/connect";
import { Cluster } from "ioredis";
import { expect } from "vitest";
import { type ErrorInfo, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  AgentRole,
  RefusalReason,
  type SuggestTaskRefusal,
  SuggestTaskRefusalSchema,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { SuggestTaskResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { sessionKeys } from "../../server/store/keys.js";
import { type Clients, connectErrorOf } from "./harness.js";

/** The reference's refusal texts, copied from the reference page. */
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

let counter = 0;

/** Calls SuggestTask; each call gets its own turn unless told otherwise. */
export function offer(clients: Clients, input: OfferInput): Promise<SuggestTaskResponse> {
  counter++;
  return clients.suggestions.suggestTask({
    context: {
      sessionId: input.sessionId,
      turnId: input.turnId ?? `turn-${counter}`,
      role: input.role ?? AgentRole.TOP_LEVEL,
      toolCallId: input.toolCallId ?? "",
    },
    args: {
      title: input.title ?? `Title ${counter}`,
      tldr: input.tldr ?? "Worth doing",
      brief: input.brief ?? "Do the follow-up.",
    },
  });
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

/** The `offered` records on a session's stream, as field maps. */
export async function offeredRecords(
  redis: RedisClient,
  sessionId: string,
): Promise<Record<string, string>[]> {
  const entries = await redis.xrange(sessionKeys(sessionId).log, "-", "+");
  return entries
    .map(([, flat]) => Object.fromEntries(pairs(flat)))
    .filter((fields) => fields.type === "offered");
}

function* pairs(flat: string[]): Generator<[string, string]> {
  for (let i = 0; i + 1 < flat.length; i += 2) yield [flat[i] as string, flat[i + 1] as string];
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
