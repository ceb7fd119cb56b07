import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";

/** The service's protos as a @grpc/grpc-js client loads them at run time. */
const definition = protoLoader.loadSync(
  [
    "oda/suggest/v1/suggestion_service.proto",
    "oda/suggest/v1/chat_host.proto",
    "grpc/health/v1/health.proto",
  ],
  {
    includeDirs: ["proto", "test/fixtures"],
    keepCase: true,
    enums: String,
    longs: String,
    defaults: true,
    oneofs: true,
  },
);
const loaded = grpc.loadPackageDefinition(definition) as unknown as {
  oda: { suggest: { v1: Record<string, grpc.ServiceClientConstructor> } };
  grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
};

function credentialsFor(ca: Buffer | undefined): grpc.ChannelCredentials {
  return ca === undefined ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(ca);
}

/**
 * Channel options for TLS: grpc-js sends the target's host as the TLS server name, and an IP
 * there is not allowed (RFC 6066; Node warns DEP0123), so the test certificate's DNS name
 * `localhost` is sent and checked instead.
 */
function channelOptionsFor(ca: Buffer | undefined): grpc.ChannelOptions {
  return ca === undefined ? {} : { "grpc.ssl_target_name_override": "localhost" };
}

/** A grpc-js client of `grpc.health.v1.Health` at `url`; close it when done. */
export function loadHealth(url: string, ca?: Buffer): grpc.Client {
  return new loaded.grpc.health.v1.Health(
    url.replace(/^https?:\/\//, ""),
    credentialsFor(ca),
    channelOptionsFor(ca),
  );
}

/** grpc-js clients of the two services a caller needs, and a way to close them. */
export interface GrpcJsClients {
  readonly suggestions: grpc.Client;
  readonly local: grpc.Client;
  close(): void;
}

/**
 * @grpc/grpc-js clients of the server at `url` (`http://` or `https://`); for TLS, `ca`
 * is the certificate the server's is checked against.
 */
export function grpcJsClients(url: string, ca?: Buffer): GrpcJsClients {
  const address = url.replace(/^https?:\/\//, "");
  const credentials = credentialsFor(ca);
  const v1 = loaded.oda.suggest.v1;
  const options = channelOptionsFor(ca);
  const suggestions = new (v1.SuggestionService as grpc.ServiceClientConstructor)(
    address,
    credentials,
    options,
  );
  const local = new (v1.LocalHostService as grpc.ServiceClientConstructor)(
    address,
    credentials,
    options,
  );
  return {
    suggestions,
    local,
    close() {
      suggestions.close();
      local.close();
    },
  };
}

/** One unary call through a grpc-js client, with grpc-js call options (a deadline). */
export function grpcJsUnary<Res>(
  client: grpc.Client,
  method: string,
  request: unknown,
  options: grpc.CallOptions = {},
): Promise<Res> {
  const fn = (client as unknown as Record<string, (...args: unknown[]) => void>)[method];
  if (fn === undefined) throw new Error(`no method ${method}`);
  return new Promise((resolve, reject) => {
    fn.call(client, request, options, (err: grpc.ServiceError | null, res: Res) =>
      err ? reject(err) : resolve(res),
    );
  });
}

/** A server-streaming call through a grpc-js client. */
export function grpcJsStream<Res>(
  client: grpc.Client,
  method: string,
  request: unknown,
  options: grpc.CallOptions = {},
): grpc.ClientReadableStream<Res> {
  const fn = (client as unknown as Record<string, (...args: unknown[]) => unknown>)[method];
  if (fn === undefined) throw new Error(`no method ${method}`);
  return fn.call(client, request, options) as grpc.ClientReadableStream<Res>;
}

/**
 * The protos again, for protobufjs alone: decoding a status's details needs only the same
 * files, no generated code, as for any client in another language.
 */
const detailsRoot = (() => {
  const includeDirs = ["proto", "test/fixtures"];
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => {
    for (const dir of includeDirs) {
      const path = `${dir}/${target}`;
      try {
        require.resolve(`../../${path}`);
        return path;
      } catch {}
    }
    return target;
  };
  const files = ["oda/suggest/v1/suggestion_service.proto", "oda/suggest/v1/chat_host.proto"];
  root.loadSync([...files, "google/rpc/status.proto", "google/rpc/error_details.proto"], {
    keepCase: true,
  });
  return root;
})();

/**
 * The details of a grpc-js error's `grpc-status-details-bin` trailer, each message as a
 * plain object with its full type name under `type` (enums as names, defaults included).
 */
export function decodeStatusDetails(err: grpc.ServiceError): Record<string, unknown>[] {
  const bin = err.metadata.get("grpc-status-details-bin")[0] as Buffer;
  const status = detailsRoot.lookupType("google.rpc.Status").decode(bin) as unknown as {
    details: { type_url: string; value: Uint8Array }[];
  };
  return status.details.map((any) => {
    const type = detailsRoot.lookupType(any.type_url.slice(any.type_url.lastIndexOf("/") + 1));
    return {
      type: type.fullName.slice(1),
      ...type.toObject(type.decode(any.value), { enums: String, defaults: true }),
    };
  });
}
