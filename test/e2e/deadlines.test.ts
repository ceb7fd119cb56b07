import { execFile, spawn } from "node:child_process";
import http2 from "node:http2";
import { promisify } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import {
  StartSuggestionRequestSchema,
  SuggestTaskRequestSchema,
} from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { createSuggestionClient } from "../../sdk/src/node.js";
import type { SuggestServer } from "../../server/server.js";
import { grpcJsClients, grpcJsStream, grpcJsUnary, loadHealth } from "../support/grpc-js.js";
import {
  type Clients,
  connectErrorOf,
  grpcClients,
  putSession,
  startTestServer,
  uniqueId,
} from "../support/harness.js";
import { grpcFrame, grpcWebStatus, rawGrpc } from "../support/raw-grpc.js";
import { offer, successText } from "../support/suggest.js";
import { gate, startTestHost } from "../support/test-host.js";

const run = promisify(execFile);

const FIVE_MINUTES = 5 * 60_000;
const ONE_HOUR = 60 * 60_000;

// In gRPC a deadline is the caller's budget: the server may stop its own work earlier
// (MAX_DEADLINE_MS, 60 s here), it never refuses the call for it.
describe.each([
  ["the gRPC fast path", true],
  ["connect-node only", false],
])("long deadlines through %s", (_, grpcFastPath) => {
  let server: SuggestServer;
  let clients: Clients;
  beforeAll(async () => {
    server = await startTestServer(undefined, { grpcFastPath });
    clients = grpcClients(server.url);
  });
  afterAll(() => server.close());

  async function chatWithOffer(): Promise<string> {
    const sessionId = uniqueId();
    await putSession(clients, { sessionId });
    await offer(clients, { sessionId, turnId: "t0" });
    return sessionId;
  }

  /** Reads a watch until it has two messages, making a change after the first. */
  async function firstThenChange(
    sessionId: string,
    watch: AsyncIterable<{ open: readonly unknown[] }>,
  ): Promise<number[]> {
    const seen: number[] = [];
    for await (const lists of watch) {
      seen.push(lists.open.length);
      if (seen.length === 1) await offer(clients, { sessionId, turnId: "t-change" });
      if (seen.length === 2) break;
    }
    return seen;
  }

  test("grpc-js: a 5-minute unary call succeeds; a 1-hour watch delivers, then a change", async () => {
    const js = grpcJsClients(server.url);
    try {
      const sessionId = uniqueId();
      await grpcJsUnary(
        js.local,
        "PutSession",
        { session: { session_id: sessionId, workspace_id: "ws", folder: "FOLDER_KIND_NORMAL" } },
        { deadline: Date.now() + FIVE_MINUTES },
      );
      const offered = await grpcJsUnary<{ result: string }>(
        js.suggestions,
        "SuggestTask",
        {
          context: { session_id: sessionId, turn_id: "t1", role: "AGENT_ROLE_TOP_LEVEL" },
          args: { title: "Long deadline", tldr: "r", brief: "b" },
        },
        { deadline: Date.now() + FIVE_MINUTES },
      );
      expect(offered.result).toBe(successText("Long deadline"));
      const stream = grpcJsStream<{ open: unknown[] }>(
        js.suggestions,
        "WatchSuggestions",
        { session_id: sessionId },
        { deadline: Date.now() + ONE_HOUR },
      );
      stream.on("error", () => {});
      expect(await firstThenChange(sessionId, stream)).toEqual([1, 2]);
      stream.cancel();
    } finally {
      js.close();
    }
  });

  test.each(["grpc", "connect"] as const)(
    "connect-es (the SDK over %s): a 5-minute unary call succeeds; a 1-hour watch delivers, then a change",
    async (protocol) => {
      const client = createSuggestionClient({ baseUrl: server.url, protocol });
      const sessionId = await chatWithOffer();
      const listed = await client.listSuggestions({ sessionId }, { timeoutMs: FIVE_MINUTES });
      expect(listed.open).toHaveLength(1);
      const abort = new AbortController();
      const watch = client.watchSuggestions(
        { sessionId },
        { timeoutMs: ONE_HOUR, signal: abort.signal },
      );
      expect(await firstThenChange(sessionId, watch)).toEqual([1, 2]);
      abort.abort();
    },
  );

  test("grpc-js: a health Watch with a 1-hour deadline reports SERVING and stays open", async () => {
    const health = loadHealth(server.url);
    try {
      const stream = grpcJsStream<{ status: string }>(
        health,
        "Watch",
        { service: "" },
        { deadline: Date.now() + ONE_HOUR },
      );
      const ended = new Promise<grpc.ServiceError | "end">((resolve) => {
        stream.on("error", resolve);
        stream.on("end", () => resolve("end"));
      });
      const first = await new Promise((resolve) => stream.once("data", resolve));
      expect(first).toEqual({ status: "SERVING" });
      // Still open a moment later: the stream is held for the caller's deadline.
      const early = await Promise.race([ended, new Promise((r) => setTimeout(r, 300, "open"))]);
      expect(early).toBe("open");
      stream.cancel();
    } finally {
      health.close();
    }
  });

  test("a watch with a deadline beyond Node's longest timer (99999999H) delivers, not ends at once", async () => {
    const sessionId = await chatWithOffer();
    const session = http2.connect(server.url);
    try {
      const first = await new Promise<string>((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/oda.suggest.v1.SuggestionService/WatchSuggestions",
          "content-type": "application/grpc",
          "grpc-timeout": "99999999H",
          te: "trailers",
        });
        stream.on("trailers", (t) => resolve(`ended: ${t["grpc-status"]} ${t["grpc-message"]}`));
        stream.on("response", (h) => {
          if (h["grpc-status"] !== undefined) resolve(`ended: ${h["grpc-status"]}`);
        });
        stream.on("data", () => resolve("a message"));
        stream.on("error", reject);
        const id = Buffer.from(sessionId);
        stream.end(Buffer.concat([Buffer.from([0, 0, 0, 0, id.length + 2, 0x0a, id.length]), id]));
      });
      expect(first).toBe("a message");
      // Still open after a moment.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(session.closed).toBe(false);
    } finally {
      session.destroy();
    }
  });

  test("a watch with a 300 ms deadline delivers its lists, then the server ends it DEADLINE_EXCEEDED", async () => {
    const sessionId = await chatWithOffer();
    const session = http2.connect(server.url);
    try {
      const began = Date.now();
      const { messages, status } = await new Promise<{ messages: number; status: string }>(
        (resolve, reject) => {
          let messages = 0;
          const stream = session.request({
            ":method": "POST",
            ":path": "/oda.suggest.v1.SuggestionService/WatchSuggestions",
            "content-type": "application/grpc",
            "grpc-timeout": "300m",
            te: "trailers",
          });
          stream.on("data", () => messages++);
          stream.on("trailers", (t) => resolve({ messages, status: String(t["grpc-status"]) }));
          stream.on("error", reject);
          const id = Buffer.from(sessionId);
          stream.end(
            Buffer.concat([Buffer.from([0, 0, 0, 0, id.length + 2, 0x0a, id.length]), id]),
          );
        },
      );
      expect(messages).toBe(1);
      expect(status).toBe(String(Code.DeadlineExceeded));
      expect(Date.now() - began).toBeGreaterThanOrEqual(250);
    } finally {
      session.destroy();
    }
  });

  /**
   * `buf curl` over gRPC, the schema from reflection, with buf's `--timeout` as the
   * call's deadline (sent as `grpc-timeout`).
   */
  function bufCurlArgs(method: string, body: unknown, timeout: string): string[] {
    return [
      "curl",
      "--timeout",
      timeout,
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-d",
      JSON.stringify(body),
      `${server.url}/oda.suggest.v1.SuggestionService/${method}`,
    ];
  }

  test("buf curl: a 5-minute unary call succeeds", async () => {
    const sessionId = await chatWithOffer();
    const { stdout, stderr } = await run("node_modules/.bin/buf", [
      ...bufCurlArgs("ListSuggestions", { sessionId }, "5m"),
      "--verbose",
    ]);
    expect(JSON.parse(stdout).open).toHaveLength(1);
    // The deadline went out with the call: about five minutes.
    expect(stderr).toMatch(/Grpc-Timeout: (29\d{4}m|30\d{4}m|299\d{6}u|300S|5M)/i);
  });

  test("buf curl: a watch with a 1-hour deadline delivers its first message, then a change", async () => {
    const sessionId = await chatWithOffer();
    const child = spawn(
      "node_modules/.bin/buf",
      bufCurlArgs("WatchSuggestions", { sessionId }, "1h"),
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    let err = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      err += chunk.toString();
    });
    const messages = () => out.split(/^}$/m).length - 1;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    try {
      child.stdout?.on("data", (chunk: Buffer) => {
        out += chunk.toString();
      });
      await expect.poll(messages, { timeout: 10_000 }).toBe(1);
      await offer(clients, { sessionId, turnId: "t-change" });
      await expect.poll(messages, { timeout: 10_000 }).toBe(2);
      const [first, second] = out
        .split(/^}$/m)
        .slice(0, 2)
        .map((text) => JSON.parse(`${text}}`) as { open: unknown[] });
      expect([first?.open.length, second?.open.length]).toEqual([1, 2]);
      expect(err).toBe("");
    } finally {
      child.kill();
      await exited;
    }
  });
});

