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
