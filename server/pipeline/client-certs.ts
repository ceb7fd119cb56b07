import { X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { type ContextValues, createContextKey, createContextValues } from "@connectrpc/connect";
import { parseScope, type WorkspaceGrants } from "../domain/grants.js";

/** Who a verified client certificate says the caller is. */
export interface ClientIdentity {
  /** The SPIFFE ID of its first `URI:spiffe://` subject alternative name, if any. */
  readonly spiffeId: string | undefined;
  /** Its subject, `TYPE=value` attributes in the certificate's order joined by commas. */
  readonly subject: string;
}

/** What a mapped identity may do: its roles' names and its workspace grants. */
export interface CertificateGrant {
  /** The scope's words other than workspace grants (the roles). */
  readonly words: readonly string[];
  readonly grants: WorkspaceGrants;
}

/**
 * The identity of the client certificate the call's connection presented, put on the
 * call's context by the transport (`connectionValues`) when TLS_CLIENT_CA_FILE is set.
 */
export const clientIdentityKey = createContextKey<ClientIdentity | undefined>(undefined, {
  description: "the identity of the caller's client certificate",
});

/** The identity of each TLS connection, read once per connection. */
// A side table of identities, derived from each connection's peer certificate only.
const identities = new WeakMap<object, ClientIdentity | undefined>();

/**
 * The context values a call starts with on `socket`: the identity of its verified client
 * certificate (the handshake has refused a connection without one, or with one not
 * signed by TLS_CLIENT_CA_FILE's CA), read once per connection.
 */
export function connectionValues(socket: Socket): ContextValues {
  const values = createContextValues();
  let identity = identities.get(socket);
  if (identity === undefined && !identities.has(socket)) {
    identity = identityOf(socket as TLSSocket);
    identities.set(socket, identity);
  }
  if (identity !== undefined) values.set(clientIdentityKey, identity);
  return values;
}

/** The identity of the verified certificate `socket` presented; undefined without one. */
function identityOf(socket: TLSSocket): ClientIdentity | undefined {
  if (typeof socket.getPeerCertificate !== "function" || socket.authorized !== true) {
    return undefined;
  }
  const peer = socket.getPeerCertificate();
  if (peer?.raw === undefined) return undefined;
  const cert = new X509Certificate(peer.raw);
  const spiffeId = (cert.subjectAltName ?? "")
    .split(", ")
    .find((name) => name.startsWith("URI:spiffe://"))
    ?.slice("URI:".length);
  return { spiffeId, subject: cert.subject.split("\n").join(",") };
}

/** How a mapped certificate is named in messages: its SPIFFE ID, else its subject. */
export function identityName(identity: ClientIdentity): string {
  return identity.spiffeId ?? identity.subject;
}

/**
 * Reads AUTH_CLIENT_CERTS_FILE: a JSON object whose keys are client identities (a SPIFFE
 * ID, `spiffe://...`, or a subject as `identityOf` spells it, e.g. `O=Example,CN=billing`)
 * and whose values are scopes as a JWT's `scope` claim spells them (`"agent app
 * workspace:acme"`). Throws an Error naming what is wrong.
 */
export async function readClientCertMap(path: string): Promise<Map<string, CertificateGrant>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, "utf8"));
  } catch (err) {
    throw new Error(`AUTH_CLIENT_CERTS_FILE ${path} cannot be read as JSON (${String(err)})`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new Error(
      `AUTH_CLIENT_CERTS_FILE must hold a JSON object of identity: "scope" entries (${path})`,
    );
  }
  const map = new Map<string, CertificateGrant>();
  for (const [identity, scope] of Object.entries(parsed)) {
    if (typeof scope !== "string") {
      throw new Error(`AUTH_CLIENT_CERTS_FILE: the scope of "${identity}" must be a string`);
    }
    map.set(identity, parseScope(scope));
  }
  return map;
}

/** The grant of `identity` in `map`: its SPIFFE ID's, else its subject's. */
export function certificateGrant(
  map: ReadonlyMap<string, CertificateGrant>,
  identity: ClientIdentity,
): CertificateGrant | undefined {
  return (
    (identity.spiffeId === undefined ? undefined : map.get(identity.spiffeId)) ??
    map.get(identity.subject)
  );
}