/** An offer of a session on a remote host that holds every CreateChat until `stalled.open()`. */
async function withStalledHost(
  settings: { grpcFastPath: boolean; maxTimeoutMs?: number },
  run: (setup: {
    readonly url: string;
    readonly clients: Clients;
    readonly request: { sessionId: string; suggestionId: string };
    readonly stalled: { open: () => void };
    readonly created: () => number;
  }) => Promise<void>,
): Promise<void> {
  const testHost = await startTestHost();
  const server = await startTestServer(undefined, {
    ...settings,
    chatHostUrl: testHost.url,
    chatHostTimeoutMs: 30_000,
  });
  const stalled = gate();
  let created = 0;
  testHost.hooks.beforeCreateChat = () => {
    created++;
    return stalled.promise;
  };
  try {
    const clients = grpcClients(server.url);
    const sessionId = uniqueId();
    await putSession(grpcClients(testHost.url), { sessionId });
    const offered = await offer(clients, { sessionId, turnId: "t0" });
    const request = { sessionId, suggestionId: offered.suggestion?.id ?? "" };
    await run({ url: server.url, clients, request, stalled, created: () => created });
  } finally {
    stalled.open();
    await server.close();
    await testHost.close();
  }
}

describe("the service's own work is bounded by MAX_DEADLINE_MS", () => {
  test.each([
    ["the gRPC fast path", true],
    ["connect-node only", false],
  ])(
    "through %s: a Start whose host stalls ends DEADLINE_EXCEEDED at the cap, not at the caller's 5 minutes",
    (_, grpcFastPath) =>
      withStalledHost({ grpcFastPath, maxTimeoutMs: 500 }, async ({ clients, request }) => {
        const began = Date.now();
        const err = await connectErrorOf(
          clients.suggestions.startSuggestion(request, { timeoutMs: FIVE_MINUTES }),
        );
        expect(Code[err.code]).toBe(Code[Code.DeadlineExceeded]);
        // Generous: about the cap, far from the caller's five minutes.
        expect(Date.now() - began).toBeLessThan(5_000);
      }),
  );
});

