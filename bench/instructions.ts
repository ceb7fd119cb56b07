/**
 * Instructions per call: the service (and the grpc-js noop) run under valgrind's
 * callgrind, which counts the instructions a process executes in user space, on every
 * thread and on the main thread apart. The main thread's count (the JavaScript) moves
 * far less from run to run than CPU seconds do, so two checkouts measured in one run
 * (`BENCH_ROOTS`) show a change of a few percent; the other threads' share (V8's
 * concurrent marking and compiler) varies more. It leaves out the kernel (syscalls, the
 * TCP stack) and what cache misses cost, so it is beside the time rows of
 * `npm run bench`, never instead of them (docs/performance.md).
 *
 * Each process starts with instrumentation off (`--instr-atstart=no`); per scenario it
 * serves a warm-up of calls uncounted, then `callgrind_control -i on` and `-z`, the
 * counted calls, `-d` (a dump of the counts since the zero) and `-i off`. The calls
 * come from this process on one connection of framed calls (bench/h2-frames.ts), 16 in
 * flight; every answer must be grpc-status 0. Under valgrind the service is far slower
 * than Redis and this process, so a turn batches more calls than under the time rows'
 * load.
 *
 *   npm run bench:instructions      (BENCH_ROOTS=<checkout>,. to compare)
 *
 * Needs valgrind (Debian `valgrind`). About 2 minutes a scenario and checkout, so it is
 * not part of `npm run bench`.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { DescMessage, MessageInitShape } from "@bufbuild/protobuf";
import { HealthCheckRequestSchema } from "../gen/grpc/health/v1/health_pb.js";
import { AgentRole } from "../gen/oda/suggest/v1/suggestion_pb.js";
import {
  DismissSuggestionRequestSchema,
  GetSuggestionRequestSchema,
  ListSuggestionsRequestSchema,
  StartSuggestionRequestSchema,
  SuggestTaskRequestSchema,
} from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { normalizedTitle } from "../server/domain/refusals.js";
import { freePort } from "../server/redis/redis-server-process.js";
import { createRedisClient } from "../server/store/scripts.js";
import type { SuggestionStore } from "../server/store/suggestion-store.js";
import { startTestRedis } from "../test/support/store-server.js";
import { requestFrame } from "./grpc-frames.js";
import { FramedGrpcConnection } from "./h2-frames.js";
import { buildChat, changeOfO9 } from "./history.js";
import { builtService, startNode } from "./measure.js";
import { BENCH_WORKSPACE, ids, inBatches, writers } from "./prepare.js";

const SVC = "/oda.suggest.v1.SuggestionService";
const HEALTH = "/grpc.health.v1.Health/Check";
/**
 * Calls before the counted ones. Under valgrind V8 takes long to settle: the noop's
 * count per call fell from 350,000 to 190,000 over its first 8,000 calls, and was
 * steady (within 1 %) after 20,000.
 */
const WARM = Number(process.env.BENCH_IR_WARMUP ?? 10_000);
const NOOP_WARM = 2 * WARM;
const CALLS = Number(process.env.BENCH_IR_CALLS ?? 3_000);
const IN_FLIGHT = 16;
/** `BENCH_ONLY=<regex>`: only the scenarios it matches (the noop always runs). */
const ONLY = new RegExp(process.env.BENCH_ONLY ?? "");
/**
 * `BENCH_IR_KEEP=1`: the callgrind dumps are kept (their folder is printed), for
 * `callgrind_annotate` to say which functions a difference between checkouts is in; the
 * services run with `--perf-basic-prof`, whose `/tmp/perf-<pid>.map` names the
 * JavaScript that callgrind shows only as addresses.
 */
const KEEP = process.env.BENCH_IR_KEEP === "1";
/** `BENCH_IR_CALLERS=<n>`: callgrind separates each cost by its last `n` callers. */
const CALLERS = process.env.BENCH_IR_CALLERS;

