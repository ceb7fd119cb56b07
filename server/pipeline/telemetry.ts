import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { RefusalReason, SuggestTaskRefusalSchema } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import type { Call, CallHook } from "./call-pipeline.js";

/** The service's logs and metrics. */
export interface Telemetry {
  /** Logs one line per call and counts it. */
  readonly hook: CallHook;
  /** The Prometheus registry served on /metrics. */
  readonly registry: Registry;
  /** Counts errors reported by a Redis client. */
  readonly redisErrors: Counter;
  /**
   * Counts writes Redis refused while it answered, by `kind`: `out-of-memory`, `disk`
   * (MISCONF), `unconfirmed` (fewer replicas than REDIS_WAIT_REPLICAS in time).
   */
  readonly storeRefusals: Counter<"kind">;
  readonly logger: Logger;
}

const START = "/oda.suggest.v1.SuggestionService/StartSuggestion";

/** The session a call is about, read from the request's well-known fields only. */
export function sessionIdOf(request: unknown): string | undefined {
  if (request === null || typeof request !== "object") return undefined;
  const r = request as {
    sessionId?: unknown;
    chatId?: unknown;
    context?: { sessionId?: unknown };
    session?: { sessionId?: unknown };
  };
  const id = r.sessionId ?? r.context?.sessionId ?? r.session?.sessionId ?? r.chatId;
  return typeof id === "string" && id !== "" ? id : undefined;
}

/** Every gRPC code's name as the Connect protocol spells it ("invalid_argument"), by code. */
const CODE_NAMES = new Map(
  Object.values(Code)
    .filter((code): code is Code => typeof code === "number")
    .map((code) => [code, Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase()]),
);

/** The gRPC code's name as the Connect protocol spells it ("invalid_argument"). */
function codeName(code: Code | undefined): string {
  return code === undefined ? "ok" : (CODE_NAMES.get(code) ?? String(code));
}

/**
 * Structured JSON logs (one line per call: method, code, duration, session id, and
 * never a brief's or any other field's text) and Prometheus metrics: calls by method
 * and code, latency histograms, refusals by reason, starts in flight, Redis errors.
 * Each server has a registry of its own, so several can run in one process.
 */
export function createTelemetry(logger: Logger): Telemetry {
  const registry = new Registry();
  const calls = new Counter({
    name: "suggest_calls_total",
    help: "Calls by method and result code.",
    labelNames: ["method", "code"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "suggest_call_duration_seconds",
    help: "Call latency by method.",
    labelNames: ["method"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const refusals = new Counter({
    name: "suggest_refusals_total",
    help: "suggest_task refusals by reason.",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  const startsInFlight = new Gauge({
    name: "suggest_starts_in_flight",
    help: "StartSuggestion calls running now.",
    registers: [registry],
  });
  const redisErrors = new Counter({
    name: "suggest_redis_errors_total",
    help: "Errors reported by the Redis clients.",
    registers: [registry],
  });
  const storeRefusals = new Counter({
    name: "suggest_store_refusals_total",
    help: "Writes Redis refused while it answered: out-of-memory, disk, unconfirmed.",
    labelNames: ["kind"] as const,
    registers: [registry],
  });

  const record = callRecorder(logger, calls, latency, refusals);
  const hook: CallHook = {
    before(call: Call) {
      if (call.procedure === START) startsInFlight.inc();
    },
    after(call, error, durationMs) {
      if (call.procedure === START) startsInFlight.dec();
      record(call.procedure, call.request, error, durationMs);
    },
    // A call its transport refused unread: logged and counted, with no latency of its own.
    refused(call, error) {
      record(call.procedure, undefined, error, undefined);
    },
  };
  return { hook, registry, redisErrors, storeRefusals, logger };
}

/**
 * Counts and logs one call that ended (`durationMs` undefined: refused before it was
 * read, so it has no latency of its own).
 */
function callRecorder(
  logger: Logger,
  calls: Counter<"method" | "code">,
  latency: Histogram<"method">,
  refusals: Counter<"reason">,
): (
  procedure: string,
  request: unknown,
  error: ConnectError | undefined,
  durationMs: number | undefined,
) => void {
  // The series of each (method, code) and each method, looked up once: prom-client
  // hashes the labels of every inc and observe it is given by name. Each (method, code)
  // also has its child logger, whose two fields pino serializes once, at its creation,
  // rather than on every line (the line is the same).
  const callSeries = new Map<string, { readonly counter: { inc(): void }; readonly log: Logger }>();
  const latencySeries = new Map<string, { observe(seconds: number): void }>();
  return (
    procedure: string,
    request: unknown,
    error: ConnectError | undefined,
    durationMs: number | undefined,
  ) => {
    const code = codeName(error?.code);
    const key = `${procedure} ${code}`;
    let series = callSeries.get(key);
    if (series === undefined) {
      const labels = { method: procedure, code };
      series = { counter: calls.labels(labels), log: logger.child(labels) };
      callSeries.set(key, series);
    }
    series.counter.inc();
    if (durationMs !== undefined) {
      let timed = latencySeries.get(procedure);
      if (timed === undefined) {
        timed = latency.labels({ method: procedure });
        latencySeries.set(procedure, timed);
      }
      timed.observe(durationMs / 1000);
    }
    const refusal = error instanceof ConnectError ? refusalOf(error) : undefined;
    if (refusal !== undefined) refusals.inc({ reason: RefusalReason[refusal] });
    // Literals that start with their fields, not with a spread: a spread's copy gets a
    // map of its own each call, which pino's reads of the line then miss.
    const sessionId = sessionIdOf(request);
    const refused = refusal === undefined ? {} : { refusal: RefusalReason[refusal] };
    series.log.info(
      durationMs === undefined
        ? { sessionId, ...refused }
        : { durationMs: Math.round(durationMs * 1000) / 1000, sessionId, ...refused },
      "call",
    );
  };
}

function refusalOf(error: ConnectError): RefusalReason | undefined {
  try {
    return error.findDetails(SuggestTaskRefusalSchema)[0]?.reason;
  } catch {
    return undefined;
  }
}
