import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, test } from "vitest";
import { SuggestionService } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { putSession, uniqueId } from "../support/harness.js";
import { ROOT } from "../support/sdk-consumer.js";
import { useTestServer } from "../support/server-fixture.js";
import { offer } from "../support/suggest.js";

/*
 * GET /openapi.json: the OpenAPI 3.1 document that tools/protoc-gen-openapi.ts generates
 * from the protos (committed in gen/openapi/, checked by CI's generate diff), valid by
 * an OpenAPI validator and true to what the service answers.
 */

type Doc = {
  openapi: string;
  info: { description: string };
  paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
  components: {
    schemas: Record<string, { properties?: Record<string, unknown>; enum?: string[] }>;
    securitySchemes: Record<string, unknown>;
  };
};

describe("GET /openapi.json", () => {
  const t = useTestServer();
  const path = (rpc: string) => `/oda.suggest.v1.SuggestionService/${rpc}`;

  async function fetchDoc(): Promise<{ text: string; doc: Doc; type: string | null }> {
    const res = await fetch(`${t.url}/openapi.json`);
    expect(res.status).toBe(200);
    const text = await res.text();
    return { text, doc: JSON.parse(text) as Doc, type: res.headers.get("content-type") };
  }

  test("serves the committed document, which is valid OpenAPI 3.1", async () => {
    const { text, doc, type } = await fetchDoc();
    expect(type).toBe("application/json");
    expect(text).toBe(readFileSync(join(ROOT, "gen/openapi/openapi.json"), "utf8"));
    expect(doc.openapi).toBe("3.1.0");
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  test("names every unary RPC of SuggestionService, a GET for each read, and says where streams are", async () => {
    const { doc } = await fetchDoc();
    const unary = SuggestionService.methods.filter((m) => m.methodKind === "unary");
    expect(Object.keys(doc.paths).sort()).toEqual(unary.map((m) => path(m.name)).sort());
    const gets = Object.entries(doc.paths)
      .filter(([, item]) => item.get !== undefined)
      .map(([p]) => p);
    expect(gets.sort()).toEqual(
      ["GetSuggestion", "ListSettlements", "ListSuggestions", "ListWorkspaceSuggestions"]
        .map(path)
        .sort(),
    );
    expect(doc.info.description).toContain(
      "Streams stay gRPC and Connect streaming, and are not described here: oda.suggest.v1.SuggestionService/WatchSuggestions, oda.suggest.v1.SuggestionService/WatchWorkspaceSuggestions.",
    );
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.paths[path("SuggestTask")]?.post?.responses.default).toEqual({
      description: "The call failed.",
      content: { "application/json": { schema: { $ref: "#/components/schemas/connect.error" } } },
    });
  });

  test("its schemas are the proto3 JSON the service answers: names, enums, timestamps", async () => {
    const { doc } = await fetchDoc();
    const schemas = doc.components.schemas;
    expect(schemas["google.protobuf.Timestamp"]).toMatchObject({
      type: "string",
      format: "date-time",
    });
    expect(schemas["oda.suggest.v1.SuggestionState"]?.enum).toContain("SUGGESTION_STATE_OPEN");
    const sessionId = uniqueId();
    await putSession(t.clients, { sessionId });
    await offer(t.clients, { sessionId, title: "Described" });
    const res = await fetch(`${t.url}${path("ListSuggestions")}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ sessionId }),
    });
    const body = (await res.json()) as { open: Record<string, unknown>[] };
    const answered = body.open[0] as Record<string, unknown>;
    const properties = schemas["oda.suggest.v1.Suggestion"]?.properties ?? {};
    for (const key of Object.keys(answered)) expect(Object.keys(properties)).toContain(key);
    expect(schemas["oda.suggest.v1.SuggestionState"]?.enum).toContain(answered.state);
    // proto3 JSON's timestamp: RFC 3339 in UTC, with 0, 3, 6 or 9 fractional digits.
    expect(answered.offeredAt).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}|\.\d{6}|\.\d{9})?Z$/,
    );
    expect(Number.isNaN(Date.parse(answered.offeredAt as string))).toBe(false);
  });
});
