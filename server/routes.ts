import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import { ServerReflection as ReflectionV1 } from "../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ReflectionV1alpha } from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { ChatHostService, LocalHostService } from "../gen/oda/suggest/v1/chat_host_pb.js";
import { SuggestionService } from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { type PipelineOptions, wrapService } from "./call-pipeline.js";
import type { EmbeddedChatHost } from "./embedded-host.js";
import { createHealthService } from "./health.js";
import { createChatHostService, createLocalHostService } from "./host-service.js";
import { Reflection } from "./reflection.js";
import { createSuggestionService, type SuggestionServiceDeps } from "./suggestion-service.js";

/** What the routes are built from. */
export interface RoutesDeps extends SuggestionServiceDeps {
  /** The embedded host, served too when present (no `CHAT_HOST_URL`). */
  readonly embeddedHost?: EmbeddedChatHost | undefined;
  /** The concerns every call runs through (auth, checks, logs, metrics, deadlines). */
  readonly pipeline: PipelineOptions;
}

/**
 * Builds the service's routes from injected dependencies; nothing here listens. Every
 * service, the operators' ones included, is wrapped by the same call pipeline, and
 * reflection describes exactly the services served.
 */
export function createRoutes(deps: RoutesDeps): (router: ConnectRouter) => void {
  return (router) => {
    const served: DescService[] = [];
    const serve = <S extends DescService>(service: S, impl: ServiceImpl<S>) => {
      router.service(service, wrapService(service, impl, deps.pipeline));
      served.push(service);
    };
    serve(SuggestionService, createSuggestionService(deps));
    if (deps.embeddedHost !== undefined) {
      serve(ChatHostService, createChatHostService(deps.embeddedHost));
      serve(LocalHostService, createLocalHostService(deps.embeddedHost));
    }
    serve(
      Health,
      createHealthService(
        deps.store.redis,
        served.map((s) => s.typeName),
      ),
    );
    const reflection = new Reflection([...served, Health, ReflectionV1, ReflectionV1alpha]);
    serve(ReflectionV1, reflection.v1());
    serve(ReflectionV1alpha, reflection.v1alpha());
  };
}
