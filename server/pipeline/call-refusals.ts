import type { DescMethod } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import type { CallRoute, PipelineOptions } from "./call-pipeline.js";

/**
 * How a transport reports a call it refused before its handler ran (a request that does
 * not parse or decompress, a deadline header that is malformed or already past): each
 * hook's `refused` is told, so that such a call is in the call log and in
 * `suggest_calls_total` with its RPC and code, as every call the handler answers is.
 * Pinned by test/e2e/bad-input-encodings.test.ts.
 */
export function callRefusals(
  options: PipelineOptions,
): (method: DescMethod, error: ConnectError) => void {
  return (method, error) => {
    const service = method.parent;
    const call = { service, method, procedure: `/${service.typeName}/${method.name}` };
    for (const hook of options.hooks) hook.refused?.(call, error);
  };
}

/**
 * How an adapter of another protocol (MCP) reports a call it refused before the RPC ran
 * (a body that does not parse, a missing credential, an argument of the wrong type):
 * logged and counted under `route`'s procedure, as `callRefusals` does for a transport.
 */
export function routeRefusals(
  options: PipelineOptions,
): (route: CallRoute, error: ConnectError) => void {
  return (route, error) => {
    for (const hook of options.hooks) hook.refused?.(route, error);
  };
}
