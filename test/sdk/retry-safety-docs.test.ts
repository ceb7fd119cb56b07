import { readFileSync } from "node:fs";
import type { DescMethod } from "@bufbuild/protobuf";
import { expect, test } from "vitest";
import {
  ChatHostService,
  isRetrySafe,
  LocalHostService,
  SuggestionService,
} from "../../sdk/src/node.js";

/*
 * The retry safety of every RPC is stated once in docs/contract.md; the SDK's `isRetrySafe`,
 * and the service configs of the Python and Go examples, must say the same.
 */

const SERVICES = [SuggestionService, ChatHostService, LocalHostService];
const methods = SERVICES.flatMap((s) => s.methods);

/** A request with every field a retry rule reads: a tool_call_id, an idempotency key. */
function fullRequest(method: DescMethod) {
  const fields = new Set(method.input.fields.map((f) => f.localName));
  return {
    $typeName: method.input.typeName,
    ...(fields.has("context") ? { context: { toolCallId: "call-1" } } : {}),
    ...(fields.has("idempotencyKey") ? { idempotencyKey: "key-1" } : {}),
  };
}

/** The rows of docs/contract.md's "Retry safety" table: the RPCs named, the verdict. */
function contractRows(): { names: string[]; verdict: string }[] {
  const text = readFileSync("docs/contract.md", "utf8");
  const section = text.slice(text.indexOf("## Retry safety"));
  const table = section.slice(0, section.indexOf("\n## ", 3));
  return table
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .map((line) => {
      const [rpcs = "", verdict = ""] = line.split("|").slice(1, 3);
      return { names: [...rpcs.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string), verdict };
    });
}

test("docs/contract.md states the retry safety of every RPC, as isRetrySafe judges it", () => {
  const rows = contractRows();
  for (const method of methods) {
    const row = rows.find((r) => r.names.includes(method.name));
    expect(row, method.name).toBeDefined();
    const verdict = row?.verdict.trim() ?? "";
    if (method.methodKind === "server_streaming") {
      expect(verdict, method.name).toMatch(/^reconnect/);
    } else if (isRetrySafe(method, { $typeName: method.input.typeName })) {
      expect(verdict, method.name).toMatch(/^yes/);
    } else if (isRetrySafe(method, fullRequest(method))) {
      expect(verdict, method.name).toMatch(/^only with/);
    } else {
      expect(verdict, method.name).toMatch(/^no/);
    }
  }
});

/** The unary methods a client that always sends its keys may retry, as `service/Method`. */
function retriedWithKeys(services: typeof SERVICES): string[] {
  return services
    .flatMap((s) => s.methods)
    .filter((m) => m.methodKind === "unary" && isRetrySafe(m, fullRequest(m)))
    .map((m) => `${m.parent.typeName}/${m.name}`)
    .sort();
}

test("the Python and Go examples' retry policies list exactly the retry-safe calls they make", () => {
  // The examples call SuggestionService and the embedded host's LocalHostService.
  const want = retriedWithKeys([SuggestionService, LocalHostService]);

  const python = readFileSync("examples/python/staying_connected.py", "utf8");
  const block = python.slice(python.indexOf("RETRY_SAFE_METHODS = {"));
  const listed = (service: string, name: string) => {
    const list = block.slice(block.indexOf(`${name}: [`));
    return [...list.slice(0, list.indexOf("]")).matchAll(/"(\w+)"/g)].map(
      (m) => `${service}/${m[1]}`,
    );
  };
  const fromPython = [
    ...listed("oda.suggest.v1.SuggestionService", "SUGGESTIONS"),
    ...listed("oda.suggest.v1.LocalHostService", "LOCAL_HOST"),
  ].sort();
  expect(fromPython).toEqual(want);

  const go = readFileSync("examples/go/main.go", "utf8");
  const fromGo = [...go.matchAll(/\{"service": "([\w.]+)", "method": "(\w+)"\}/g)]
    .map((m) => `${m[1]}/${m[2]}`)
    .sort();
  expect(fromGo).toEqual(want);
});
