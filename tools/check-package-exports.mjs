// Checks that a packed npm tarball holds every file its package.json names: each target of
// `exports` (every condition, every subpath), `main`, `types`, `module`, the paths of
// `typesVersions` and the scripts of `bin`. publint and attw read the same fields but judge their shape; this one
// asks only whether each named file is in the tarball, so a subpath added to `exports`
// without its files in `files` (or without building it) is caught before a release.
//
//   node tools/check-package-exports.mjs path/to/package.tgz
//
// Prints one line per missing file and exits 1; prints one line and exits 0 when all are there.
import { execFileSync } from "node:child_process";

const tarball = process.argv[2];
if (tarball === undefined) {
  console.error("usage: node tools/check-package-exports.mjs <package.tgz>");
  process.exit(2);
}

// npm packs everything under package/; tar lists files (not folders) as given.
const entries = new Set(
  execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.startsWith("package/") && !line.endsWith("/"))
    .map((line) => line.slice("package/".length)),
);
const manifest = JSON.parse(
  execFileSync("tar", ["-xzOf", tarball, "package/package.json"], { encoding: "utf8" }),
);

/** Every string target under a field, with where it was found (e.g. exports["./node"].import.types). */
function targets(value, where) {
  if (typeof value === "string") return [{ path: value, where }];
  if (Array.isArray(value)) return value.flatMap((v, i) => targets(v, `${where}[${i}]`));
  if (value !== null && typeof value === "object") {
    return Object.entries(value).flatMap(([key, v]) =>
      targets(v, `${where}[${JSON.stringify(key)}]`),
    );
  }
  return []; // null: a subpath the package hides on purpose
}

const named = [
  ...targets(manifest.exports, "exports"),
  ...["main", "types", "typings", "module"].flatMap((field) => targets(manifest[field], field)),
  ...targets(manifest.typesVersions, "typesVersions"),
  ...targets(manifest.bin, "bin"),
];

/** Whether a target (`./dist/x.js`, or a pattern with one `*`) names a file of the tarball. */
function present(path) {
  const relative = path.replace(/^\.\//, "");
  if (!relative.includes("*")) return entries.has(relative);
  const [head, tail] = relative.split("*");
  return [...entries].some(
    (e) => e.startsWith(head) && e.endsWith(tail) && e.length > head.length + tail.length,
  );
}

const missing = named.filter((t) => !present(t.path));
for (const t of missing) {
  console.error(
    `check-package-exports: ${t.path} (${t.where}) is not in ${manifest.name}@${manifest.version}'s tarball`,
  );
}
if (missing.length > 0) process.exit(1);
console.log(
  `check-package-exports: all ${named.length} paths package.json names are in ${manifest.name}@${manifest.version}'s tarball`,
);
