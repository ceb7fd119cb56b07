import { beforeAll, expect } from "vitest";
import type { Suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { createSuggestionClient, type SuggestionClient } from "../../sdk/src/node.js";
import { putSession, uniqueId } from "./harness.js";
import { useTestServer } from "./server-fixture.js";
import { REFUSAL_TEXT, successText } from "./suggest.js";

/*
 * What the framework adapters' tests share (test/sdk/adapters-*.test.ts): a real service,
 * the SDK's client of it, a chat of each test's own, and the check of a turn in which the
 * model offered twice.
 */

/** A service for a file's adapter tests, with the SDK's Node client of it. */
export function useAdapterService() {
  const t = useTestServer();
  let client: SuggestionClient | undefined;
  beforeAll(() => {
    client = createSuggestionClient({ baseUrl: t.url });
  });
  return {
    get url() {
      return t.url;
    },
    get client(): SuggestionClient {
      if (client === undefined) throw new Error("the SDK client is read before beforeAll");
      return client;
    },
    /** A new chat on the embedded host, in a workspace and a normal folder. */
    async chat(prefix = "adapter"): Promise<string> {
      const sessionId = uniqueId(prefix);
      await putSession(t.clients, { sessionId });
      return sessionId;
    },
    /** Every suggestion of a chat as ListSuggestions answers it (open, then settled). */
    async recorded(sessionId: string): Promise<Suggestion[]> {
      const { open, settled } = await t.clients.suggestions.listSuggestions({ sessionId });
      return [...open, ...settled];
    },
  };
}

/** The two offers of the tests' one turn: two titles, both fit every limit. */
export const TWO_OFFERS = [
  { title: "Add retries", tldr: "Uploads fail on flaky links", brief: "Retry uploads." },
  { title: "Cache the index", tldr: "Listing is slow", brief: "Cache the listing." },
] as const;

/**
 * A tool result as the model read it: the text, and whether it was marked an error
 * (left out where the framework has no such mark, as the Agents SDK's function output).
 */
export interface ModelRead {
  readonly content: string;
  readonly isError?: boolean;
}

/**
 * The check of a turn in which the model offered `TWO_OFFERS`: exactly one offer recorded
 * (whichever call the framework ran first, since frameworks run one step's calls at once),
 * its result the reference's success line for its title, and the other call's result the
 * reference's one-per-turn refusal, word for word.
 */
export function expectOneOfferPerTurn(
  read: readonly ModelRead[],
  recorded: readonly Suggestion[],
  turnId: string,
): Suggestion {
  expect(recorded).toHaveLength(1);
  const [offer] = recorded;
  if (offer === undefined) throw new Error("no offer recorded");
  expect(offer.turnId).toBe(turnId);
  expect(TWO_OFFERS.map((o) => o.title)).toContain(offer.title);
  const success = successText(offer.title);
  const first = (r: ModelRead) => (r.content === success ? 0 : 1);
  const marked = read.some((r) => r.isError !== undefined);
  expect([...read].sort((a, b) => first(a) - first(b))).toEqual([
    marked ? { content: success, isError: false } : { content: success },
    marked ? { content: REFUSAL_TEXT.turn, isError: true } : { content: REFUSAL_TEXT.turn },
  ]);
  return offer;
}
