import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";

/** A registered OpenTelemetry SDK; `shutdown` flushes the spans still queued. */
export interface TracingSdk {
  shutdown(): Promise<void>;
}

/**
 * Registers the OpenTelemetry trace SDK: spans batched to an OTLP/HTTP (protobuf)
 * exporter, W3C trace-context and baggage propagation, and an AsyncLocalStorage context
 * manager, so the spans of server/pipeline/tracing.ts, server/store/script-spans.ts and
 * server/host/traced-host.ts are recorded and exported. main.ts loads this module only
 * when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, so a
 * service without it never loads the SDK. The SDK follows the standard OTEL_* variables
 * itself (endpoint, headers, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
 * OTEL_TRACES_SAMPLER, OTEL_BSP_*); the service name defaults to `suggest-task`.
 */
export function startTracing(): TracingSdk {
  const resource = resourceFromAttributes({ "service.name": "suggest-task" }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  return { shutdown: () => provider.shutdown() };
}
