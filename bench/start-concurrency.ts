/** 50 concurrent Starts of one suggestion against one Start alone, measured in one run. */
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { SuggestionService } from "../gen/oda/suggest/v1/suggestion_service_pb.js";

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/**
 * Half of the prepared suggestions are started one at a time (the single Start's
 * latency); each of the others is started by 50 concurrent calls (the time until all 50
 * have answered). Medians of both, their ratio, and whether every call got one chat.
 */
export async function measureStartConcurrency(
  address: string,
  pairs: [string, string][],
): Promise<{ singleMs: number; fiftyConcurrentMs: number; ratio: number; oneChatEach: boolean }> {
  const client = createClient(
    SuggestionService,
    createGrpcTransport({ baseUrl: `http://${address}` }),
  );
  const half = Math.floor(pairs.length / 2);
  const single: number[] = [];
  for (const [sessionId, suggestionId] of pairs.slice(0, half)) {
    const began = performance.now();
    await client.startSuggestion({ sessionId, suggestionId });
    single.push(performance.now() - began);
  }
  const fifty: number[] = [];
  let oneChatEach = true;
  for (const [sessionId, suggestionId] of pairs.slice(half)) {
    const began = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => client.startSuggestion({ sessionId, suggestionId })),
    );
    fifty.push(performance.now() - began);
    if (new Set(answers.map((a) => a.chatId)).size !== 1) oneChatEach = false;
  }
  const singleMs = median(single);
  const fiftyConcurrentMs = median(fifty);
  return { singleMs, fiftyConcurrentMs, ratio: fiftyConcurrentMs / singleMs, oneChatEach };
}
