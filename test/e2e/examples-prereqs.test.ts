import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { tempDir } from "../support/harness.js";
import { ROOT } from "../support/sdk-consumer.js";

const run = promisify(execFile);
const PYTHON = join(ROOT, "examples/python/run.sh");
const GO = join(ROOT, "examples/go/run.sh");

/** The commands each case relies on being there (examples/install-packages.sh installs them). */
const NEEDED = ["protoc", "grpc_python_plugin", "go", "protoc-gen-go", "protoc-gen-go-grpc"];

/** What a script printed and how it ended. */
interface Outcome {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/*
 * Each example's run.sh, run on its own, first checks what it needs and, when something is
 * missing, says on one line which Debian package provides it, before it generates or builds
 * anything: a command is taken away by a PATH of symlinks to every command but that one, a
 * Python module by a PYTHONPATH folder whose package of that name fails to import.
 */
describe("the examples' run.sh name the package of what is missing", () => {
  const work = tempDir("examples-prereqs");
  let commands: Map<string, string>;

  beforeAll(() => {
    commands = new Map();
    for (const dir of (process.env.PATH ?? "").split(delimiter)) {
      if (dir === "" || !existsSync(dir)) continue;
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (commands.has(name)) continue;
        const stat = statSync(path, { throwIfNoEntry: false });
        if (stat?.isFile() && (stat.mode & 0o111) !== 0) commands.set(name, path);
      }
    }
    const absent = NEEDED.filter((name) => !commands.has(name));
    if (absent.length > 0) {
      throw new Error(`${absent.join(", ")} not on PATH: run examples/install-packages.sh first`);
    }
  });

  afterAll(() => work.remove());

  /** A folder of symlinks to every command on PATH but `without`. */
  function pathWithout(without: string): string {
    const bin = join(work.dir, `bin-without-${without}`);
    if (existsSync(bin)) return bin;
    mkdirSync(bin);
    for (const [name, path] of commands) if (name !== without) symlinkSync(path, join(bin, name));
    return bin;
  }

  /** A PYTHONPATH folder where `import <name>` raises ImportError. */
  function pythonWithout(name: string): string {
    const dir = join(work.dir, `python-without-${name}`);
    mkdirSync(join(dir, name), { recursive: true });
    writeFileSync(join(dir, name, "__init__.py"), `raise ImportError("${name} is hidden")\n`);
    return dir;
  }

  async function runScript(script: string, env: Record<string, string>): Promise<Outcome> {
    const childEnv = { ...process.env, ...env };
    delete childEnv.SUGGEST_TASK_ADDR;
    return run(script, [], { env: childEnv, timeout: 30_000 }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (err: { code: number; stdout: string; stderr: string }) => ({
        code: err.code,
        stdout: err.stdout,
        stderr: err.stderr,
      }),
    );
  }

  /** The Python script with grpc_tools hidden too, so protoc and its plugin are the way. */
  const withoutGrpcTools = () => ({ PYTHONPATH: pythonWithout("grpc_tools") });

  test.each([
    ["protoc", "examples/python: protoc is missing: apt-get install protobuf-compiler"],
    [
      "grpc_python_plugin",
      "examples/python: grpc_python_plugin is missing: apt-get install protobuf-compiler-grpc",
    ],
  ])("examples/python/run.sh without %s", async (command, line) => {
    const outcome = await runScript(PYTHON, { PATH: pathWithout(command), ...withoutGrpcTools() });
    expect(outcome).toEqual({ code: 1, stdout: "", stderr: `${line}\n` });
  });

  test.each([
    ["grpc", "examples/python: the python3 module grpc is missing: apt-get install python3-grpcio"],
    [
      "google",
      "examples/python: the python3 module google.protobuf is missing: apt-get install python3-protobuf",
    ],
  ])("examples/python/run.sh without the python3 module %s", async (module, line) => {
    const outcome = await runScript(PYTHON, { PYTHONPATH: pythonWithout(module) });
    expect(outcome).toEqual({ code: 1, stdout: "", stderr: `${line}\n` });
  });

  test.each([
    ["go", "examples/go: go is missing: apt-get install golang-go"],
    ["protoc", "examples/go: protoc is missing: apt-get install protobuf-compiler"],
    ["protoc-gen-go", "examples/go: protoc-gen-go is missing: apt-get install protoc-gen-go"],
    [
      "protoc-gen-go-grpc",
      "examples/go: protoc-gen-go-grpc is missing: apt-get install protoc-gen-go-grpc",
    ],
  ])("examples/go/run.sh without %s", async (command, line) => {
    const outcome = await runScript(GO, { PATH: pathWithout(command) });
    expect(outcome).toEqual({ code: 1, stdout: "", stderr: `${line}\n` });
  });
});