/** One scenario's counted instructions. */
export interface InstructionRow {
  readonly scenario: string;
  /** The checkout it ran (BENCH_ROOTS), `.` for this one. */
  readonly root: string;
  readonly calls: number;
  /** On every thread of the process. */
  readonly instructionsPerCall: number;
  /** On its main thread alone. */
  readonly mainThreadPerCall: number;
  /** On its main thread, outside V8's garbage collections (`Heap::CollectGarbage`). */
  readonly mainOutsideGcPerCall: number;
}

/** The total `Ir` of a callgrind dump: its `summary:` or `totals:` line. */
export function dumpTotal(text: string): number {
  const line = /^(?:summary|totals):\s+(\d+)/m.exec(text);
  if (line === null) throw new Error("a callgrind dump without a summary line");
  return Number(line[1]);
}

/**
 * The instructions a callgrind dump spent in V8's garbage collections: the inclusive
 * count of `v8::internal::Heap::CollectGarbage`, which every scavenge and mark-compact
 * the thread ran goes through; 0 when none ran. `annotated` is `callgrind_annotate
 * --inclusive=yes --threshold=100` of the dump.
 */
export function gcInstructions(annotated: string): number {
  const line = /^\s*([\d,]+)\s+\([^)]*\)\s+\S*v8::internal::Heap::CollectGarbage\(/m.exec(
    annotated,
  );
  return line === null ? 0 : Number((line[1] as string).replaceAll(",", ""));
}

/** valgrind's version, or undefined when it is not installed. */
export function valgrindVersion(): string | undefined {
  try {
    return execFileSync("valgrind", ["--version"], { encoding: "utf8" }).trim();
  } catch {
    return undefined;
  }
}

/** Instructions counted over one run. */
export interface Counts {
  /** On every thread of the process. */
  readonly all: number;
  /** On its main thread, which runs the JavaScript. */
  readonly main: number;
  /** On its main thread, in V8's garbage collections (`gcInstructions`). */
  readonly mainGc: number;
}

/** A process under callgrind whose instructions are counted only between `count`'s marks. */
export class Counted {
  readonly #dir: string;
  readonly #pid: number;
  constructor(dir: string, pid: number) {
    this.#dir = dir;
    this.#pid = pid;
  }

