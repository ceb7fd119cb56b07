import { Code, ConnectError } from "@connectrpc/connect";
import { Permission } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import type {
  StartSuggestionRequest,
  StartSuggestionResponse,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { requireId } from "../domain/ids.js";
import { checkStartOptions, permissionAbove } from "../domain/start-options.js";
import type { CallEnd } from "./call-end.js";
import type { StartFlight, StartFlights } from "./start-flights.js";
import { type StartDeps, startOnce } from "./start-once.js";

/** What StartSuggestion needs. */
export interface StartSuggestionDeps extends StartDeps {
  /** The instance's Start flights (start-flights.ts); server.ts makes them, once. */
  readonly startFlights: StartFlights;
}

/**
 * StartSuggestion, in the contract's order (docs/contract.md "What Start does"): the host's session (workspace-missing when it
 * belongs to no workspace or runs in a scheduled task's folder); the suggestion's
 * standing (not-found; drafted or dismissed: not-open; started: its chat again, making
 * sure the brief was posted); then, for an open one, the single-flight lock per
 * (session, suggestion), under which the holder creates the chat, records `started`
 * only if the offer is still open, and posts the brief. Callers that find the lock
 * taken wait for the holder's result and answer the same chat; concurrent Starts of one
 * suggestion on one instance share one flight, so the waiters do not repeat the
 * holder's reads (each still stops waiting when its own call ends). Pinned by
 * test/rpc/start.test.ts, test/rpc/start-concurrency.test.ts, test/rpc/start-stall.test.ts and
 * test/e2e/start-crash.test.ts.
 */
export function startSuggestion(
  deps: StartSuggestionDeps,
  request: StartSuggestionRequest,
  end?: () => CallEnd,
): Promise<StartSuggestionResponse> {
  const sessionId = requireId("session_id", request.sessionId);
  const suggestionId = requireId("suggestion_id", request.suggestionId);
  const checked = checkStartOptions(request.options);
  if ("problem" in checked) throw new ConnectError(checked.problem, Code.InvalidArgument);
  const { chosen } = checked;
  // Concurrent Starts of one suggestion on this instance are one flight (start-flights.ts).
  const key = `${sessionId}\n${suggestionId}`;
  const flight = deps.startFlights.join(
    key,
    () => startOnce(deps, sessionId, suggestionId, chosen),
    end,
  );
  if (chosen.permission === Permission.UNSPECIFIED) return flight.then(responseOf);
  // A caller that joined another's flight checks its own permission against the one
  // the flight found (the first caller checked it before fixing its options).
  return flight.then((started) => {
    const above = permissionAbove(chosen.permission, started.inherited);
    if (above !== undefined) throw new ConnectError(above, Code.InvalidArgument);
    return started.response;
  });
}

function responseOf(started: StartFlight): StartSuggestionResponse {
  return started.response;
}
