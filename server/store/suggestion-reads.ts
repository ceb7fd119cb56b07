import type { Cluster, Redis } from "ioredis";
import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { type LogRecord, offerRecordsOf, parseEntries } from "../domain/fold.js";
import type { Fenced } from "./inbox-token.js";
import { sessionKeys } from "./keys.js";
import type { ListsCache, ListsSnapshot } from "./lists-cache.js";
import { orFromLog, readWholeLog } from "./log-reads.js";
import { runScript } from "./run-script.js";
import { type SettleOutcome, settleOutcome } from "./script-replies.js";
import type { ScriptReply } from "./scripts.js";

/**
 * How a session's suggestions are read: by version through this instance's lists cache
 * (lists-cache.ts), from the projection while Redis takes writes, from the whole log
 * while it refuses them (store/log-reads.ts). Apart from the writes (suggestion-store.ts)
 * because every read answers the fold of the whole log whatever wrote it.
 */
export class SuggestionReads {
  /** @param cache what this instance last read of each session, by version. */
  constructor(
    readonly redis: Redis | Cluster,
    readonly cache: ListsCache,
  ) {}

  /**
   * A session's lists from the projection (lua/readLists-2.lua): O(offers), not
   * O(records), so a chat with a long history of dismissals and restores reads as fast
   * as a fresh one (test/store/list-read.test.ts); and nothing at all moved from Redis
   * when the chat did not change since this instance last read it (lists-cache.ts,
   * test/e2e/cross-instance-cache.test.ts). The answer is the fold of the whole log, as
   * the tests' oracle `foldLog(readLog())` gives it (test/support/model/fold.ts); while
   * Redis refuses writes, which the script may make (it catches the projection up), it
   * is read from the whole log (store/log-reads.ts).
   */
  async snapshot(sessionId: string): Promise<ListsSnapshot> {
    const keys = sessionKeys(sessionId);
    const held = this.cache.heldLists(sessionId);
    return orFromLog(
      async () =>
        this.cache.lists(
          sessionId,
          held,
          await runScript(this.redis, "readLists", keys.log, keys.projection, held?.version ?? ""),
        ),
      () => this.#snapshotFromLog(sessionId, held),
    );
  }

  /**
   * `snapshot` while Redis refuses writes (store/log-reads.ts): the whole log read and
   * folded, the projection left as it is.
   */
  async #snapshotFromLog(
    sessionId: string,
    held: ListsSnapshot | undefined,
  ): Promise<ListsSnapshot> {
    const log = await readWholeLog(this.redis, sessionId);
    return this.cache.listsFromLog(sessionId, held, log.version, offerRecordsOf(log.records));
  }

  /**
   * One suggestion, reading only its two records (lua/readSuggestion-2.lua), and none
   * when the chat did not change since this instance last read it; undefined when the
   * log holds no such offer. The same fold as `snapshot`'s `byId`, which answers while
   * Redis refuses writes.
   */
  async suggestion(sessionId: string, suggestionId: string): Promise<Suggestion | undefined> {
    const keys = sessionKeys(sessionId);
    const held = this.cache.heldOne(sessionId, suggestionId);
    const version = held?.version ?? "";
    return orFromLog(
      async () => {
        const reply = await runScript(
          this.redis,
          "readSuggestion",
          keys.log,
          keys.projection,
          suggestionId,
          version,
        );
        return this.cache.one(sessionId, suggestionId, held, reply) ?? undefined;
      },
      async () => {
        const { lists } = await this.#snapshotFromLog(sessionId, this.cache.heldLists(sessionId));
        return lists.byId.get(suggestionId);
      },
    );
  }

  /**
   * A settle script's reply with its read of the suggestion right after it
   * (settleAndRead-3.lua and the scripts that run it): fenced, or the outcome and the
   * suggestion as that step left it.
   */
  settledRead(
    sessionId: string,
    suggestionId: string,
    settleReply: ScriptReply,
    readReply: ScriptReply,
  ): Fenced | { readonly outcome: SettleOutcome; readonly suggestion: Suggestion | undefined } {
    const settled = settleOutcome(settleReply);
    if ("fenced" in settled) return settled;
    const suggestion = this.cache.one(sessionId, suggestionId, undefined, readReply);
    return { outcome: settled, suggestion: suggestion ?? undefined };
  }

  /**
   * Every record of a session's log, in stream order: O(records). The service never
   * reads this way; it is the log the tests' `foldLog` reads, for tests and tools.
   */
  async readLog(sessionId: string): Promise<LogRecord[]> {
    const entries = await this.redis.xrange(sessionKeys(sessionId).log, "-", "+");
    return parseEntries(entries);
  }
}
