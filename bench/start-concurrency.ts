/**
 * 50 concurrent Starts of one suggestion against one Start alone, in a process of its
 * own on the lean client (bench/h2-client.ts), so that the 50 calls cost the client
 * little beside the server's work. Half of the prepared suggestions are started one at
 * a time (the single Start's latency); each of the others by 50 concurrent calls on one
 * connection (the time until all 50 have answered). It prints `single-start`,
 * `single-end`, `fifty-start`, `fifty-end` as each phase opens and closes (the runner
 * reads the server's CPU then) and one JSON line: medians, their ratio, and whether the
 * 50 calls of each batch all got the same chat. After each batch, 50 concurrent
 * GetSuggestion calls of the same suggestion (unchanged since, so answered from the
 * lists cache) time what 50 calls cost on this connection when they do no work: the
 * floor under the 50 Starts, which a single flight cannot go below.
 *
 *   node --import tsx bench/start-concurrency.ts '<json: { address, pairs }>'
 */
import { fromBinary } from "@bufbuild/protobuf";
import {
  GetSuggestionRequestSchema,
  StartSuggestionRequestSchema,
  StartSuggestionResponseSchema,
} from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { requestFrame } from "./grpc-frames.js";
import { connectAll, unaryCall } from "./h2-client.js";
import { median } from "./stats.js";

/** What the process prints last. */
export interface StartConcurrencyResult {
  readonly singles: number;
  readonly batches: number;
  readonly singleMs: number;
  readonly fiftyConcurrentMs: number;
  /** 50 concurrent GetSuggestion calls of the started suggestion: the calls' own cost. */
  readonly fiftyGetsMs: number;
  readonly ratio: number;
  readonly oneChatEach: boolean;
  readonly errors: number;
  readonly firstError?: string;
}

const PATH = "/oda.suggest.v1.SuggestionService/StartSuggestion";
const GET = "/oda.suggest.v1.SuggestionService/GetSuggestion";

async function main(): Promise<void> {
  const { address, pairs } = JSON.parse(process.argv[2] as string) as {
    address: string;
    pairs: [string, string][];
  };
  const bodies = pairs.map(([sessionId, suggestionId]) =>
    requestFrame(StartSuggestionRequestSchema, { sessionId, suggestionId }),
  );
  const getBodies = pairs.map(([sessionId, suggestionId]) =>
    requestFrame(GetSuggestionRequestSchema, { sessionId, suggestionId }),
  );
  const [session] = await connectAll(address, 1);
  if (session === undefined) throw new Error("no connection");
  let errors = 0;
  let firstError: string | undefined;
  const chatOf = async (body: Buffer) => {
    const answer = await unaryCall(session, PATH, body);
    if (answer.error !== undefined) {
      errors++;
      firstError ??= answer.error;
      return "";
    }
    return fromBinary(StartSuggestionResponseSchema, answer.message).chatId;
  };
  const half = Math.floor(bodies.length / 2);
  const single: number[] = [];
  console.log("single-start");
  for (const body of bodies.slice(0, half)) {
    const began = performance.now();
    await chatOf(body);
    single.push(performance.now() - began);
  }
  console.log("single-end");
  const fifty: number[] = [];
  const gets: number[] = [];
  let oneChatEach = true;
  console.log("fifty-start");
  for (const [i, body] of bodies.slice(half).entries()) {
    const began = performance.now();
    const chats = await Promise.all(Array.from({ length: 50 }, () => chatOf(body)));
    fifty.push(performance.now() - began);
    if (new Set(chats).size !== 1 || chats[0] === "") oneChatEach = false;
    gets.push(await fiftyGets(session, getBodies[half + i] as Buffer));
  }
  console.log("fifty-end");
  session.close();
  const singleMs = median(single);
  const fiftyConcurrentMs = median(fifty);
  const result: StartConcurrencyResult = {
    singles: single.length,
    batches: fifty.length,
    singleMs,
    fiftyConcurrentMs,
    fiftyGetsMs: median(gets),
    ratio: fiftyConcurrentMs / singleMs,
    oneChatEach,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
  };
  console.log(JSON.stringify(result));
  process.exit(0);
}

/** The time 50 concurrent GetSuggestion calls of `body` take (one read first, to cache it). */
async function fiftyGets(session: Parameters<typeof unaryCall>[0], body: Buffer): Promise<number> {
  await unaryCall(session, GET, body);
  const began = performance.now();
  await Promise.all(Array.from({ length: 50 }, () => unaryCall(session, GET, body)));
  return performance.now() - began;
}

void main();
