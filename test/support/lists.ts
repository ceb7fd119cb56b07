import { Code } from "@connectrpc/connect";
import { expect } from "vitest";
import { type ErrorInfo, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  type Suggestion,
  type SuggestionError,
  SuggestionErrorSchema,
  SuggestionState,
} from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { WatchSuggestionsResponse } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { parseEntries } from "../../server/domain/fold.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { sessionKeys } from "../../server/store/keys.js";
import { type Clients, connectErrorOf } from "./harness.js";

/** Ids of a list, in order. */
export function ids(list: readonly Suggestion[]): string[] {
  return list.map((s) => s.id);
}

/** A failed call as the wire carries it. */
export interface WireFailure {
  readonly message: string;
  readonly code: Code;
  readonly detail: SuggestionError | undefined;
  readonly info: ErrorInfo | undefined;
}

/** Awaits a call that must fail and reads its SuggestionError and ErrorInfo. */
export async function failureOf(call: Promise<unknown>): Promise<WireFailure> {
  const err = await connectErrorOf(call);
  return {
    message: err.rawMessage,
    code: err.code,
    detail: err.findDetails(SuggestionErrorSchema)[0],
    info: err.findDetails(ErrorInfoSchema)[0],
  };
}

/** Asserts task-suggestion/not-found for `id`: message, code, payload and ErrorInfo. */
export function expectNotFound(f: WireFailure, id: string): void {
  expect(f.message).toBe(`no suggestion "${id}"`);
  expect(Code[f.code]).toBe("NotFound");
  expect(f.detail?.code).toBe("task-suggestion/not-found");
  expect(f.detail?.payload).toEqual({
    case: "notFound",
    value: expect.objectContaining({ suggestionId: id }),
  });
  expect(f.info).toMatchObject({
    domain: "task-suggestion",
    reason: "NOT_FOUND",
    metadata: { suggestionId: id },
  });
}

/** Asserts task-suggestion/not-open for `id` standing as `state`. */
export function expectNotOpen(f: WireFailure, id: string, state: SuggestionState): void {
  const word = SuggestionState[state].toLowerCase();
  expect(f.message).toBe(`suggestion "${id}" is ${word}`);
  expect(Code[f.code]).toBe("FailedPrecondition");
  expect(f.detail?.code).toBe("task-suggestion/not-open");
  expect(f.detail?.payload).toEqual({
    case: "notOpen",
    value: expect.objectContaining({ suggestionId: id, state }),
  });
  expect(f.info).toMatchObject({
    domain: "task-suggestion",
    reason: "NOT_OPEN",
    metadata: { suggestionId: id, state: word },
  });
}

/** Asserts task-suggestion/open-limit with limit 3. */
export function expectOpenLimit(f: WireFailure): void {
  expect(f.message).toBe("3 suggestions are already open");
  expect(Code[f.code]).toBe("ResourceExhausted");
  expect(f.detail?.code).toBe("task-suggestion/open-limit");
  expect(f.detail?.payload).toEqual({
    case: "openLimit",
    value: expect.objectContaining({ limit: 3 }),
  });
  expect(f.info).toMatchObject({
    domain: "task-suggestion",
    reason: "OPEN_LIMIT",
    metadata: { limit: "3" },
  });
}

/**
 * Every record of a session's stream, as field maps, in stream order: read with the
 * fold's own parser (`parseEntries`, server/domain/fold.ts), so a test sees the records
 * exactly as the service reads them.
 */
export async function logRecords(
  redis: RedisClient,
  sessionId: string,
): Promise<Record<string, string>[]> {
  const entries = await redis.xrange(sessionKeys(sessionId).log, "-", "+");
  return parseEntries(entries).map((record) => ({ ...record.fields }));
}

/** Appends a hand-written record straight onto a session's stream, as another writer might. */
export async function appendRaw(
  redis: RedisClient,
  sessionId: string,
  fields: Record<string, string>,
): Promise<string> {
  const id = await redis.xadd(sessionKeys(sessionId).log, "*", ...Object.entries(fields).flat());
  if (id === null) throw new Error("XADD answered no id");
  return id;
}

/**
 * Appends a bare `offered` record for each id straight to the log, as an older writer or
 * another instance could: its id is also its turn and its title.
 */
export async function appendOffers(
  redis: RedisClient,
  sessionId: string,
  ...offerIds: string[]
): Promise<void> {
  for (const id of offerIds) {
    await appendRaw(redis, sessionId, {
      type: "offered",
      id,
      turn: id,
      title: id,
      tldr: "t",
      brief: "b",
    });
  }
}

/** A running WatchSuggestions call whose messages are collected as they come. */
export interface WatchCapture {
  readonly messages: WatchSuggestionsResponse[];
  /** Settles when the stream ends: undefined on a clean end, else the error. */
  readonly ended: Promise<unknown>;
  /** Resolves the first message at or after `from` that satisfies `test`. */
  waitFor(
    test: (m: WatchSuggestionsResponse) => boolean,
    from?: number,
    timeoutMs?: number,
  ): Promise<WatchSuggestionsResponse>;
  /** Cancels the call (the client leaves). */
  cancel(): void;
}

/** Starts WatchSuggestions and collects what it sends. */
export function watch(clients: Clients, sessionId: string): WatchCapture {
  const abort = new AbortController();
  const messages: WatchSuggestionsResponse[] = [];
  const waiters = new Set<() => void>();
  const ended = (async () => {
    try {
      for await (const m of clients.suggestions.watchSuggestions(
        { sessionId },
        { signal: abort.signal },
      )) {
        messages.push(m);
        for (const w of waiters) w();
      }
      return undefined;
    } catch (err) {
      return err;
    } finally {
      for (const w of waiters) w();
    }
  })();
  let done = false;
  void ended.then(() => {
    done = true;
  });
  const waitFor: WatchCapture["waitFor"] = (test, from = 0, timeoutMs = 5_000) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = messages.slice(from).find(test);
        if (found !== undefined) {
          finish();
          resolve(found);
        } else if (done) {
          finish();
          reject(new Error(`the watch ended after ${messages.length} messages`));
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`no matching watch message in ${timeoutMs} ms (${messages.length} seen)`));
      }, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      void ended.then(check);
      check();
    });
  return { messages, ended, waitFor, cancel: () => abort.abort() };
}

/**
 * A session's projection hash without the inbox fences (`f:` fields), which are not
 * part of the fold (a projection folded again from the first record sets `f:*`), and
 * without its own field count `h`, which counts them.
 */
export async function projectionFold(
  redis: RedisClient,
  sessionId: string,
): Promise<Record<string, string>> {
  return withoutFences(await redis.hgetall(sessionKeys(sessionId).projection));
}

/** A projection hash without its inbox fences and its own field count (`projectionFold`). */
export function withoutFences(hash: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(hash).filter(([field]) => !field.startsWith("f:") && field !== "h"),
  );
}