/**
 * A gRPC unary call on raw HTTP/2 with `grpc-timeout` as its deadline: the client does
 * not end it itself, so the status is the server's. Answers grpc-status and the time.
 */
async function rawUnary(url: string, path: string, body: Uint8Array, timeout: string) {
  const session = http2.connect(url);
  const began = Date.now();
  try {
    const status = await new Promise<string>((resolve, reject) => {
      // The test's own bound, well past the deadline: a server that never answers fails here.
      const bound = setTimeout(() => reject(new Error("no status within 5 s")), 5_000);
      const done = (value: string) => {
        clearTimeout(bound);
        resolve(value);
      };
      const stream = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc",
        "grpc-timeout": timeout,
        te: "trailers",
      });
      stream.on("response", (h) => {
        if (h["grpc-status"] !== undefined) done(String(h["grpc-status"]));
      });
      stream.on("trailers", (t) => done(String(t["grpc-status"])));
      stream.on("error", reject);
      stream.resume();
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(body.length, 1);
      stream.end(Buffer.concat([prefix, body]));
    });
    return { status: Number(status), ms: Date.now() - began };
  } finally {
    session.destroy();
  }
}

describe("a Start waiting on another's flight", () => {
  test.each([
    ["the gRPC fast path", true],
    ["connect-node only", false],
  ])(
    "through %s: ends at its own deadline while the holder's host stalls; the holder's chat is the suggestion's",
    (_, grpcFastPath) =>
      withStalledHost({ grpcFastPath }, async ({ url, clients, request, stalled, created }) => {
        const holder = clients.suggestions.startSuggestion(request, { timeoutMs: 30_000 });
        while (created() === 0) await new Promise((resolve) => setTimeout(resolve, 10));
        const body = toBinary(
          StartSuggestionRequestSchema,
          create(StartSuggestionRequestSchema, request),
        );
        const waiter = await rawUnary(
          url,
          "/oda.suggest.v1.SuggestionService/StartSuggestion",
          body,
          "300m",
        );
        expect(Code[waiter.status]).toBe(Code[Code.DeadlineExceeded]);
        expect(waiter.ms).toBeLessThan(5_000);
        stalled.open();
        const started = await holder;
        expect(created()).toBe(1);
        const again = await clients.suggestions.startSuggestion(request);
        expect(again.chatId).toBe(started.chatId);
      }),
  );
});

