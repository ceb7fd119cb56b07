import type { DescMethodStreaming, DescMethodUnary } from "@bufbuild/protobuf";
import {
  type ContextValues,
  createContextValues,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { runStreamingCall, runUnaryCall } from "@connectrpc/connect/protocol";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";

/** The three protocols the service serves on one port. */
export type Protocol = "grpc" | "connect" | "grpc-web";

/** A bearer token, or a function that answers the current one before each call. */
export type TokenSource = string | (() => string | Promise<string>);

/** How to reach a server by URL; the SDK builds a Node transport for it. */
export type UrlTransportOptions = {
  /** The server's base URL, e.g. `http://127.0.0.1:8080`. */
  readonly baseUrl: string;
  readonly transport?: never;
} & (
  | {
      /** gRPC (the default), which runs on HTTP/2 only (h2c for `http:` URLs). */
      readonly protocol?: "grpc" | undefined;
      readonly httpVersion?: "2" | undefined;
    }
  | {
      /** Connect or gRPC-Web, over HTTP/2 (the default) or HTTP/1.1. */
      readonly protocol: Exclude<Protocol, "grpc">;
      readonly httpVersion?: "1.1" | "2" | undefined;
    }
);

/** A transport the caller made (any protocol, any runtime, or `createRouterTransport`). */
export type GivenTransportOptions = {
  readonly transport: Transport;
  readonly baseUrl?: never;
  readonly protocol?: never;
  readonly httpVersion?: never;
};

/** What every client of the SDK takes: where the server is, and what each call carries. */
export type ClientOptions = (UrlTransportOptions | GivenTransportOptions) & {
  /** Sent as `authorization: Bearer <token>` on every call. */
  readonly token?: TokenSource | undefined;
  /** More interceptors, run after the SDK's own (outermost first). */
  readonly interceptors?: readonly Interceptor[] | undefined;
};

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
 * The transport a client of the SDK calls through: for `baseUrl`, a Node transport of the
 * chosen protocol (`@connectrpc/connect-node`) with `interceptors` installed; for a given
 * `transport`, that transport wrapped with them (`interceptTransport`). Either way the
 * interceptors are `sdkInterceptors`, then a bearer token when `token` is set, then the
 * caller's own.
 */
export function clientTransport(
  options: ClientOptions,
  sdkInterceptors: readonly Interceptor[] = [],
): Transport {
  const interceptors = [
    ...sdkInterceptors,
    ...(options.token === undefined ? [] : [bearerToken(options.token)]),
    ...(options.interceptors ?? []),
  ];
  if (options.transport !== undefined) {
    return interceptTransport(options.transport, interceptors);
  }
  const { baseUrl } = options;
  if (options.protocol === "connect") {
    return options.httpVersion === "1.1"
      ? createConnectTransport({ baseUrl, interceptors, httpVersion: "1.1" })
      : createConnectTransport({ baseUrl, interceptors, httpVersion: "2" });
  }
  if (options.protocol === "grpc-web") {
    return options.httpVersion === "1.1"
      ? createGrpcWebTransport({ baseUrl, interceptors, httpVersion: "1.1" })
      : createGrpcWebTransport({ baseUrl, interceptors, httpVersion: "2" });
  }
  return createGrpcTransport({ baseUrl, interceptors });
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
