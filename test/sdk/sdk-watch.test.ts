import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import {
  createSuggestionClient,
  SuggestionSchema,
  SuggestionService,
  type WatchSuggestionsRequest,
  type WatchSuggestionsResponse,
  WatchSuggestionsResponseSchema,
} from "../../sdk/src/node.js";
import { connectErrorOf, tempDir } from "../support/harness.js";
import { serve } from "../support/sdk-clients.js";
import { ROOT } from "../support/sdk-consumer.js";

/*
 * The SDK's watches (sdk/src/watch.ts) against a scripted server: each connection plays the
 * next script of messages and then ends the way the script says. The server records the
 * requests it got and when each stream's end reached it.
 */

type Step = WatchSuggestionsResponse | { end: "ok" } | { end: ConnectError } | { wait: true };

const lists = (...titles: string[]) =>
  create(WatchSuggestionsResponseSchema, {
    open: titles.map((title) => create(SuggestionSchema, { id: title, title })),
  });
const heartbeat = create(WatchSuggestionsResponseSchema, { heartbeat: true });

function scriptedServer(scripts: Step[][]) {
  const requests: WatchSuggestionsRequest[] = [];
  const ended: number[] = [];
  let next = 0;
  const started = serve((router) =>
    router.service(SuggestionService, {
      async *watchSuggestions(req, context) {
        requests.push(req);
        const script = scripts[Math.min(next++, scripts.length - 1)] ?? [];
        try {
          for (const step of script) {
            if ("end" in step) {
              if (step.end === "ok") return;
              throw step.end;
            }
            if ("wait" in step) {
              await new Promise<void>((resolve) =>
                context.signal.addEventListener("abort", () => resolve(), { once: true }),
              );
              return;
            }
            yield step;
          }
          await new Promise<void>((resolve) =>
            context.signal.addEventListener("abort", () => resolve(), { once: true }),
          );
        } finally {
          ended.push(Date.now());
        }
      },
    }),
  );
  return { started, requests, ended };
}

async function collect(
  iterable: AsyncIterable<WatchSuggestionsResponse>,
  count: number,
): Promise<string[][]> {
  const seen: string[][] = [];
  for await (const message of iterable) {
    seen.push(message.open.map((s) => s.title));
    if (seen.length === count) break;
  }
  return seen;
}

