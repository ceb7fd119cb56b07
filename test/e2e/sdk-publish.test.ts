import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SuggestionState } from "../../gen/oda/suggest/v1/suggestion_pb.js";
import { tempDir, uniqueId } from "../support/harness.js";
import { type NpmRegistry, startNpmRegistry } from "../support/npm-registry.js";
import { installedVersion, ROOT } from "../support/sdk-consumer.js";
import { useTestServer } from "../support/server-fixture.js";

const run = promisify(execFile);
const SDK = join(ROOT, "sdk");
const sdkManifest = JSON.parse(readFileSync(join(SDK, "package.json"), "utf8"));
const CHECK_EXPORTS = join(ROOT, "tools/check-package-exports.mjs");

/** What `npm pack --json` says of the tarball it wrote. */
interface Packed {
  readonly filename: string;
  readonly integrity: string;
  readonly shasum: string;
  readonly version: string;
}

/** The strings under a package.json field: the files it names. */
function leaves(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(leaves);
  return [];
}

/**
 * A user's program, run from the clean project with the package installed by name: it puts
 * a chat on the embedded host, offers a task through the SDK's client, and reads it back.
 */
const CONSUMER = `
import { AgentRole, createLocalHostClient, createSuggestionClient, SuggestionState } from "@oda/suggest-task/node";

const baseUrl = process.env.BASE_URL;
const sessionId = process.env.SESSION_ID;
await createLocalHostClient({ baseUrl }).putSession({ session: { sessionId, workspaceId: "ws-registry" } });
const client = createSuggestionClient({ baseUrl });
const offered = await client.suggestTask({
  context: { sessionId, turnId: "turn-1", role: AgentRole.TOP_LEVEL, toolCallId: "call-1" },
  args: { title: "Ship it from a registry", tldr: "Installed by name", brief: "Publish, install, call." },
});
const { suggestion } = await client.getSuggestion({ sessionId, suggestionId: offered.suggestion.id });
console.log(JSON.stringify({
  loadedFrom: import.meta.resolve("@oda/suggest-task/node"),
  result: offered.result,
  id: suggestion.id,
  title: suggestion.title,
  state: SuggestionState[suggestion.state],
}));
`;

/*
 * The SDK as a user gets it: `npm publish` of the packed sdk/ to a registry (verdaccio of the
 * test's own), then `npm install @oda/suggest-task` by name in a clean project whose .npmrc
 * sends only the @oda scope there (the connect-es peers come from the registry the machine
 * is set up with), and a call to a running service with what was installed.
 */
