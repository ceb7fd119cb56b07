import { execFile } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Whether openssl is here to make a test certificate; TLS tests are skipped without it. */
export const hasOpenssl = existsSync("/usr/bin/openssl");

/** A self-signed certificate for 127.0.0.1 in `dir`: the paths of its PEM files. */
export async function selfSignedCert(dir: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  await run("openssl", [
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "1",
    "-subj",
    "/CN=localhost",
    "-addext",
    "subjectAltName=IP:127.0.0.1,DNS:localhost",
    "-keyout",
    key,
    "-out",
    cert,
  ]);
  return { cert, key };
}

/** A test certificate authority: its certificate and key files. */
export interface TestCa {
  readonly cert: string;
  readonly key: string;
}

/** A CA of its own in `dir` (P-256, one day), named `name`. */
export async function testCa(dir: string, name: string): Promise<TestCa> {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}-key.pem`);
  await run("openssl", [
    ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
    ...["-days", "1", "-subj", `/CN=${name}`, "-keyout", key, "-out", cert],
  ]);
  return { cert, key };
}

/**
 * A client certificate signed by `ca`, with `subject` (`/O=Example/CN=billing`) and,
 * when given, a URI subject alternative name (a SPIFFE ID): the paths of its PEM files.
 */
export async function clientCert(
  ca: TestCa,
  dir: string,
  name: string,
  subject: string,
  uri?: string,
): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}-key.pem`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(
    ext,
    `extendedKeyUsage=clientAuth\n${uri === undefined ? "" : `subjectAltName=URI:${uri}\n`}`,
  );
  await run("openssl", [
    ...["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
    ...["-subj", subject, "-keyout", key, "-out", csr],
  ]);
  await run("openssl", [
    ...["x509", "-req", "-in", csr, "-CA", ca.cert, "-CAkey", ca.key, "-CAcreateserial"],
    ...["-days", "1", "-extfile", ext, "-out", cert],
  ]);
  return { cert, key };
}

/**
 * A server certificate signed by `ca` for the subject alternative names `san`
 * (`IP:127.0.0.1,DNS:redis.test`), good for server and client authentication (a Redis
 * Cluster node presents it on its bus too): the paths of its PEM files.
 */
export async function serverCert(
  ca: TestCa,
  dir: string,
  name: string,
  san: string,
): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}-key.pem`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\n`);
  await run("openssl", [
    ...["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
    ...["-subj", `/CN=${name}`, "-keyout", key, "-out", csr],
  ]);
  await run("openssl", [
    ...["x509", "-req", "-in", csr, "-CA", ca.cert, "-CAkey", ca.key, "-CAcreateserial"],
    ...["-days", "1", "-extfile", ext, "-out", cert],
  ]);
  return { cert, key };
}
