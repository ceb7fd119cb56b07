/**
 * 50 concurrent Starts of one suggestion against one Start alone, in a process of its
 * own on the framed client (bench/h2-frames.ts), so that the 50 calls cost the client
 * little beside the server's work (on node:http2 the client's own turns were part of
 * what the 50 calls took). Half of the prepared suggestions are started one at a time
 * (the single Start's latency); each of the others by 50 concurrent calls on one
 * connection (the time until all 50 have answered). Then, for each batch's suggestion,
 * 50 concurrent GetSuggestion calls of it (unchanged since, so answered from the lists
 * cache) time what 50 calls cost on this connection when they do no work: the floor
 * under the 50 Starts, which a single flight cannot go below. It prints `single-start`,
 * `single-end`, `fifty-start`, `fifty-end`, `gets-start`, `gets-end` as each phase opens
 * and closes (the runner reads the server's CPU then) and one JSON line: medians, their
 * ratio, and whether the 50 calls of each batch all got the same chat.
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
import { FramedGrpcConnection } from "./h2-frames.js";
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
  const connection = await FramedGrpcConnection.connect(address);
  let errors = 0;
  let firstError: string | undefined;
  const chatOf = async (body: Buffer) => {
    const answer = await connection.call(PATH, body);
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
  let oneChatEach = true;
  console.log("fifty-start");
  for (const body of bodies.slice(half)) {
    const began = performance.now();
    const chats = await Promise.all(Array.from({ length: 50 }, () => chatOf(body)));
    fifty.push(performance.now() - began);
    if (new Set(chats).size !== 1 || chats[0] === "") oneChatEach = false;
  }
  console.log("fifty-end");
  const gets: number[] = [];
  console.log("gets-start");
  for (const body of getBodies.slice(half)) gets.push(await fiftyGets(connection, body));
  console.log("gets-end");
  connection.close();
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
async function fiftyGets(connection: FramedGrpcConnection, body: Buffer): Promise<number> {
  await connection.call(GET, body);
  const began = performance.now();
  const answers = await Promise.all(Array.from({ length: 50 }, () => connection.call(GET, body)));
  const failed = answers.find((a) => a.error !== undefined);
  if (failed !== undefined) throw new Error(`a GetSuggestion failed: ${failed.error}`);
  return performance.now() - began;
}

void main();
