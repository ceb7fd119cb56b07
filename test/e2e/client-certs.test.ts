import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect } from "node:tls";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { FolderKind } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { AgentRole } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { tempDir, uniqueId } from "../support/harness.js";
import { useTestServer } from "../support/server-fixture.js";
import {
  answerOf,
  clientsWith,
  methodOf,
  type Protocol,
  type RpcName,
  rpcBattery,
} from "../support/tenant-auth.js";
import { clientCert, hasOpenssl, selfSignedCert, testCa } from "../support/tls-cert.js";

/*
 * TLS_CLIENT_CA_FILE and AUTH_CLIENT_CERTS_FILE: the handshake asks every client for a
 * certificate that the CA signed; a certificate's identity (its SPIFFE ID, else its
 * subject) maps to roles and grants, and the tenant rule holds for it as for a JWT. Over
 * gRPC (the fast path) and Connect (connect-node), both on HTTP/2 over TLS.
 */

const WS_A = uniqueId("wa");
const BACKEND_ID = "spiffe://example.org/ns/prod/sa/backend";
const dir = tempDir("client-certs");
type Pair = { cert: string; key: string };
const files: Record<"server" | "backend" | "admin" | "unmapped" | "stranger", Pair> = {} as never;
let serverCa: Buffer;

beforeAll(async () => {
  const ca = await testCa(dir.dir, "clients-ca");
  const otherCa = await testCa(dir.dir, "other-ca");
  files.server = await selfSignedCert(dir.dir);
  files.backend = await clientCert(ca, dir.dir, "backend", "/O=Example/CN=backend", BACKEND_ID);
  files.admin = await clientCert(ca, dir.dir, "admin", "/O=Example/CN=admin");
  files.unmapped = await clientCert(
    ca,
    dir.dir,
    "unmapped",
    "/O=Example/CN=unmapped",
    "spiffe://example.org/ns/prod/sa/unmapped",
  );
  // The same names as a mapped one, signed by a CA the server does not trust.
  files.stranger = await clientCert(
    otherCa,
    dir.dir,
    "stranger",
    "/O=Example/CN=backend",
    BACKEND_ID,
  );
  serverCa = readFileSync(files.server.cert);
  writeFileSync(
    join(dir.dir, "client-certs.json"),
    JSON.stringify({
      [BACKEND_ID]: `agent app workspace:${WS_A}`,
      "O=Example,CN=admin": "host-admin workspace:*",
    }),
  );
}, 30_000);
afterAll(() => dir.remove());

const t = useTestServer({
  settings: () => ({
    tlsCertFile: files.server.cert,
    tlsKeyFile: files.server.key,
    tlsClientCaFile: join(dir.dir, "clients-ca.pem"),
    authClientCertsFile: join(dir.dir, "client-certs.json"),
  }),
});

/** Clients presenting the client certificate `who` (none when undefined). */
function clientsOf(who: keyof typeof files | undefined, protocol: Protocol = "grpc") {
  const pair =
    who === undefined
      ? {}
      : { cert: readFileSync(files[who].cert), key: readFileSync(files[who].key) };
  return clientsWith(t.url, undefined, protocol, { ca: serverCa, ...pair });
}

/** A session of `workspaceId` with one open offer "Offer", made by the backend. */
async function chatWithOffer(workspaceId: string) {
  const sessionId = uniqueId();
  await clientsOf("admin").local.putSession({
    session: { sessionId, workspaceId, folder: FolderKind.NORMAL },
  });
  if (workspaceId !== WS_A) return { sessionId, suggestionId: "s-none", workspaceId };
  const { suggestion } = await clientsOf("backend").suggestions.suggestTask({
    context: { sessionId, turnId: uniqueId("t"), role: AgentRole.TOP_LEVEL },
    args: { title: "Offer", tldr: "R", brief: "B" },
  });
  return { sessionId, suggestionId: suggestion?.id ?? "", workspaceId };
}

/**
 * How a TLS connection presenting `who`'s certificate fares once it sends the HTTP/2
 * preface: `served` when the server answers (its SETTINGS), else the alert's error code,
 * or `closed` when it ends without a word.
 */