  #control(...args: string[]): void {
    execFileSync("callgrind_control", [...args, String(this.#pid)], { stdio: "ignore" });
  }

  /**
   * The instructions the process executed while `run` ran: on all its threads, and on
   * its main thread (the JavaScript) alone. The other threads (V8's concurrent marking
   * and compiler, libuv's pool) do work whose share of a window varies from run to run.
   */
  async count(run: () => Promise<void>): Promise<Counts> {
    const before = new Set(readdirSync(this.#dir));
    // Switched back on, callgrind counts from nothing, while a dump answers the counts
    // since the last one: zeroed first, the dump is this run's alone.
    this.#control("-i", "on");
    this.#control("-z");
    await run();
    this.#control("-d");
    this.#control("-i", "off");
    // One file per thread that ran: `cg.<pid>.<part>-<thread>`, thread 01 the main one.
    const dumps = readdirSync(this.#dir).filter((f) => f.startsWith("cg.") && !before.has(f));
    let all = 0;
    let main: number | undefined;
    let mainGc = 0;
    for (const dump of dumps) {
      const path = join(this.#dir, dump);
      const total = dumpTotal(readFileSync(path, "utf8"));
      all += total;
      if (!/-0*1$/.test(dump)) continue;
      main = total;
      mainGc = gcInstructions(
        execFileSync("callgrind_annotate", ["--inclusive=yes", "--threshold=100", path], {
          encoding: "utf8",
          maxBuffer: 256 * 1024 * 1024,
        }),
      );
    }
    if (main === undefined) throw new Error(`no main thread's dump among ${dumps.join(", ")}`);
    return { all, main, mainGc };
  }
}

/** Starts `args` with node under callgrind, instrumentation off until a `count`. */
export async function startCounted(
  dir: string,
  args: readonly string[],
  env: Record<string, string>,
  ready: RegExp,
) {
  const wrapper = [
    "valgrind",
    "--tool=callgrind",
    "--instr-atstart=no",
    "--separate-threads=yes",
    ...(CALLERS ? [`--separate-callers=${CALLERS}`] : []),
    `--callgrind-out-file=${join(dir, "cg.%p")}`,
    `--log-file=${join(dir, "valgrind.%p.log")}`,
  ];
  const process = await startNode(args, env, ready, wrapper);
  return { process, counted: new Counted(dir, process.pid) };
}

/**
 * Posts `calls` (path, framed body) with 16 in flight on `connection`; throws unless
 * every one is OK. Warm-up and counted calls share one connection: on a new one the
 * noop's count per call was more than twice its count on the warm one.
 */
async function drive(connection: FramedGrpcConnection, calls: readonly Step[]) {
  if (calls.length === 0) throw new Error("no calls to make");
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, slot) => {
      while (next < calls.length) {
        const step = calls[next++] as Step;
        const [path, body] = typeof step === "function" ? await step(slot) : step;
        const answer = await connection.call(path, body);
        if (answer.status !== 0) {
          throw new Error(`${path} answered ${answer.status}: ${answer.error ?? ""}`);
        }
      }
    }),
  );
}

/** `n` Health/Check calls. */
function health(n: number): Call[] {
  const body = requestFrame(HealthCheckRequestSchema, {});
  return Array.from({ length: n }, () => [HEALTH, body] as const);
}

/** A call: its path and framed body. */
type Call = readonly [string, Buffer];

/**
 * A call, or one that a slot makes after work of the bench's own (a change written
 * straight to Redis, as another instance would: not the service's, so not counted).
 */
type Step = Call | ((slot: number) => Promise<Call>);

/** A scenario: its calls, warm-up first, each made of a fresh id where it must be. */
interface Scenario {
  readonly name: string;
  readonly calls: (n: number, root: number) => Promise<Step[]>;
}

const call = <Desc extends DescMessage>(
  method: string,
  schema: Desc,
  init: MessageInitShape<Desc>,
) => [`${SVC}/${method}`, requestFrame(schema, init)] as const;

/** The scenarios of the time rows that one request at a time can show, on `redisUrl`. */
function scenarios(redisUrl: string): { list: Scenario[]; close: () => Promise<unknown> } {
  const redis = createRedisClient(redisUrl);
  const { store, putSessions, offerTo } = writers(redis);
  /** Sessions of one open offer `o0` each, of `workspaceId` ('': of none). */
  const offered = async (prefix: string, n: number, workspaceId = "") => {
    const sessions = ids(prefix, n);
    await putSessions(sessions);
    await inBatches(sessions, 500, (sessionId) => offerTo(sessionId, 0, "o0", workspaceId));
    return sessions;
  };
  let readChat: Promise<string> | undefined;
  const read = () => {
    readChat ??= buildChat(store, "ir-read").then(() => "ir-read");
    return readChat;
  };
  const list: Scenario[] = [
    { name: "the service's Health/Check", calls: async (n) => health(n) },
    {
      name: "GetSuggestion (chat of 3 open + 7 settled)",
      calls: async (n) => {
        const body = call("GetSuggestion", GetSuggestionRequestSchema, {
          sessionId: await read(),
          suggestionId: "o8",
        });
        return Array.from({ length: n }, () => body);
      },
    },
    {
      name: "ListSuggestions, chat unchanged",
      calls: async (n) => {
        const body = call("ListSuggestions", ListSuggestionsRequestSchema, {
          sessionId: await read(),
        });
        return Array.from({ length: n }, () => body);
      },
    },
    {
      name: "ListSuggestions right after a change (made by another instance)",
      calls: async (n, root) => {
        // A chat of each slot's own, so that every List is right after its slot's change.
        const chats = ids(`ir-change-${root}`, IN_FLIGHT);
        await inBatches(chats, IN_FLIGHT, (sessionId) => buildChat(store, sessionId));
        const steps = chats.map((sessionId) => {
          const change = changeOfO9(store, sessionId);
          const list = call("ListSuggestions", ListSuggestionsRequestSchema, { sessionId });
          return async (): Promise<Call> => {
            const wrong = await change();
            if (wrong !== undefined) throw new Error(wrong);
            return list;
          };
        });
        return Array.from(
          { length: n },
          () => (slot: number) => (steps[slot] as () => Promise<Call>)(),
        );
      },
    },
    {
      name: "SuggestTask, fresh session per call",
      calls: async (n, root) => {
        const sessions = ids(`ir-fresh-${root}`, n);
        await putSessions(sessions);
        return sessions.map((sessionId) =>
          call("SuggestTask", SuggestTaskRequestSchema, {
            context: { sessionId, turnId: "t1", role: AgentRole.TOP_LEVEL, toolCallId: "" },
            args: { title: "Bench offer", tldr: "Worth it", brief: "Do it." },
          }),
        );
      },
    },
    {
      // The duplicate check reads every offer of the chat: nine here, the most a chat
      // has before its last offer (ratio to the row above: what the check costs).
      name: "SuggestTask, the 10th offer of a chat of 2 open + 7 settled",
      calls: async (n, root) => {
        const sessions = ids(`ir-tenth-${root}`, n);
        await putSessions(sessions);
        await inBatches(sessions, 500, (sessionId) => chatOfNine(store, sessionId));
        return sessions.map((sessionId) =>
          call("SuggestTask", SuggestTaskRequestSchema, {
            context: { sessionId, turnId: "t9", role: AgentRole.TOP_LEVEL, toolCallId: "" },
            args: { title: "Bench  offer 9", tldr: "Worth it", brief: "Do it." },
          }),
        );
      },
    },
    {
      name: "DismissSuggestion, a chat per call",
      calls: async (n, root) =>
        (await offered(`ir-dismiss-${root}`, n)).map((sessionId) =>
          call("DismissSuggestion", DismissSuggestionRequestSchema, {
            sessionId,
            suggestionId: "o0",
          }),
        ),
    },
    {
      name: "StartSuggestion, embedded host",
      calls: async (n, root) =>
        // Of the session's workspace, as the time row's (bench/prepare.ts `openPairs`).
        (await offered(`ir-start-${root}`, n, BENCH_WORKSPACE)).map((sessionId) =>
          call("StartSuggestion", StartSuggestionRequestSchema, { sessionId, suggestionId: "o0" }),
        ),
    },
  ];
  return { list, close: () => redis.quit() };
}

/**
 * Nine offers of their own titles in `sessionId`, as the tool records them (with their
 * normalized titles); the first seven dismissed by the person, two left open.
 */
async function chatOfNine(store: SuggestionStore, sessionId: string): Promise<void> {
  for (let i = 0; i < 9; i++) {
    const title = `Bench offer ${i}`;
    const offer = { id: `o${i}`, turnId: `t${i}`, toolCallId: "", title, tldr: "t", brief: "b" };
    const offered = await store.offer(
      sessionId,
      { ...offer, normalizedTitle: normalizedTitle(title) },
      false,
    );
    if (offered.kind !== "recorded") throw new Error(`offer o${i} answered ${offered.kind}`);
    if (i >= 7) continue;
    const settled = await store.settle(sessionId, `o${i}`, "dismissed");
    if (settled.kind !== "recorded") throw new Error(`dismiss o${i} answered ${settled.kind}`);
  }
}

/** A row of `CALLS` counted calls. */
function rowOf(scenario: string, root: string, total: Counts): InstructionRow {
  return {
    scenario,
    root,
    calls: CALLS,
    instructionsPerCall: total.all / CALLS,
    mainThreadPerCall: total.main / CALLS,
    mainOutsideGcPerCall: (total.main - total.mainGc) / CALLS,
  };
}

/**
 * The grpc-js noop's instructions per call and each scenario's on every root, each
 * root's service in a process of its own on one private Redis.
 */
export async function measureInstructions(roots: readonly string[]): Promise<InstructionRow[]> {
  const dir = mkdtempSync(join(tmpdir(), "suggest-task-instructions-"));
  const redis = await startTestRedis({ dir: join(dir, "redis") });
  const rows: InstructionRow[] = [];
  const { list, close } = scenarios(redis.url);
  try {
    const noopPort = await freePort();
    const noop = await startCounted(
      dir,
      ["bench/noop-server.ts", "grpc-js", String(noopPort)],
      {},
      /ready/,
    );
    try {
      const connection = await FramedGrpcConnection.connect(`127.0.0.1:${noopPort}`);
      await drive(connection, health(NOOP_WARM));
      const total = await noop.counted.count(() => drive(connection, health(CALLS)));
      connection.close();
      rows.push(rowOf("grpc-js noop (`bench/noop-server.ts grpc-js`)", ".", total));
    } finally {
      await noop.process.stop();
    }
    for (const [index, root] of roots.entries()) {
      const port = await freePort();
      const service = await startCounted(
        dir,
        [
          // V8's own log of the profile goes beside the dumps, not into the working folder.
          ...(KEEP ? ["--perf-basic-prof", `--logfile=${join(dir, "v8-%p.log")}`] : []),
          builtService(root),
        ],
        {
          PORT: String(port),
          REDIS_URL: redis.url,
          LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "info",
        },
        /listening on/,
      );
      const connection = await FramedGrpcConnection.connect(`127.0.0.1:${port}`);
      try {
        // The process's own warm-up, as the noop's is twice a scenario's.
        await drive(connection, health(WARM));
        for (const scenario of list.filter((s) => ONLY.test(s.name))) {
          const calls = await scenario.calls(WARM + CALLS, index);
          await drive(connection, calls.slice(0, WARM));
          const total = await service.counted.count(() => drive(connection, calls.slice(WARM)));
          rows.push(rowOf(scenario.name, root, total));
        }
      } finally {
        connection.close();
        await service.process.stop();
      }
    }
  } finally {
    await close();
    await redis.stop();
    if (KEEP) console.error(`bench: callgrind dumps kept in ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

/** The rows as Markdown: instructions per call and their ratios to the noop's. */
export function instructionLines(rows: readonly InstructionRow[]): string[] {
  const noop = rows.find((r) => r.scenario.startsWith("grpc-js noop"));
  const many = new Set(rows.map((r) => r.root)).size > 1;
  const count = (n: number) => Math.round(n).toLocaleString("en-US");
  const ratio = (n: number, of: number | undefined) => (n / (of ?? Number.NaN)).toFixed(2);
  return [
    "| scenario (under callgrind) | instructions per call, all threads | × grpc-js noop | main thread | × grpc-js noop | main thread outside GC | × grpc-js noop |",
    "|---|---:|---:|---:|---:|---:|---:|",
    ...rows.map((r) =>
      [
        "",
        `${r.scenario}${many && r !== noop ? ` [${r.root}]` : ""}`,
        count(r.instructionsPerCall),
        ratio(r.instructionsPerCall, noop?.instructionsPerCall),
        count(r.mainThreadPerCall),
        ratio(r.mainThreadPerCall, noop?.mainThreadPerCall),
        count(r.mainOutsideGcPerCall),
        ratio(r.mainOutsideGcPerCall, noop?.mainOutsideGcPerCall),
        "",
      ]
        .join(" | ")
        .trim(),
    ),
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  if (valgrindVersion() === undefined) {
    console.error("valgrind is missing: apt-get install -y valgrind");
    process.exit(1);
  }
  const roots = (process.env.BENCH_ROOTS ?? ".").split(",");
  measureInstructions(roots)
    .then((rows) => console.log(instructionLines(rows).join("\n")))
    .catch((err: unknown) => {
      console.error(err);
      process.exit(1);
    });
}
