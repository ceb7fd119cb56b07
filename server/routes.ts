import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import { ServerReflection as ReflectionV1 } from "../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ReflectionV1alpha } from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { ChatHostService, LocalHostService } from "../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionService } from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { type McpEndpointOptions, mcpEndpoint } from "./mcp/mcp-endpoint.js";
import { mcpToolCalls } from "./mcp/mcp-tools.js";
import { type PipelineOptions, wrapService } from "./pipeline/call-pipeline.js";
import { routeRefusals } from "./pipeline/call-refusals.js";
import { serverIdentityHeaders, VERSION_HEADER } from "./pipeline/server-identity.js";
import { traceService } from "./pipeline/tracing.js";
import { createHealthService } from "./rpc/health.js";
import { createChatHostService, createLocalHostService } from "./rpc/host-service.js";
import { guardChatHost, guardLocalHost } from "./rpc/host-tenant-guard.js";
import type { Readiness } from "./rpc/readiness.js";
import { Reflection } from "./rpc/reflection.js";
import { createSuggestionService, type SuggestionServiceDeps } from "./rpc/suggestion-service.js";
import { guardTenants } from "./rpc/tenant-guard.js";
import type { ServerSettings } from "./server-settings.js";
import type { ServedService } from "./transport/handler-types.js";

/** What the routes are built from. */
export interface RoutesDeps extends SuggestionServiceDeps {
  /** The concerns every call runs through (auth, checks, logs, metrics, deadlines). */
  readonly pipeline: PipelineOptions;
  /** Whether the instance should be sent calls, as grpc.health.v1 reports it. */
  readonly readiness: Readiness;
}

/**
 * Builds every service the server serves from injected dependencies, each wrapped by
 * the same call pipeline, so that every transport serving them (connect-node and the
 * gRPC fast path) applies the same concerns. Reflection describes exactly these.
 */
export function buildServices(deps: RoutesDeps): readonly ServedService[] {
  const served: ServedService[] = [];
  const serve = <S extends DescService>(service: S, impl: ServiceImpl<S>) => {
    served.push({
      service,
      impl: traceService(
        service,
        wrapService(service, impl, deps.pipeline),
      ) as unknown as ServiceImpl<DescService>,
    });
  };
  // The tenant rule around every RPC that reaches a workspace's records, inside the
  // pipeline's auth: SuggestionService (rpc/tenant-guard.ts) and the embedded host,
  // served too when present (no `CHAT_HOST_URL`; rpc/host-tenant-guard.ts).
  serve(SuggestionService, guardTenants(createSuggestionService(deps), deps));
  const host = deps.embeddedHost;
  if (host !== undefined) {
    serve(ChatHostService, guardChatHost(createChatHostService(host), host));
    serve(LocalHostService, guardLocalHost(createLocalHostService(host), host));
  }
  const names = served.map((s) => s.service.typeName);
  serve(Health, createHealthService(deps.readiness, names));
  const reflection = new Reflection([
    ...served.map((s) => s.service),
    ReflectionV1,
    ReflectionV1alpha,
  ]);
  serve(ReflectionV1, reflection.v1());
  serve(ReflectionV1alpha, reflection.v1alpha());
  return served;
}

/** Connect routes for the served services; nothing here listens. */
export function routesOf(services: readonly ServedService[]): (router: ConnectRouter) => void {
  return (router) => {
    for (const { service, impl } of services) router.service(service, impl);
  };
}

/**
 * `POST /mcp` (server/mcp/): its tools run the SuggestionService RPCs gRPC and Connect
 * serve, with their tenant rule, through the same call pipeline, each under a procedure
 * of its own (`/mcp/suggest_task`); nothing here listens.
 */
export function mcpRoute(
  deps: RoutesDeps & Pick<McpEndpointOptions, "credentials">,
  settings: Pick<ServerSettings, "authJwt" | "readMaxBytes">,
  served: Pick<McpEndpointOptions, "shutdownSignal" | "valuesOf">,
): ReturnType<typeof mcpEndpoint> {
  const impl = guardTenants(createSuggestionService(deps), deps);
  return mcpEndpoint({
    ...served,
    credentials: deps.credentials,
    readMaxBytes: settings.readMaxBytes,
    issuer: settings.authJwt?.issuer,
    calls: mcpToolCalls(impl, deps.pipeline),
    refused: routeRefusals(deps.pipeline),
    version: serverIdentityHeaders()[VERSION_HEADER] ?? "0.0.0",
  });
}
