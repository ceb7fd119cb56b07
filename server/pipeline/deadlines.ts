import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";

/** How long the service works on one unary call. */
export interface WorkDeadlines {
  /** The budget of a unary call whose caller set no deadline, in ms. */
  readonly defaultDeadlineMs: number;
  /**
   * The most the service spends on one unary call, in ms (MAX_DEADLINE_MS), whatever
   * the caller's deadline: a longer one is accepted, and the work stops here.
   */
  readonly maxDeadlineMs: number;
}

/** The error a unary call ends with when the service's own budget for it runs out. */
function pastBudget(): ConnectError {
  return new ConnectError("the call ran past its deadline", Code.DeadlineExceeded);
}

/**
 * Runs a unary call's work within min(caller's deadline, `maxDeadlineMs`), or within
 * min(`defaultDeadlineMs`, `maxDeadlineMs`) when the caller set none. In gRPC the
 * deadline is the caller's budget: a server may stop its own work earlier, it never
 * refuses the call for it, so a 5-minute `grpc-timeout` is served and bounded here.
 *
 * When the caller's own deadline is the earlier one, the transport's context already
 * ends the call there and nothing is added. Otherwise the handler gets a context whose
 * `signal` also aborts at the budget (with DEADLINE_EXCEEDED, as a transport's deadline
 * does, so a Start waiting on a lock or a chat host stops) and whose `timeoutMs()`
 * says what is left of the budget; the call fails with DEADLINE_EXCEEDED then even if
 * the handler does not look. The signal is made only if the handler reads it.
 * Pinned by test/e2e/deadlines.test.ts.
 */
export function withinBudget<T>(
  context: HandlerContext,
  deadlines: WorkDeadlines,
  work: (context: HandlerContext) => Promise<T>,
): Promise<T> {
  const callerMs = context.timeoutMs();
  const budgetMs = Math.min(callerMs ?? deadlines.defaultDeadlineMs, deadlines.maxDeadlineMs);
  if (callerMs !== undefined && callerMs <= budgetMs) return work(context);
  const until = Date.now() + budgetMs;
  let controller: AbortController | undefined;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = pastBudget();
      controller?.abort(error);
      reject(error);
    }, budgetMs);
  });
  let signal: AbortSignal | undefined;
  const bounded: HandlerContext = Object.create(context, {
    timeoutMs: { value: () => until - Date.now() },
    signal: {
      get() {
        if (signal === undefined) {
          controller = new AbortController();
          if (Date.now() >= until) controller.abort(pastBudget());
          signal = AbortSignal.any([context.signal, controller.signal]);
        }
        return signal;
      },
    },
  });
  return Promise.race([work(bounded), expired]).finally(() => clearTimeout(timer));
}
