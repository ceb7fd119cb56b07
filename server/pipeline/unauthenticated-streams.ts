import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { type Credentials, needsCredential, type Principal, presentedToken } from "./auth.js";
import type { Call, CallHook } from "./call-pipeline.js";
import { clientIdentityKey } from "./client-certs.js";

/** The most streams open at once, per instance, to services open without a credential. */
export const MAX_UNAUTHENTICATED_STREAMS = 100;

/** The refusal of a stream beyond MAX_UNAUTHENTICATED_STREAMS. */
export const TOO_MANY_UNAUTHENTICATED_STREAMS = "too many unauthenticated streams";

/**
 * Bounds the streams anyone may hold without a credential. Where credentials are
 * required, health and reflection stay open to callers without one (operators' tools
 * and probes expect that), and each of their streams (a health Watch, a reflection
 * exchange) holds memory for as long as it lasts: at most `max` are open at once on an
 * instance, and one more is refused RESOURCE_EXHAUSTED `too many unauthenticated
 * streams` before its handler runs. A stream whose caller presents a valid credential
 * (a bearer token, a JWT, a mapped client certificate) is not counted; unary calls are
 * not either. With no credential configured it does nothing (the server then listens
 * on loopback only). Pinned by test/e2e/unauthenticated-streams.test.ts.
 */
export function unauthenticatedStreamCap(
  credentials: Credentials,
  max = MAX_UNAUTHENTICATED_STREAMS,
): CallHook {
  if (!credentials.enabled) return {};
  let open = 0;
  const counted = new WeakSet<HandlerContext>();
  const admit = (call: Call, principal: Principal | undefined) => {
    if (principal !== undefined) return;
    if (open >= max) {
      throw new ConnectError(TOO_MANY_UNAUTHENTICATED_STREAMS, Code.ResourceExhausted);
    }
    open++;
    counted.add(call.context);
  };
  return {
    before(call) {
      if (call.method.methodKind === "unary" || needsCredential(call.procedure)) return undefined;
      const principal = principalOf(credentials, call);
      return principal instanceof Promise
        ? principal.then((p) => admit(call, p))
        : admit(call, principal);
    },
    after(call) {
      if (counted.delete(call.context)) open--;
    },
  };
}

/** Who the caller of `call` is, by its bearer token or its client certificate. */
function principalOf(
  credentials: Credentials,
  call: Call,
): Principal | undefined | Promise<Principal | undefined> {
  const token = presentedToken(call.context.requestHeader.get("authorization"));
  if (token === undefined && credentials.acceptsCertificates) {
    const identity = call.context.values.get(clientIdentityKey);
    if (identity !== undefined) return credentials.principalOfCertificate(identity);
  }
  return credentials.principalOf(token);
}
