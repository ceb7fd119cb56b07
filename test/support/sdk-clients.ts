import type { Http2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  type CallerOptions,
  createChatHostClient,
  createLocalHostClient,
  createSuggestionClient,
  type NodeTransportOptions,
  type SuggestionClient,
} from "../../sdk/src/node.js";
import * as web from "../../sdk/src/web.js";
import { createOnePortServer } from "../../server/transport/one-port.js";

/*
 * The SDK's clients on every transport, and a Connect server for fakes: shared by
 * test/sdk/sdk-client-rpcs.test.ts and test/sdk/sdk-client-errors.test.ts.
 */

/** The SDK's three clients for one server, made by one platform entry's factories. */
export type Clients = {
  suggestion: SuggestionClient;
  chatHost: ReturnType<typeof createChatHostClient>;
  localHost: ReturnType<typeof createLocalHostClient>;
};

/** Clients of the Node entry (`@oda/suggest-task/node`): connect-node transports. */
export function viaNode(protocol: Omit<NodeTransportOptions, "baseUrl">) {
  return (baseUrl: string, caller: CallerOptions = {}): Clients => {
    const options = { baseUrl, ...protocol, ...caller } as NodeTransportOptions & CallerOptions;
    return {
      suggestion: createSuggestionClient(options),
      chatHost: createChatHostClient(options),
      localHost: createLocalHostClient(options),
    };
  };
}

/** Clients of the web entry (`@oda/suggest-task/web`): connect-web over Node's own fetch. */
export function viaFetch(protocol: Omit<web.WebTransportOptions, "baseUrl">) {
  return (baseUrl: string, caller: CallerOptions = {}): Clients => {
    const options = { baseUrl, ...protocol, ...caller };
    return {
      suggestion: web.createSuggestionClient(options),
      chatHost: web.createChatHostClient(options),
      localHost: web.createLocalHostClient(options),
    };
  };
}

/**
 * Every transport the suite runs through: each protocol and HTTP version the service serves
 * on its one port through the Node entry, and Connect and gRPC-Web over `fetch` through the
 * web entry (the transport a browser or an edge runtime uses).
 */
export const TRANSPORTS = [
  ["Node: gRPC over h2c", viaNode({ protocol: "grpc" })],
  ["Node: Connect over HTTP/1.1", viaNode({ protocol: "connect", httpVersion: "1.1" })],
  ["Node: Connect over h2c", viaNode({ protocol: "connect", httpVersion: "2" })],
  ["Node: gRPC-Web over HTTP/1.1", viaNode({ protocol: "grpc-web", httpVersion: "1.1" })],
  ["Node: gRPC-Web over h2c", viaNode({ protocol: "grpc-web", httpVersion: "2" })],
  ["fetch: Connect (JSON)", viaFetch({})],
  ["fetch: Connect (binary)", viaFetch({ useBinaryFormat: true })],
  ["fetch: gRPC-Web", viaFetch({ protocol: "grpc-web" })],
] as const;

/** A Connect server on one real port (h2c and HTTP/1.1) serving `routes`; for fakes. */
export async function serve(routes: (router: ConnectRouter) => void) {
  const { tcp, h1, h2 } = createOnePortServer(connectNodeAdapter({ routes }));
  const sessions = new Set<Http2Session>();
  h2.on("session", (session: Http2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.1", resolve));
  const { port } = tcp.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      const closed = Promise.all([
        new Promise((resolve) => tcp.close(resolve)),
        new Promise((resolve) => h1.close(resolve)),
        new Promise((resolve) => h2.close(resolve)),
      ]);
      h1.closeAllConnections();
      for (const session of sessions) session.destroy();
      await closed;
    },
  };
}
