import { freePort, type RedisServerProcess } from "../../server/redis/redis-server-process.js";
import { startTestRedis } from "./store-server.js";
import { clientCert, serverCert, type TestCa, testCa } from "./tls-cert.js";

/** A certificate and its key, as PEM files. */
export interface PemPair {
  readonly cert: string;
  readonly key: string;
}

/** The certificates of a test of TLS to Redis, made with openssl in one folder. */
export interface RedisTlsTestFiles {
  /** The team's own CA: it signs Redis's certificates and the client's. */
  readonly ca: TestCa;
  /** A CA nobody trusts, and signs nothing of Redis's. */
  readonly otherCa: TestCa;
  /** Redis's certificate for IP:127.0.0.1 and DNS:redis.test. */
  readonly server: PemPair;
  /** Redis's certificate for DNS:redis.internal only. */
  readonly named: PemPair;
  /** A client certificate the CA signed. */
  readonly client: PemPair;
  /** A client certificate the other CA signed. */
  readonly stranger: PemPair;
}

/** Makes the CAs and certificates of `RedisTlsTestFiles` in `dir`. */
export async function redisTlsTestFiles(dir: string): Promise<RedisTlsTestFiles> {
  const [ca, otherCa] = await Promise.all([testCa(dir, "redis-ca"), testCa(dir, "other-ca")]);
  // One at a time: openssl keeps a CA's next serial number in a file of its own.
  const server = await serverCert(ca, dir, "redis-server", "IP:127.0.0.1,DNS:redis.test");
  const named = await serverCert(ca, dir, "redis-named", "DNS:redis.internal");
  const client = await clientCert(ca, dir, "redis-client", "/O=Example/CN=suggest-task");
  const stranger = await clientCert(otherCa, dir, "redis-stranger", "/O=Example/CN=suggest-task");
  return { ca, otherCa, server, named, client, stranger };
}

/**
 * redis-server's arguments for TLS alone on `port` (no cleartext port), presenting
 * `identity` and trusting `ca` for client certificates; `authClients`: whether a client
 * must present one (`tls-auth-clients`).
 */
export function redisTlsArgs(
  port: number,
  identity: PemPair,
  ca: TestCa,
  authClients: boolean,
): string[] {
  return [
    ...["--port", "0", "--tls-port", String(port)],
    ...["--tls-cert-file", identity.cert, "--tls-key-file", identity.key],
    ...["--tls-ca-cert-file", ca.cert, "--tls-auth-clients", authClients ? "yes" : "no"],
  ];
}

/** A redis-server of the test's own serving TLS alone; `url` is its `rediss://` URL. */
export async function startTlsRedis(
  dir: string,
  identity: PemPair,
  ca: TestCa,
  authClients: boolean,
): Promise<RedisServerProcess> {
  const port = await freePort();
  const server = await startTestRedis({
    dir,
    port,
    extraArgs: redisTlsArgs(port, identity, ca, authClients),
  });
  return { ...server, url: `rediss://127.0.0.1:${port}` };
}
