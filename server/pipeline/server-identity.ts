import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type DescFile, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { file_oda_suggest_v1_chat_host } from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { file_oda_suggest_v1_suggestion } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { file_oda_suggest_v1_suggestion_service } from "../../gen/oda/suggest/v1/suggestion_service_pb.js";
import { file_oda_suggest_v1_tool_options } from "../../gen/oda/suggest/v1/tool_options_pb.js";

/** The headers on every RPC's answer that name what answered it. */
export const VERSION_HEADER = "suggest-task-version";
export const CONTRACT_HEADER = "suggest-task-contract";

/** The contract's files, as this build was generated from them. */
const CONTRACT_FILES: readonly DescFile[] = [
  file_oda_suggest_v1_chat_host,
  file_oda_suggest_v1_suggestion,
  file_oda_suggest_v1_suggestion_service,
  file_oda_suggest_v1_tool_options,
];

/**
 * What a client reads to know what it talks to, as headers of every RPC's answer (every
 * protocol, errors too): `suggest-task-version`, the service's release (package.json's
 * `version`), and `suggest-task-contract`, `oda.suggest.v1@` and the first 12 hex digits
 * of a SHA-256 of the contract's descriptors. The revision changes with anything that
 * reaches the wire (a message, a field, an RPC, an option) and not with comments.
 * Pinned by test/e2e/server-identity.test.ts.
 */
export function serverIdentityHeaders(): Readonly<Record<string, string>> {
  return Object.freeze({
    [VERSION_HEADER]: packageVersion(),
    [CONTRACT_HEADER]: `oda.suggest.v1@${contractRevision()}`,
  });
}

/** The contract's revision: a digest of its files' descriptors, in name order. */
export function contractRevision(): string {
  const hash = createHash("sha256");
  const files = [...CONTRACT_FILES].sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const file of files) hash.update(toBinary(FileDescriptorProtoSchema, file.proto));
  return hash.digest("hex").slice(0, 12);
}

/** The `version` of the service's package.json, found above this module (sources or dist/). */
function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === "suggest-task" && typeof pkg.version === "string") return pkg.version;
    } catch {
      // No package.json here: look further up.
    }
    const up = dirname(dir);
    if (up === dir) return "unknown";
    dir = up;
  }
}