async function handshakeRefusal(who: keyof typeof files | undefined): Promise<string> {
  const pair =
    who === undefined
      ? {}
      : { cert: readFileSync(files[who].cert), key: readFileSync(files[who].key) };
  const socket = connect({
    host: "127.0.0.1",
    port: t.server.port,
    ca: serverCa,
    ALPNProtocols: ["h2"],
    ...pair,
  });
  return new Promise((resolve) => {
    // TLS 1.3: the client's side of the handshake ends first; the server's alert follows.
    socket.on("secureConnect", () => socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
    socket.on("data", () => resolve("served"));
    socket.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    // An error is told before the close; a close without one: ended with nothing served.
    socket.on("close", () => resolve("closed"));
  });
}

describe.skipIf(!hasOpenssl)("the handshake", () => {
  test("refuses a client without a certificate, and one whose certificate another CA signed", async () => {
    expect(await handshakeRefusal(undefined)).toBe("ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED");
    // The server's alert (unknown ca) may come as the connection's end, with nothing served.
    expect(["ERR_SSL_TLSV1_ALERT_UNKNOWN_CA", "closed"]).toContain(
      await handshakeRefusal("stranger"),
    );
    // A mapped one is served.
    expect(await handshakeRefusal("backend")).toBe("served");
  });
});

describe.skipIf(!hasOpenssl).each(["grpc", "connect"] as const)("over %s", (protocol) => {
  test("a call without a certificate, or with one of another CA, is not served", async () => {
    for (const who of [undefined, "stranger"] as const) {
      const c = clientsOf(who, protocol).suggestions;
      const answer = await answerOf(
        methodOf("ListSuggestions"),
        c.listSuggestions({ sessionId: uniqueId() }),
      );
      // The TLS alert, or the stream it cut; the client library picks the code.
      expect([who, answer]).toMatchObject([
        who,
        { code: expect.stringMatching(/^(Unavailable|Internal|Canceled)$/) },
      ]);
    }
  });

  test("a mapped certificate gets its roles and grants; the tenant rule holds", async () => {
    const a = await chatWithOffer(WS_A);
    const backend = clientsOf("backend", protocol).suggestions;
    expect((await backend.getSuggestion(a)).suggestion?.title).toBe("Offer");
    // A chat of a workspace the certificate is not granted answers as an absent one.
    const b = await chatWithOffer(uniqueId("wb"));
    const foreign = rpcBattery(backend, { ...b, suggestionId: a.suggestionId });
    const absent = rpcBattery(backend, {
      sessionId: uniqueId(),
      suggestionId: a.suggestionId,
      workspaceId: b.workspaceId,
    });
    for (const name of Object.keys(foreign) as RpcName[]) {
      const method = methodOf(name);
      expect([name, await answerOf(method, foreign[name]())]).toEqual([
        name,
        await answerOf(method, absent[name]()),
      ]);
    }
    // A role outside its own: the host's.
    expect(
      await answerOf(
        methodOf("ListSuggestions"),
        clientsOf("backend", protocol).local.putSession({ session: { sessionId: uniqueId() } }),
      ),
    ).toEqual({
      code: "PermissionDenied",
      message:
        "a certificate of the agent and app roles may not call oda.suggest.v1.LocalHostService/PutSession",
      details: [],
    });
    // The subject-mapped certificate of the host-admin role may not read suggestions.
    expect(
      await answerOf(
        methodOf("ListSuggestions"),
        clientsOf("admin", protocol).suggestions.listSuggestions(a),
      ),
    ).toEqual({
      code: "PermissionDenied",
      message:
        "a certificate of the host-admin role may not call oda.suggest.v1.SuggestionService/ListSuggestions",
      details: [],
    });
  });

  test("an unmapped certificate is PERMISSION_DENIED", async () => {
    const c = clientsOf("unmapped", protocol).suggestions;
    expect(
      await answerOf(methodOf("ListSuggestions"), c.listSuggestions({ sessionId: uniqueId() })),
    ).toEqual({
      code: "PermissionDenied",
      message: "the client certificate spiffe://example.org/ns/prod/sa/unmapped is granted no role",
      details: [],
    });
  });
});
