import type { DescMethodStreaming, DescMethodUnary } from "@bufbuild/protobuf";
import {
  type ContextValues,
  createContextValues,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { runStreamingCall, runUnaryCall } from "@connectrpc/connect/protocol";
import { callDeadline, type RetryPolicy, retryInterceptor } from "./retry.js";
import type { WatchPolicy } from "./watch.js";

/** A bearer token, or a function that answers the current one before each call. */
export type TokenSource = string | (() => string | Promise<string>);

/** What every client of the SDK takes beside the transport: what each call carries. */
export interface CallerOptions {
  /** Sent as `authorization: Bearer <token>` on every call. */
  readonly token?: TokenSource | undefined;
  /** More interceptors, run after the SDK's own (outermost first), on every attempt of a call. */
  readonly interceptors?: readonly Interceptor[] | undefined;
  /**
   * How retry-safe unary calls are retried after a failure a restart or a proxy causes
   * (`retryInterceptor`); `false`: never. Default `DEFAULT_RETRY_POLICY`.
   */
  readonly retry?: RetryPolicy | false | undefined;
  /**
   * The deadline of a unary call that sets no `timeoutMs` of its own, retries included;
   * 0: none. Default: none in the core entry, 30 s in `@oda/suggest-task/node`. Server
   * streams (the watches) never get one unless the call sets it.
   */
  readonly defaultTimeoutMs?: number | undefined;
  /**
   * How the clients' `watchSuggestions` and `watchWorkspaceSuggestions` behave: reconnecting,
   * with heartbeats (`WatchPolicy`, the default), or `false` for the raw stream.
   */
  readonly watch?: WatchPolicy | false | undefined;
}

/**
 * A transport the caller made: any protocol on any runtime (`@connectrpc/connect-node`,
 * `@connectrpc/connect-web`, a fetch of an edge runtime, or `createRouterTransport`).
 */
export type GivenTransportOptions = {
  readonly transport: Transport;
  readonly baseUrl?: never;
};

/**
 * What the core's clients take: a transport and what each call carries. The entries
 * `@oda/suggest-task/node` and `@oda/suggest-task/web` also take a `baseUrl` and make the
 * platform's transport for it.
 */
export type ClientOptions = GivenTransportOptions & CallerOptions;

/**
 * An interceptor that sets `authorization: Bearer <token>` on every request. A function
 * source is asked before each call, so a token can be refreshed without a new client.
 */
export function bearerToken(token: TokenSource): Interceptor {
  return (next) => async (req) => {
    const value = typeof token === "string" ? token : await token();
    req.header.set("authorization", `Bearer ${value}`);
    return next(req);
  };
}

/**
 * Wraps a transport so that every call runs through `interceptors` (outermost first) before
 * it reaches the transport, which keeps its own interceptors, deadline and protocol. This is
 * how the SDK adds its token and typed errors to a transport it did not make. The request's
 * `url` is the method's path only, since the inner transport alone knows its base URL.
 */
export function interceptTransport(
  transport: Transport,
  interceptors: readonly Interceptor[],
  defaultTimeoutMs = 0,
): Transport {
  if (interceptors.length === 0 && defaultTimeoutMs <= 0) return transport;
  const list = [...interceptors];
  return {
    unary(method, signal, timeoutMs, header, input, contextValues) {
      // The deadline is the whole call's: the interceptors (a retry among them) see it on
      // their signal and as `callDeadline`, and each attempt is given only the time left.
      const timeout = Math.max(timeoutMs ?? defaultTimeoutMs, 0);
      const deadline = timeout > 0 ? Date.now() + timeout : undefined;
      const values = contextValues ?? createContextValues();
      return runUnaryCall({
        interceptors: list,
        ...(signal === undefined ? {} : { signal }),
        ...(deadline === undefined ? {} : { timeoutMs: timeout }),
        req: {
          stream: false,
          ...requestOf(
            method,
            header,
            deadline === undefined ? values : withDeadline(values, deadline),
          ),
          message: input,
        },
        next: (req) =>
          transport.unary(
            req.method,
            req.signal,
            deadline === undefined ? timeoutMs : Math.max(1, deadline - Date.now()),
            req.header,
            req.message,
            req.contextValues,
          ),
      });
    },
    stream(method, signal, timeoutMs, header, input, contextValues) {
      return runStreamingCall({
        interceptors: list,
        ...(signal === undefined ? {} : { signal }),
        req: { stream: true, ...requestOf(method, header, contextValues), message: input },
        next: (req) =>
          transport.stream(
            req.method,
            req.signal,
            timeoutMs,
            req.header,
            req.message,
            req.contextValues,
          ),
      });
    },
  };
}

/**
 * The transport a client of the SDK calls through: the given `transport` wrapped
 * (`interceptTransport`, with the default unary deadline) with `sdkInterceptors`, then the
 * retries (`retryInterceptor`) unless `retry` is `false`, then a bearer token when `token`
 * is set, then the caller's own interceptors (which see every attempt).
 */
export function clientTransport(
  options: ClientOptions,
  sdkInterceptors: readonly Interceptor[] = [],
): Transport {
  return interceptTransport(
    options.transport,
    [
      ...sdkInterceptors,
      ...(options.retry === false ? [] : [retryInterceptor(options.retry)]),
      ...(options.token === undefined ? [] : [bearerToken(options.token)]),
      ...(options.interceptors ?? []),
    ],
    options.defaultTimeoutMs,
  );
}

/**
 * The core's options for the options of a platform entry: a given `transport` passes
 * through, a `baseUrl` becomes the transport `make` builds for it. The entries
 * (node.ts, web.ts) share this, so they differ only in how a URL becomes a transport.
 */
export function withTransport<U extends { readonly baseUrl: string; readonly transport?: never }>(
  options: (U & CallerOptions) | ClientOptions,
  make: (options: U) => Transport,
): ClientOptions {
  if (options.transport !== undefined) return options;
  const { token, interceptors, retry, defaultTimeoutMs, watch, ...url } = options;
  return {
    transport: make(url as unknown as U),
    token,
    interceptors,
    retry,
    defaultTimeoutMs,
    watch,
  };
}

/** `values` that also answer `callDeadline`, leaving the caller's own object untouched. */
function withDeadline(values: ContextValues, deadline: number): ContextValues {
  return {
    get: (key) => (key.id === callDeadline.id ? (deadline as never) : values.get(key)),
    set(key, value) {
      values.set(key, value);
      return this;
    },
    delete(key) {
      values.delete(key);
      return this;
    },
  };
}

/** What a unary and a streaming request of the wrapper have in common. */
function requestOf<M extends DescMethodUnary | DescMethodStreaming>(
  method: M,
  header: ConstructorParameters<typeof Headers>[0],
  contextValues: ContextValues | undefined,
) {
  return {
    service: method.parent,
    method,
    requestMethod: "POST",
    url: `/${method.parent.typeName}/${method.name}`,
    header: new Headers(header),
    contextValues: contextValues ?? createContextValues(),
  } as const;
}
