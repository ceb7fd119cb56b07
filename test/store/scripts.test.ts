import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, expect, test } from "vitest";
import { recordsWrites } from "../../server/redis/script-call.js";
import { loadScripts } from "../../server/store/scripts.js";
import { tempDir } from "../support/harness.js";

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
  expect(scripts).toEqual({
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
    settlements: 2,
    withdraw: 3,
  });
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

test("an include may include others, inlined in its place, as includes/projection.lua gathers its parts", () => {
  const dir = scriptsFolder({
    "outer-1.lua": '--- @include "hub"\nreturn KEYS[1]\n',
    "includes/hub.lua": '-- hub\n--- @include "first"\n--- @include "second"\n',
    "includes/first.lua": "local a = 1",
    "includes/second.lua": "local b = a",
  });
  expect(loadScripts(dir)[0]?.lua).toBe("-- hub\nlocal a = 1\nlocal b = a\n\nreturn KEYS[1]\n");
});

test("includes that include each other without end fail the load", () => {
  const dir = scriptsFolder({
    "loop-1.lua": '--- @include "me"\nreturn KEYS[1]\n',
    "includes/me.lua": '--- @include "me"\n',
  });
  expect(() => loadScripts(dir)).toThrow("includes include each other more than 4 deep");
});

test("an include that does not exist fails the load", () => {
  const dir = scriptsFolder({ "broken-1.lua": '--- @include "missing"\nreturn KEYS[1]' });
  expect(() => loadScripts(dir)).toThrow(/ENOENT/);
});