describe("@oda/suggest-task published to a registry and installed by name", () => {
  const t = useTestServer();
  const work = tempDir("sdk-publish");
  const consumer = join(work.dir, "consumer");
  let registry: NpmRegistry | undefined;
  let packed: Packed;
  let tarball: string;
  let published: string;

  beforeAll(async () => {
    // Building and packing (prepack) takes longest; the registry starts meanwhile.
    const [started, pack] = await Promise.all([
      startNpmRegistry(join(work.dir, "registry")),
      run("npm", ["pack", "--json", "--pack-destination", work.dir], { cwd: SDK }),
    ]);
    registry = started;
    [packed] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf("[")));
    tarball = join(work.dir, packed.filename);

    // The tarball that was packed is the one published: no script runs again.
    const publish = await run(
      "npm",
      [
        "publish",
        tarball,
        "--registry",
        `${registry.url}/`,
        "--userconfig",
        registry.userconfig,
        "--ignore-scripts",
      ],
      { cwd: work.dir },
    );
    published = publish.stdout;

    mkdirSync(consumer);
    writeFileSync(
      join(consumer, "package.json"),
      JSON.stringify({ name: "consumer", private: true, type: "module" }),
    );
    writeFileSync(join(consumer, ".npmrc"), `@oda:registry=${registry.url}/\n`);
    writeFileSync(join(consumer, "main.mjs"), CONSUMER);
    // By name; the peers at the versions this repository runs (the newest connect-node needs
    // Node 22). No --prefer-offline: a cached listing of an earlier run's registry on the
    // same port would name another tarball. The lock keeps each package's URL (a machine's
    // npm config may leave registry URLs out of locks), which the test reads.
    const peers = ["@bufbuild/protobuf", "@connectrpc/connect", "@connectrpc/connect-node"];
    await run(
      "npm",
      [
        "install",
        "@oda/suggest-task",
        ...peers.map((name) => `${name}@${installedVersion(name)}`),
        "--no-audit",
        "--no-fund",
        "--ignore-scripts",
        "--no-omit-lockfile-registry-resolved",
      ],
      { cwd: consumer },
    );
  }, 180_000);

  afterAll(async () => {
    await registry?.stop();
    work.remove();
  });

  test("the tarball holds every file its package.json's exports names", async () => {
    const { stdout } = await run(process.execPath, [CHECK_EXPORTS, tarball]);
    const m = sdkManifest;
    const named = [m.exports, m.main, m.types, m.typesVersions, m.bin].flatMap(leaves).length;
    expect(named).toBeGreaterThan(10);
    expect(stdout).toBe(
      `check-package-exports: all ${named} paths package.json names are in @oda/suggest-task@${packed.version}'s tarball\n`,
    );
  });

  test("the check fails, naming the file, when an export's file is not in the tarball", async () => {
    const copy = join(work.dir, "broken");
    mkdirSync(copy);
    await run("tar", ["-xzf", tarball, "-C", copy]);
    const manifestPath = join(copy, "package/package.json");
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
    manifest.exports["./mcp"] = { import: "./dist/esm/sdk/src/mcp.js" };
    writeFileSync(manifestPath, JSON.stringify(manifest));
    const broken = join(work.dir, "broken.tgz");
    await run("tar", ["-czf", broken, "-C", copy, "package"]);
    const failed = await run(process.execPath, [CHECK_EXPORTS, broken]).then(
      () => undefined,
      (err: { code: number; stderr: string }) => err,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toBe(
      `check-package-exports: ./dist/esm/sdk/src/mcp.js (exports["./mcp"]["import"]) is not in @oda/suggest-task@${packed.version}'s tarball\n`,
    );
  });

  test("npm publish puts the packed bytes on the registry under sdk/package.json's version", async () => {
    expect(packed.version).toBe(sdkManifest.version);
    expect(sdkManifest.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(published).toContain(`+ @oda/suggest-task@${packed.version}`);
    const res = await fetch(`${registry?.url}/@oda%2fsuggest-task`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      "dist-tags": Record<string, string>;
      versions: Record<string, { dist: { integrity: string; shasum: string } }>;
    };
    expect(doc["dist-tags"]).toEqual({ latest: packed.version });
    expect(Object.keys(doc.versions)).toEqual([packed.version]);
    expect(doc.versions[packed.version]?.dist.integrity).toBe(packed.integrity);
    expect(doc.versions[packed.version]?.dist.shasum).toBe(packed.shasum);
  });

  test("the clean project got @oda/suggest-task from that registry and connect-es from the usual one", async () => {
    const lock = JSON.parse(readFileSync(join(consumer, "package-lock.json"), "utf8")) as {
      packages: Record<string, { version?: string; resolved?: string; integrity?: string }>;
    };
    const sdk = lock.packages["node_modules/@oda/suggest-task"];
    expect(sdk?.version).toBe(packed.version);
    expect(sdk?.resolved).toBe(
      `${registry?.url}/@oda/suggest-task/-/suggest-task-${packed.version}.tgz`,
    );
    expect(sdk?.integrity).toBe(packed.integrity);
    const { stdout } = await run("npm", ["config", "get", "registry"], { cwd: consumer });
    const usual = stdout.trim();
    expect(usual.startsWith(registry?.url ?? "")).toBe(false);
    for (const name of ["@bufbuild/protobuf", "@connectrpc/connect", "@connectrpc/connect-node"]) {
      const entry = lock.packages[`node_modules/${name}`];
      expect(entry?.version, name).toBe(installedVersion(name));
      expect(entry?.resolved?.startsWith(usual), `${name} from ${entry?.resolved}`).toBe(true);
    }
  });

  test("the installed package offers a task to the running service and reads it back", async () => {
    const sessionId = uniqueId("registry");
    const { stdout } = await run(process.execPath, ["main.mjs"], {
      cwd: consumer,
      env: { ...process.env, BASE_URL: t.url, SESSION_ID: sessionId },
    });
    const out = JSON.parse(stdout);
    expect(out.loadedFrom).toBe(
      `file://${consumer}/node_modules/@oda/suggest-task/dist/esm/sdk/src/node.js`,
    );
    expect(out.result).toBe(
      'Suggested "Ship it from a registry". The user decides whether to start it; do not start it yourself.',
    );
    expect(out).toMatchObject({ title: "Ship it from a registry", state: "OPEN" });
    // What the service recorded, read with the repository's own client.
    const { suggestion } = await t.clients.suggestions.getSuggestion({
      sessionId,
      suggestionId: out.id,
    });
    expect(suggestion?.title).toBe("Ship it from a registry");
    expect(suggestion?.state).toBe(SuggestionState.OPEN);
  });
});
