import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, expect, test } from "vitest";
import { recordsWrites } from "../../server/redis/script-call.js";
import { loadScripts } from "../../server/store/scripts.js";
import { redisClient, tempDir, uniqueId } from "../support/harness.js";

/** The service's scripts folder. */
const LUA = new URL("../../server/store/lua/", import.meta.url);

/** The script loader (server/store/scripts.ts): names, includes and the naming rule. */

let folders: { remove: () => void }[] = [];
afterEach(() => {
  for (const f of folders) f.remove();
  folders = [];
});

/** A scripts folder holding `files` (paths relative to it); answers its URL. */
function scriptsFolder(files: Record<string, string>): URL {
  const folder = tempDir("lua");
  folders.push(folder);
  mkdirSync(join(folder.dir, "includes"));
  for (const [path, text] of Object.entries(files)) writeFileSync(join(folder.dir, path), text);
  return pathToFileURL(`${folder.dir}/`);
}

test("the service's scripts: each named by its file, with its number of keys", () => {
  const scripts = Object.fromEntries(loadScripts().map((s) => [s.name, s.numberOfKeys]));
  // With the announced forms of the six appends that carry an inbox token: two more keys.
  expect(scripts).toEqual({
    offerAnnounced: 5,
    settleAnnounced: 5,
    settleAndReadAnnounced: 5,
    settleStartAnnounced: 7,
    settleStartEmbeddedAnnounced: 11,
    withdrawAnnounced: 5,
    abandonStart: 4,
    announce: 2,
    beginStart: 4,
    createChat: 2,
    extendLock: 1,
    forgetChat: 17,
    inboxChat: 2,
    inboxForget: 4,
    inboxPage: 4,
    inboxPut: 4,
    offer: 3,
    postMessage: 3,
    readLists: 2,
    readSuggestion: 2,
    releaseLock: 2,
    settle: 3,
    settleAndRead: 3,
    settleStart: 5,
    settleStartEmbedded: 9,
    settlements: 2,
    withdraw: 3,
  });
});

test("only the announced forms and settleStartEmbedded span slots: a single Redis runs them alone", () => {
  const spanning = loadScripts()
    .filter((s) => s.singleRedis === true)
    .map((s) => s.name)
    .sort();
  expect(spanning).toEqual([
    "offerAnnounced",
    "settleAndReadAnnounced",
    "settleAnnounced",
    "settleStartAnnounced",
    "settleStartEmbedded",
    "settleStartEmbeddedAnnounced",
    "withdrawAnnounced",
  ]);
});

test("every script that writes, caches included, carries no script flag, so that Redis refuses it whole when out of memory; only the cache-only reads' writes wait for no replica", () => {
  const scripts = loadScripts();
  const flags = Object.fromEntries(
    scripts.map((s) => [s.name, /^#!lua(?:[ \t]+flags=(\S*))?\n/.exec(s.lua)?.[1] ?? ""]),
  );
  expect(Object.entries(flags).filter(([, f]) => f !== "")).toEqual([["inboxPage", "no-writes"]]);
  const cacheOnly = scripts.filter((s) => s.cacheOnly === true).map((s) => s.name);
  expect(cacheOnly.sort()).toEqual(["inboxChat", "readLists", "readSuggestion", "settlements"]);
  for (const script of scripts) {
    expect([script.name, recordsWrites(script.lua, script.cacheOnly)]).toEqual([
      script.name,
      !["inboxPage", ...cacheOnly].includes(script.name),
    ]);
  }
});

test("every script uses exactly the keys its name declares, and has its includes inlined", () => {
  for (const script of loadScripts()) {
    const used = [...script.lua.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1]));
    expect({ name: script.name, keys: Math.max(...used) }).toEqual({
      name: script.name,
      keys: script.numberOfKeys,
    });
    expect(script.lua).not.toMatch(/^--- @(include|script) /m);
  }
});