// A deadline that has passed on arrival ends the call before any work; one that is not a
// deadline at all is the caller's error, named with the value it sent.
describe.each([
  ["the gRPC fast path", true],
  ["connect-node only", false],
])("deadlines past or malformed, through %s", (_, grpcFastPath) => {
  const SUGGEST = "/oda.suggest.v1.SuggestionService/SuggestTask";
  let server: SuggestServer;
  let clients: Clients;
  beforeAll(async () => {
    server = await startTestServer(undefined, { grpcFastPath });
    clients = grpcClients(server.url);
  });
  afterAll(() => server.close());

  /** A session of its own and a SuggestTask request offering on it. */
  async function request(): Promise<{ sessionId: string; body: Buffer }> {
    const sessionId = uniqueId();
    await putSession(clients, { sessionId });
    const body = toBinary(
      SuggestTaskRequestSchema,
      create(SuggestTaskRequestSchema, {
        context: { sessionId, turnId: "t-deadline", role: AgentRole.TOP_LEVEL },
        args: { title: "Past deadline", tldr: "r", brief: "b" },
      }),
    );
    return { sessionId, body: Buffer.from(body) };
  }

  /** The offers recorded on the session (read from Redis through the service). */
  async function offers(sessionId: string): Promise<number> {
    return (await clients.suggestions.listSuggestions({ sessionId })).open.length;
  }

  test.each(["0n", "0m", "0S", "0H", "0M", "0u"])(
    "grpc-timeout %s: DEADLINE_EXCEEDED, and no offer recorded",
    async (timeout) => {
      const { sessionId, body } = await request();
      const answer = await rawGrpc(server.url, SUGGEST, body, { "grpc-timeout": timeout });
      expect(Code[answer.code]).toBe(Code[Code.DeadlineExceeded]);
      expect(await offers(sessionId)).toBe(0);
    },
  );

  test.each(["", "abc", "1", "5s", "1.5S", "-1S", "123456789S"])(
    "grpc-timeout %j: INVALID_ARGUMENT naming the value, and no offer recorded",
    async (timeout) => {
      const { sessionId, body } = await request();
      const answer = await rawGrpc(server.url, SUGGEST, body, { "grpc-timeout": timeout });
      expect({ code: Code[answer.code], message: answer.message }).toEqual({
        code: Code[Code.InvalidArgument],
        message: `invalid grpc-timeout header "${timeout}"`,
      });
      expect(await offers(sessionId)).toBe(0);
    },
  );

  test("gRPC-Web: grpc-timeout 0m is DEADLINE_EXCEEDED, a malformed one INVALID_ARGUMENT", async () => {
    const post = async (timeout: string) => {
      const { sessionId, body } = await request();
      const res = await fetch(`${server.url}${SUGGEST}`, {
        method: "POST",
        headers: { "content-type": "application/grpc-web+proto", "grpc-timeout": timeout },
        body: grpcFrame(body),
      });
      return { ...(await grpcWebStatus(res)), offers: await offers(sessionId) };
    };
    expect(await post("0m")).toMatchObject({ code: Code.DeadlineExceeded, offers: 0 });
    expect(await post("x")).toEqual({
      code: Code.InvalidArgument,
      message: 'invalid grpc-timeout header "x"',
      offers: 0,
    });
  });

  test("Connect: connect-timeout-ms 0 is deadline_exceeded; a malformed one keeps its text", async () => {
    const post = async (timeout: string) => {
      const { sessionId, body } = await request();
      const res = await fetch(`${server.url}${SUGGEST}`, {
        method: "POST",
        headers: { "content-type": "application/proto", "connect-timeout-ms": timeout },
        body,
      });
      const json = (await res.json()) as { code: string; message: string };
      return { status: res.status, ...json, offers: await offers(sessionId) };
    };
    expect(await post("0")).toMatchObject({
      status: 504,
      code: "deadline_exceeded",
      offers: 0,
    });
    expect(await post("soon")).toEqual({
      status: 400,
      code: "invalid_argument",
      message: "protocol error: invalid connect timeout value: soon",
      offers: 0,
    });
  });

  test("a deadline of 1 ms or more is served", async () => {
    const { sessionId, body } = await request();
    const answer = await rawGrpc(server.url, SUGGEST, body, { "grpc-timeout": "5000m" });
    expect(answer.code).toBe(0);
    expect(await offers(sessionId)).toBe(1);
  });
});
