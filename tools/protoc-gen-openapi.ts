import {
  create,
  createFileRegistry,
  type DescMessage,
  type DescMethod,
  type DescService,
} from "@bufbuild/protobuf";
import {
  type CodeGeneratorRequest,
  CodeGeneratorResponse_Feature,
  CodeGeneratorResponseSchema,
  FileDescriptorSetSchema,
  MethodOptions_IdempotencyLevel,
} from "@bufbuild/protobuf/wkt";
import { type Plugin, runNodeJs } from "@bufbuild/protoplugin";
import { commentOf, refOf, type Schema, schemasOf } from "./openapi-schemas.js";

/*
 * protoc-gen-openapi: an OpenAPI 3.1 document of the Connect JSON surface of the services
 * named by `service=` options (unary RPCs only), run by buf.gen.yaml. Each unary RPC is a
 * POST of its request in proto3 JSON; one marked `idempotency_level = NO_SIDE_EFFECTS` is
 * also a GET (`?connect=v1&encoding=json&message=...`). Errors are Connect's error body;
 * the types of its details named by `detail=` options get schemas too.
 */

/** The plugin's options. */
interface Options {
  readonly services: string[];
  readonly details: string[];
  readonly title: string;
}

function parseOptions(parameter: string): Options {
  const options: Options = { services: [], details: [], title: "Connect API" };
  for (const pair of parameter.split(",").filter((p) => p !== "")) {
    const [key = "", value = ""] = pair.split("=", 2);
    if (key === "service") options.services.push(value);
    else if (key === "detail") options.details.push(value);
    else if (key === "title") (options as { title: string }).title = value;
    else throw new Error(`protoc-gen-openapi: unknown option ${JSON.stringify(key)}`);
  }
  if (options.services.length === 0) throw new Error("protoc-gen-openapi: name a service=");
  return options;
}

/** Connect's codes, as its error body names them. */
const CONNECT_CODES = [
  "canceled",
  "unknown",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "already_exists",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "aborted",
  "out_of_range",
  "unimplemented",
  "internal",
  "unavailable",
  "data_loss",
  "unauthenticated",
];

/** Connect's error body, with the types its details may carry. */
function connectErrorSchema(details: readonly string[]): Schema {
  return {
    type: "object",
    description:
      "A failed call, as Connect answers it: a non-2xx HTTP status, its code, its message, and typed details.",
    properties: {
      code: { type: "string", enum: CONNECT_CODES },
      message: { type: "string", description: "The message meant for the caller, exactly." },
      details: {
        type: "array",
        items: {
          type: "object",
          properties: {
            type: {
              type: "string",
              description: `The detail's full message name: ${details.join(", ")}.`,
              ...(details.length === 0 ? {} : { examples: [...details] }),
            },
            value: {
              type: "string",
              contentEncoding: "base64",
              description: "The detail's protobuf binary encoding, base64 without padding.",
            },
            debug: { description: "The detail in proto3 JSON, when the server adds it." },
          },
          required: ["type", "value"],
        },
      },
    },
    required: ["code"],
  };
}

/** The headers and query parameters every Connect unary call may send. */
const PARAMETERS: Record<string, Schema> = {
  "Connect-Protocol-Version": {
    name: "Connect-Protocol-Version",
    in: "header",
    description: "The Connect protocol's version; send 1.",
    schema: { type: "string", enum: ["1"] },
  },
  "Connect-Timeout-Ms": {
    name: "Connect-Timeout-Ms",
    in: "header",
    description: "The caller's deadline, in milliseconds.",
    schema: { type: "string", pattern: "^[0-9]{1,10}$" },
  },
  connect: {
    name: "connect",
    in: "query",
    required: true,
    schema: { type: "string", enum: ["v1"] },
  },
  encoding: {
    name: "encoding",
    in: "query",
    required: true,
    schema: { type: "string", enum: ["json", "proto"] },
  },
  base64: {
    name: "base64",
    in: "query",
    description: "1 when `message` is base64url (for encoding=proto).",
    schema: { type: "string", enum: ["1"] },
  },
};

const ERROR_RESPONSE = {
  description: "The call failed.",
  content: { "application/json": { schema: refOf("connect.error") } },
};

