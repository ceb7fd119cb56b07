import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, test } from "vitest";
import { ROOT } from "../support/sdk-consumer.js";

/*
 * `npm run check:breaking` compares the protos with the contract as last released
 * (proto/baseline/oda-suggest-v1.binpb, written by `npm run release:contract`): the
 * checkout passes, and a copy of the protos with a breaking change fails naming it.
 */

const run = promisify(execFile);
const SERVICE_PROTO = "proto/oda/suggest/v1/suggestion_service.proto";

/** `npm run check:breaking`, on the checkout or on the module in `dir`. */
async function checkBreaking(dir?: string): Promise<{ code: number; out: string }> {
  const args = ["run", "-s", "check:breaking", ...(dir === undefined ? [] : ["--", dir])];
  return run("npm", args, { cwd: ROOT, encoding: "utf8" }).then(
    ({ stdout, stderr }) => ({ code: 0, out: stdout + stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({
      code: err.code,
      out: err.stdout + err.stderr,
    }),
  );
}

const copies: string[] = [];
afterEach(() => {
  for (const dir of copies.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A copy of the buf module (buf.yaml and proto/) with `edit` applied to one file. */
function mutated(file: string, edit: (text: string) => string): string {
  const dir = mkdtempSync(join(tmpdir(), "contract-"));
  copies.push(dir);
  cpSync(join(ROOT, "buf.yaml"), join(dir, "buf.yaml"));
  cpSync(join(ROOT, "proto"), join(dir, "proto"), { recursive: true });
  const path = join(dir, file);
  const before = readFileSync(path, "utf8");
  const after = edit(before);
  expect(after).not.toBe(before);
  writeFileSync(path, after);
  return dir;
}

describe("npm run check:breaking", () => {
  test("passes on the checkout", async () => {
    const { code, out } = await checkBreaking();
    expect(out).toBe("");
    expect(code).toBe(0);
  });

  test("fails naming the RPC when an RPC is renamed", async () => {
    const dir = mutated(SERVICE_PROTO, (t) => t.replace("rpc ListSuggestions(", "rpc ListOffers("));
    const { code, out } = await checkBreaking(dir);
    expect(code).not.toBe(0);
    expect(out).toContain(
      'Previously present RPC "ListSuggestions" on service "SuggestionService" was deleted.',
    );
  });

  test("fails naming the field when a field is renumbered", async () => {
    const dir = mutated(SERVICE_PROTO, (t) =>
      t.replace(/(message GetSuggestionRequest \{[^}]*string suggestion_id = )2;/, "$12000;"),
    );
    const { code, out } = await checkBreaking(dir);
    expect(code).not.toBe(0);
    expect(out).toContain(
      'Previously present field "2" with name "suggestion_id" on message "GetSuggestionRequest" was deleted.',
    );
  });

  test("fails when a read loses NO_SIDE_EFFECTS, which its GET depends on", async () => {
    const dir = mutated(SERVICE_PROTO, (t) =>
      t.replace(
        /(rpc GetSuggestion\(GetSuggestionRequest\) returns \(GetSuggestionResponse\)) \{\n\s*option idempotency_level = NO_SIDE_EFFECTS;\n\s*\}/,
        "$1;",
      ),
    );
    const { code, out } = await checkBreaking(dir);
    expect(code).not.toBe(0);
    expect(out).toContain(
      'RPC "GetSuggestion" on service "SuggestionService" changed option "idempotency_level" from "NO_SIDE_EFFECTS" to "IDEMPOTENCY_UNKNOWN".',
    );
  });
});