test("`<name>-<numKeys>.lua` gives the command name and key count; includes are inlined in place", () => {
  const dir = scriptsFolder({
    "addTwo-2.lua": 'local a = 1\n--- @include "shared-bits"\nreturn KEYS[2]\n',
    "includes/shared-bits.lua": "local function shared() return 2 end",
    "notes.txt": "not a script",
  });
  expect(loadScripts(dir)).toEqual([
    {
      name: "addTwo",
      numberOfKeys: 2,
      lua: "local a = 1\nlocal function shared() return 2 end\nreturn KEYS[2]\n",
    },
  ]);
});

test.each(["offer.lua", "offer-x.lua", "offer-3-extra.lua", "read_lists-2.lua", "-2.lua"])(
  "a file named %s is refused with the rule it breaks",
  (file) => {
    const dir = scriptsFolder({ "good-1.lua": "return KEYS[1]", [file]: "return 1" });
    expect(() => loadScripts(dir)).toThrow(`script file ${file} is not named <name>-<numKeys>.lua`);
  },
);

test("`@script` inlines another script's text, with the scripts and includes it inlines", () => {
  const dir = scriptsFolder({
    "inner-1.lua": '--- @include "bit"\nreturn KEYS[1]\n',
    "middle-1.lua": 'local function inner()\n--- @script "inner-1"\nend\n',
    "outer-1.lua": '--- @script "middle-1"\nreturn inner()\n',
    "includes/bit.lua": "local b = 1",
  });
  const outer = loadScripts(dir).find((s) => s.name === "outer");
  expect(outer?.lua).toBe(
    "local function inner()\nlocal b = 1\nreturn KEYS[1]\n\nend\n\nreturn inner()\n",
  );
});

test("an include that does not exist fails the load", () => {
  const dir = scriptsFolder({ "broken-1.lua": '--- @include "missing"\nreturn KEYS[1]' });
  expect(() => loadScripts(dir)).toThrow(/ENOENT/);
});

test("`@announced <i>` adds `<name>Announced`: the announcement, then the script as it is, with the token as its ARGV[i]", async () => {
  const dir = scriptsFolder({
    "echo-2.lua":
      "--[[ echoes ]]\n--- @announced 2\nreturn { #KEYS, KEYS[1], KEYS[2], #ARGV, ARGV[1], ARGV[2], ARGV[3] }\n",
    "includes/announce.lua": readFileSync(new URL("includes/announce.lua", LUA), "utf8"),
  });
  const scripts = loadScripts(dir);
  expect(scripts.map((s) => [s.name, s.numberOfKeys, s.announces])).toEqual([
    ["echo", 2, undefined],
    ["echoAnnounced", 4, "echo"],
  ]);
  const redis = redisClient();
  try {
    for (const s of scripts)
      redis.defineCommand(s.name, { numberOfKeys: s.numberOfKeys, lua: s.lua });
    const chats = uniqueId("chats");
    const pending = uniqueId("pending");
    const call = (redis as unknown as Record<string, (...a: string[]) => Promise<unknown[]>>)
      .echoAnnounced as (...a: string[]) => Promise<unknown[]>;
    const reply = await call.call(redis, "k1", "k2", chats, pending, "a1", "", "a3", "chat-1", "7");
    const token = await redis.hget(chats, "t:chat-1");
    expect(Number(token)).toBeGreaterThan(Date.now() * 1000 - 60_000_000);
    expect(reply).toEqual([2, "k1", "k2", 3, "a1", token, "a3"]);
    expect(await redis.smembers(pending)).toEqual(["chat-1"]);
    expect(await redis.hget(chats, "seq")).toBe(token);
    // The least token is honoured, as by announce-2.lua.
    const above = await call.call(
      redis,
      "k1",
      "k2",
      chats,
      pending,
      "a1",
      "",
      "a3",
      "chat-1",
      "4000000000000000",
    );
    expect(above[5]).toBe("4000000000000000");
  } finally {
    redis.disconnect();
  }
});