/** The path item of one unary RPC: POST, and GET for a read. */
function pathItem(method: DescMethod): Schema {
  const ok = {
    description: "The call succeeded.",
    content: { "application/json": { schema: refOf(method.output.typeName) } },
  };
  const common = {
    operationId: `${method.parent.name}_${method.name}`,
    tags: [method.parent.name],
    ...(commentOf(method) === undefined ? {} : { description: commentOf(method) }),
  };
  const header = [
    { $ref: "#/components/parameters/Connect-Protocol-Version" },
    { $ref: "#/components/parameters/Connect-Timeout-Ms" },
  ];
  const item: Schema = {
    post: {
      ...common,
      summary: `${method.name} (POST)`,
      parameters: header,
      requestBody: {
        required: true,
        content: { "application/json": { schema: refOf(method.input.typeName) } },
      },
      responses: { "200": ok, default: ERROR_RESPONSE },
    },
  };
  if (method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS) {
    item.get = {
      ...common,
      operationId: `${method.parent.name}_${method.name}_Get`,
      summary: `${method.name} (GET, no side effects)`,
      parameters: [
        ...header,
        { $ref: "#/components/parameters/connect" },
        { $ref: "#/components/parameters/encoding" },
        { $ref: "#/components/parameters/base64" },
        {
          name: "message",
          in: "query",
          required: true,
          description: "The request: its proto3 JSON (encoding=json), URL-encoded.",
          content: { "application/json": { schema: refOf(method.input.typeName) } },
        },
      ],
      responses: {
        "200": ok,
        "304": { description: "The answer named by If-None-Match is still current." },
        default: ERROR_RESPONSE,
      },
    };
  }
  return item;
}

/** The document's description: what it covers, and what it leaves to gRPC and Connect streaming. */
function describe(services: readonly DescService[]): string {
  const streams = services.flatMap((s) =>
    s.methods.filter((m) => m.methodKind !== "unary").map((m) => `${s.typeName}/${m.name}`),
  );
  return [
    "The unary RPCs of " +
      services.map((s) => s.typeName).join(", ") +
      " over Connect's JSON encoding: POST /<service>/<method> with the request in proto3 JSON " +
      "(lowerCamel names, 64-bit integers as strings, enums by name, timestamps in RFC 3339), " +
      "and GET for the reads marked idempotency_level = NO_SIDE_EFFECTS.",
    streams.length === 0
      ? ""
      : `Streams stay gRPC and Connect streaming, and are not described here: ${streams.join(", ")}.`,
    "Other services of the same port (gRPC health, server reflection, the embedded chat host) " +
      "speak gRPC and Connect too; their protos describe them.",
  ]
    .filter((p) => p !== "")
    .join("\n\n");
}

/** The OpenAPI document of `options`' services in `request`'s files. */
export function openApiDocument(request: CodeGeneratorRequest, options: Options): Schema {
  const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: request.protoFile }));
  const services = options.services.map((name) => {
    const service = registry.getService(name);
    if (service === undefined) throw new Error(`protoc-gen-openapi: no service ${name}`);
    return service;
  });
  const details = options.details.map((name) => {
    const message = registry.getMessage(name);
    if (message === undefined) throw new Error(`protoc-gen-openapi: no message ${name}`);
    return message;
  });
  const paths: Record<string, Schema> = {};
  const roots: DescMessage[] = [...details];
  for (const service of services) {
    for (const method of service.methods.filter((m) => m.methodKind === "unary")) {
      paths[`/${service.typeName}/${method.name}`] = pathItem(method);
      roots.push(method.input, method.output);
    }
  }
  return {
    openapi: "3.1.0",
    info: {
      title: options.title,
      version: services[0]?.file.proto.package ?? "",
      description: describe(services),
    },
    tags: services.map((s) => ({ name: s.name, description: commentOf(s) ?? s.typeName })),
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "A token of AUTH_TOKENS; without AUTH_TOKENS every call is allowed.",
        },
      },
      parameters: PARAMETERS,
      schemas: {
        "connect.error": connectErrorSchema(options.details),
        ...schemasOf(roots),
      },
    },
  };
}

const plugin: Plugin = {
  name: "protoc-gen-openapi",
  version: "v1",
  run(request) {
    const document = openApiDocument(request, parseOptions(request.parameter));
    return create(CodeGeneratorResponseSchema, {
      supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
      file: [{ name: "openapi.json", content: `${JSON.stringify(document, null, 2)}\n` }],
    });
  },
};

runNodeJs(plugin);
