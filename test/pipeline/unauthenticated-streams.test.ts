import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createHandlerContext } from "@connectrpc/connect";
import { describe, expect, test } from "vitest";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { ServerReflection } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { Credentials } from "../../server/pipeline/auth.js";
import type { Call, CallHook } from "../../server/pipeline/call-pipeline.js";
import { unauthenticatedStreamCap } from "../../server/pipeline/unauthenticated-streams.js";

const TOKEN = "unauthenticated-cap-token-0123456";
const credentials = new Credentials({ tokens: [{ role: "app", token: TOKEN }] });

/** A call of `method` as the pipeline sees it, with `authorization` when given. */
function callOf(service: DescService, method: DescMethod, authorization?: string): Call {
  const context = createHandlerContext({
    service,
    method,
    protocolName: "grpc",
    requestMethod: "POST",
    url: `http://localhost/${service.typeName}/${method.name}`,
    requestHeader: authorization === undefined ? {} : { authorization },
  });
  return {
    service,
    method,
    procedure: `/${service.typeName}/${method.name}`,
    request: undefined,
    context,
  };
}

const watch = () => callOf(Health, Health.method.watch);
const reflect = () => callOf(ServerReflection, ServerReflection.method.serverReflectionInfo);

/** What `before` did with `call`: undefined when admitted, else the refusal. */
async function admitted(hook: CallHook, call: Call): Promise<ConnectError | undefined> {
  try {
    await hook.before?.(call);
    return undefined;
  } catch (err) {
    return err as ConnectError;
  }
}

describe("the cap on streams open without a credential", () => {
  test("health watches and reflection streams share 100 places; the 101st is RESOURCE_EXHAUSTED, and a closed one frees its place", async () => {
    const hook = unauthenticatedStreamCap(credentials);
    const open = [...Array.from({ length: 50 }, watch), ...Array.from({ length: 50 }, reflect)];
    for (const call of open) expect(await admitted(hook, call)).toBeUndefined();
    for (const call of [watch(), reflect()]) {
      const refusal = await admitted(hook, call);
      expect(refusal).toBeInstanceOf(ConnectError);
      expect(refusal?.code).toBe(Code.ResourceExhausted);
      expect(refusal?.rawMessage).toBe("too many unauthenticated streams");
      // A refused stream's end frees nothing.
      hook.after?.(call, refusal, 0);
    }
    expect(await admitted(hook, watch())).toBeInstanceOf(ConnectError);
    hook.after?.(open[0] as Call, undefined, 1);
    // Its end told twice frees one place only.
    hook.after?.(open[0] as Call, undefined, 1);
    expect(await admitted(hook, reflect())).toBeUndefined();
    expect(await admitted(hook, watch())).toBeInstanceOf(ConnectError);
  });

  test("a valid token, a unary call and a guarded service are not counted; an invalid token is", async () => {
    const hook = unauthenticatedStreamCap(credentials, 1);
    expect(await admitted(hook, watch())).toBeUndefined();
    expect(
      await admitted(hook, callOf(Health, Health.method.watch, `Bearer ${TOKEN}`)),
    ).toBeUndefined();
    expect(await admitted(hook, callOf(Health, Health.method.check))).toBeUndefined();
    const guarded = callOf(SuggestionService, SuggestionService.method.watchSuggestions);
    expect(await admitted(hook, guarded)).toBeUndefined();
    const invalid = callOf(Health, Health.method.watch, "Bearer not-a-token-of-this-service");
    expect((await admitted(hook, invalid))?.code).toBe(Code.ResourceExhausted);
  });

  test("without credentials configured, nothing is capped", async () => {
    const hook = unauthenticatedStreamCap(new Credentials({ tokens: [] }), 1);
    for (let i = 0; i < 3; i++) expect(await admitted(hook, watch())).toBeUndefined();
  });
});
