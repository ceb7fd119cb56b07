/**
 * What `suggest_task` over MCP costs the service against SuggestTask over Connect's JSON,
 * the same offer either way: the service started on its own, both posted over HTTP/1.1
 * keep-alive connections by the same generator (4 connections, 16 calls in flight), each
 * call to a chat of its own (an offer writes; a chat holds 3 open), server CPU per call
 * read from /proc. Windows go Connect, MCP, MCP, Connect (after one of each that warms
 * the process up and is not counted), so that a machine drifting over the run weighs on
 * both alike. MCP's tools/call is posted as a stateless client posts it: no initialize
 * before it (the endpoint holds no session), `MCP-Protocol-Version: 2025-06-18`.
 */
import { Agent, request } from "node:http";
import { freePort } from "../server/redis/redis-server-process.js";
import { createRedisClient } from "../server/store/scripts.js";
import { builtService, cpuSeconds, startNode } from "./measure.js";
import { ids, writers } from "./prepare.js";

/** The two protocols' figures. */
export interface McpCostResult {
  /** Server CPU per call, µs, SuggestTask over Connect JSON (mean of its windows). */
  readonly connectUsPerCall: number;
  /** The same for suggest_task over MCP. */
  readonly mcpUsPerCall: number;
  /** `mcpUsPerCall / connectUsPerCall`. */
  readonly ratio: number;
  /** Calls per counted window. */
  readonly callsPerWindow: number;
  /** Calls that did not answer the success line (there should be none). */
  readonly errors: number;
}

const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 4_000);
const CONNECTIONS = 4;
const IN_FLIGHT = 16;
const ARGS = { title: "Bench offer", tldr: "Worth it", brief: "Do it." };

type Protocol = "connect" | "mcp";

/** One call's path, headers and body for `sessionId`. */
function callOf(protocol: Protocol, sessionId: string, n: number) {
  if (protocol === "connect") {
    return {
      path: "/oda.suggest.v1.SuggestionService/SuggestTask",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        context: { sessionId, turnId: `t${n}`, role: "AGENT_ROLE_TOP_LEVEL" },
        args: ARGS,
      }),
    };
  }
  return {
    path: "/mcp",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: n,
      method: "tools/call",
      params: {
        name: "suggest_task",
        arguments: ARGS,
        _meta: { "oda.suggest/session_id": sessionId, "oda.suggest/turn_id": `t${n}` },
      },
    }),
  };
}

/** POSTs one call; answers whether it recorded the offer. */
function post(agent: Agent, port: number, call: ReturnType<typeof callOf>): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, method: "POST", path: call.path, headers: call.headers, agent },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve(res.statusCode === 200 && text.includes("Suggested")));
      },
    );
    req.on("error", reject);
    req.end(call.body);
  });
}

/** `sessions.length` calls, IN_FLIGHT at a time; answers the server's CPU µs per call and the failures. */
async function window(
  protocol: Protocol,
  sessions: readonly string[],
  port: number,
  serverPid: number,
): Promise<{ usPerCall: number; errors: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  let next = 0;
  let errors = 0;
  const before = cpuSeconds(serverPid);
  const slot = async () => {
    while (next < sessions.length) {
      const n = next++;
      if (!(await post(agent, port, callOf(protocol, sessions[n] as string, n)))) errors++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, slot));
  const usPerCall = ((cpuSeconds(serverPid) - before) * 1e6) / sessions.length;
  agent.destroy();
  return { usPerCall, errors };
}

/** suggest_task over MCP against SuggestTask over Connect JSON, on a service of its own. */
export async function measureMcpCost(redis: {
  url: string;
  socketUrl: string | undefined;
}): Promise<McpCostResult> {
  const plan: Protocol[] = ["connect", "mcp", "connect", "mcp", "mcp", "connect"];
  const client = createRedisClient(redis.url);
  const sessions = ids(`mcp-cost-${Date.now()}`, CALLS * plan.length);
  try {
    await writers(client).putSessions(sessions);
  } finally {
    await client.quit();
  }
  const port = await freePort();
  const server = await startNode(
    [builtService()],
    {
      PORT: String(port),
      REDIS_URL: redis.socketUrl ?? redis.url,
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "info",
    },
    /listening on/,
  );
  try {
    const counted: Record<Protocol, number[]> = { connect: [], mcp: [] };
    let errors = 0;
    for (const [i, protocol] of plan.entries()) {
      const result = await window(
        protocol,
        sessions.slice(i * CALLS, (i + 1) * CALLS),
        port,
        server.pid,
      );
      errors += result.errors;
      // The first window of each protocol warms the process up: not counted.
      if (i >= 2) counted[protocol].push(result.usPerCall);
    }
    const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
    const connectUsPerCall = mean(counted.connect);
    const mcpUsPerCall = mean(counted.mcp);
    return {
      connectUsPerCall,
      mcpUsPerCall,
      ratio: mcpUsPerCall / connectUsPerCall,
      callsPerWindow: CALLS,
      errors,
    };
  } finally {
    await server.stop();
  }
}
