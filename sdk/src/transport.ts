import type { DescMethodStreaming, DescMethodUnary } from "@bufbuild/protobuf";
import {
  type ContextValues,
  createContextValues,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { runStreamingCall, runUnaryCall } from "@connectrpc/connect/protocol";

/** A bearer token, or a function that answers the current one before each call. */
export type TokenSource = string | (() => string | Promise<string>);

/** What every client of the SDK takes beside the transport: what each call carries. */
export interface CallerOptions {
  /** Sent as `authorization: Bearer <token>` on every call. */
  readonly token?: TokenSource | undefined;
  /** More interceptors, run after the SDK's own (outermost first). */
  readonly interceptors?: readonly Interceptor[] | undefined;
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
): Transport {
  if (interceptors.length === 0) return transport;
  const list = [...interceptors];
  return {
    unary(method, signal, timeoutMs, header, input, contextValues) {
      return runUnaryCall({
        interceptors: list,
        ...(signal === undefined ? {} : { signal }),
        req: { stream: false, ...requestOf(method, header, contextValues), message: input },
        next: (req) =>
          transport.unary(
            req.method,
            req.signal,
            timeoutMs,
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
 * (`interceptTransport`) with `sdkInterceptors`, then a bearer token when `token` is set,
 * then the caller's own interceptors.
 */
export function clientTransport(
  options: ClientOptions,
  sdkInterceptors: readonly Interceptor[] = [],
): Transport {
  return interceptTransport(options.transport, [
    ...sdkInterceptors,
    ...(options.token === undefined ? [] : [bearerToken(options.token)]),
    ...(options.interceptors ?? []),
  ]);
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
  const { token, interceptors, ...url } = options;
  return { transport: make(url as unknown as U), token, interceptors };
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