describe("a watch on the SDK's defaults", () => {
  test("asks for heartbeats, hides them and repeats, reconnects after OK, UNAVAILABLE and a reset", async () => {
    const server = scriptedServer([
      [lists("a"), heartbeat, lists("a"), lists("a", "b"), { end: "ok" }],
      [lists("a", "b"), heartbeat, { end: new ConnectError("draining", Code.Unavailable) }],
      [lists("a", "b"), lists("c"), { end: new ConnectError("reset", Code.Internal) }],
      [lists("c"), lists("d")],
    ]);
    const { url, close } = await server.started;
    try {
      const client = createSuggestionClient({
        baseUrl: url,
        watch: { initialBackoffMs: 10, maxBackoffMs: 20 },
      });
      const seen = await collect(client.watchSuggestions({ sessionId: "s-1" }), 4);
      expect(seen).toEqual([["a"], ["a", "b"], ["c"], ["d"]]);
      expect(server.requests.map((r) => r.heartbeatSeconds)).toEqual([15, 15, 15, 15]);
    } finally {
      await close();
    }
  });

  test("onReconnecting hears each end a reconnect mends, onConnected each stream that answers", async () => {
    const server = scriptedServer([
      [lists("a"), { end: new ConnectError("draining", Code.Unavailable) }],
      [lists("a"), { end: "ok" }],
      [heartbeat, lists("b")],
    ]);
    const { url, close } = await server.started;
    try {
      const client = createSuggestionClient({
        baseUrl: url,
        watch: { initialBackoffMs: 10, maxBackoffMs: 20 },
      });
      const heard: string[] = [];
      const seen: string[][] = [];
      for await (const m of client.watchSuggestions(
        { sessionId: "s-1" },
        {
          onConnected: () => heard.push("connected"),
          onReconnecting: ({ reason, attempt, waitMs }) => {
            expect(waitMs).toBeLessThanOrEqual(20);
            heard.push(`${reason === undefined ? "ok" : reason.rawMessage} #${attempt}`);
          },
        },
      )) {
        seen.push(m.open.map((s) => s.title));
        heard.push(`yield ${m.open.map((s) => s.title).join()}`);
        if (seen.length === 2) break;
      }
      // The second stream's state repeats the first's: not yielded, but it is connected.
      expect(heard).toEqual([
        "connected",
        "yield a",
        "draining #1",
        "connected",
        "ok #2",
        "connected",
        "yield b",
      ]);
    } finally {
      await close();
    }
  });

  test("ends on a code a reconnect cannot mend, after what it yielded", async () => {
    for (const code of [Code.PermissionDenied, Code.Unauthenticated, Code.InvalidArgument]) {
      const server = scriptedServer([
        [lists("a"), { end: new ConnectError("cut", Code.Unavailable) }],
        [lists("b"), { end: new ConnectError("no", code) }],
      ]);
      const { url, close } = await server.started;
      try {
        const client = createSuggestionClient({ baseUrl: url, watch: { initialBackoffMs: 10 } });
        const seen: string[][] = [];
        const err = await connectErrorOf(
          (async () => {
            for await (const m of client.watchSuggestions({ sessionId: "s-1" })) {
              seen.push(m.open.map((s) => s.title));
            }
          })(),
        );
        expect([err.code, seen]).toEqual([code, [["a"], ["b"]]]);
        expect(server.requests).toHaveLength(2);
      } finally {
        await close();
      }
    }
  });

  test("a watch ended by the caller's own abort rejects CANCELED and does not reconnect", async () => {
    const server = scriptedServer([[lists("a")]]);
    const { url, close } = await server.started;
    try {
      const client = createSuggestionClient({ baseUrl: url, watch: { initialBackoffMs: 1 } });
      const watching = new AbortController();
      const err = await connectErrorOf(
        (async () => {
          for await (const _ of client.watchSuggestions(
            { sessionId: "s-1" },
            { signal: watching.signal },
          )) {
            watching.abort();
          }
        })(),
      );
      expect(err.code).toBe(Code.Canceled);
      await vi.waitUntil(() => server.ended.length === 1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(server.requests).toHaveLength(1);
    } finally {
      await close();
    }
  });

  test("raw: the server's stream as it is, heartbeats included, its OK end the loop's end", async () => {
    const server = scriptedServer([[lists("a"), heartbeat, lists("a"), { end: "ok" }]]);
    const { url, close } = await server.started;
    try {
      const client = createSuggestionClient({ baseUrl: url });
      const seen: boolean[] = [];
      for await (const m of client.watchSuggestions({ sessionId: "s-1" }, { raw: true })) {
        seen.push(m.heartbeat);
      }
      expect(seen).toEqual([false, true, false]);
      expect(server.requests.map((r) => r.heartbeatSeconds)).toEqual([0]);
    } finally {
      await close();
    }
  });

  test("break ends the stream on the server within a second, on the defaults and raw", async () => {
    for (const raw of [false, true]) {
      const server = scriptedServer([[lists("a")]]);
      const { url, close } = await server.started;
      try {
        const client = createSuggestionClient({ baseUrl: url });
        for await (const _ of client.watchSuggestions({ sessionId: "s-1" }, { raw })) break;
        const left = Date.now();
        await vi.waitUntil(() => server.ended.length === 1, { timeout: 1_000, interval: 10 });
        expect((server.ended[0] ?? Number.POSITIVE_INFINITY) - left).toBeLessThan(1_000);
        expect(server.requests).toHaveLength(1);
      } finally {
        await close();
      }
    }
  });
});

describe("a script that leaves a watch's loop", () => {
  const dir = tempDir("watch-break");
  let script = "";
  beforeAll(async () => {
    // The SDK as a bundler builds it for an application: one ES module file.
    const entry = join(dir.dir, "a.ts");
    writeFileSync(
      entry,
      `import { createSuggestionClient } from ${JSON.stringify(join(ROOT, "sdk/src/node.ts"))};
const client = createSuggestionClient({ baseUrl: process.argv[2] });
for await (const { open } of client.watchSuggestions({ sessionId: "s-1" })) {
  console.log(open.length);
  break;
}
console.log("left the loop");
`,
    );
    script = join(dir.dir, "a.mjs");
    await build({
      entryPoints: [entry],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      outfile: script,
      logLevel: "silent",
    });
  });
  afterAll(() => dir.remove());

  test("exits by itself", async () => {
    const server = scriptedServer([[lists("a"), { wait: true }]]);
    const { url, close } = await server.started;
    try {
      const child = spawn(process.execPath, [script, url], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
      });
      const exited = new Promise<number | string>((resolve) =>
        child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)),
      );
      const bound = setTimeout(() => child.kill("SIGKILL"), 20_000);
      const code = await exited;
      clearTimeout(bound);
      expect([code, out]).toEqual([0, "1\nleft the loop\n"]);
      expect(server.ended).toHaveLength(1);
    } finally {
      await close();
    }
  });
});
