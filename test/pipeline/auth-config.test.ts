import { expect, test } from "vitest";
import { ConfigError, configFromEnv } from "../../server/config.js";

const A = "token-aaaaaaaaaaaaaaaa";
const B = "token-bbbbbbbbbbbbbbbb";

test.each([
  ["to two roles", `agent:${A},app:${A}`],
  ["twice to one role", `app:${A},app:${A}`],
  ["twice among others", `agent:${B},host-admin:${A},app:${A}`],
])("a token listed %s is refused at start, in one line naming AUTH_TOKENS", (_, value) => {
  let error: unknown;
  try {
    configFromEnv({ AUTH_TOKENS: value });
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(ConfigError);
  expect((error as Error).message).toBe("AUTH_TOKENS lists the same token more than once");
  expect((error as Error).message).not.toContain(A);
});

test("distinct tokens, one role each, are read as given", () => {
  expect(configFromEnv({ AUTH_TOKENS: `agent:${A},app:${B}` }).authTokens).toEqual([
    { role: "agent", token: A },
    { role: "app", token: B },
  ]);
});

test("a static token may carry workspace grants after it, as a JWT's scope spells them", () => {
  const { authTokens } = configFromEnv({
    AUTH_TOKENS: `app:${A} workspace:acme workspace:globex,app:${B}`,
  });
  expect(authTokens[0]?.grants?.all).toBe(false);
  expect([...(authTokens[0]?.grants?.workspaces ?? [])]).toEqual(["acme", "globex"]);
  expect(authTokens[1]).toEqual({ role: "app", token: B });
  expect(() => configFromEnv({ AUTH_TOKENS: `app:${A} admin` })).toThrow(
    'AUTH_TOKENS: the grants after a token must be workspace:<id> or workspace:* (got "admin")',
  );
});

test("JWT settings need a key set, an issuer and an audience together", () => {
  expect(() => configFromEnv({ AUTH_JWKS_FILE: "/tmp/jwks.json" })).toThrow(
    "AUTH_JWKS_FILE needs AUTH_JWT_ISSUER and AUTH_JWT_AUDIENCE (every token's iss and aud)",
  );
  expect(
    configFromEnv({
      AUTH_JWKS_URL: "https://i.test/jwks",
      AUTH_JWT_ISSUER: "i",
      AUTH_JWT_AUDIENCE: "a",
    }).authJwt,
  ).toEqual({ jwksFile: undefined, jwksUrl: "https://i.test/jwks", issuer: "i", audience: "a" });
});

test("client certificates come with TLS, and their mapping with the CA that signs them", () => {
  expect(() => configFromEnv({ TLS_CLIENT_CA_FILE: "ca.pem" })).toThrow(
    "TLS_CLIENT_CA_FILE needs TLS_CERT_FILE and TLS_KEY_FILE (client certificates come with TLS)",
  );
  const tls = { TLS_CERT_FILE: "cert.pem", TLS_KEY_FILE: "key.pem" };
  expect(() => configFromEnv({ ...tls, AUTH_CLIENT_CERTS_FILE: "certs.json" })).toThrow(
    "AUTH_CLIENT_CERTS_FILE needs TLS_CLIENT_CA_FILE (the CA that signs the client certificates)",
  );
  const config = configFromEnv({
    ...tls,
    TLS_CLIENT_CA_FILE: "ca.pem",
    AUTH_CLIENT_CERTS_FILE: "certs.json",
  });
  expect([config.tlsClientCaFile, config.authClientCertsFile]).toEqual(["ca.pem", "certs.json"]);
});

test("CORS_ALLOWED_ORIGINS takes origins or *, and refuses anything else naming it", () => {
  expect(
    configFromEnv({ CORS_ALLOWED_ORIGINS: "https://app.example.com, http://localhost:5173" })
      .corsAllowedOrigins,
  ).toEqual(["https://app.example.com", "http://localhost:5173"]);
  expect(configFromEnv({ CORS_ALLOWED_ORIGINS: "*" }).corsAllowedOrigins).toEqual(["*"]);
  expect(() => configFromEnv({ CORS_ALLOWED_ORIGINS: "https://app.example.com/" })).toThrow(
    'CORS_ALLOWED_ORIGINS must be origins separated by commas, each scheme://host[:port] with no path or trailing slash, or * (got "https://app.example.com/")',
  );
});
