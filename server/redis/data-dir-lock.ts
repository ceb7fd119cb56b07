import {
  lstatSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { PRIVATE_STORE_SERVERS } from "./redis-server-process.js";

/** The lock file inside a data folder: who uses it. */
const LOCK_FILE = "owner.lock";

/** The processes that use a data folder: the service and, once started, its redis-server. */
interface Owner {
  readonly pid: number;
  readonly redisPid?: number;
}

/** A data folder that cannot be used: not a folder, or in use by a live process. */
export class DataDirError extends Error {
  override name = "DataDirError";
  constructor(
    message: string,
    /** The live process that holds it, when that is the reason. */
    readonly holder?: { readonly pid: number; readonly what: "service" | "redis-server" },
  ) {
    super(message);
  }
}

/** A held data folder lock. */
export interface DataDirLock {
  /** Records the private redis-server's pid, so that a lock left by a crash names it. */
  noteRedis(pid: number): void;
  /** Removes the lock file (only if it is still this process's). */
  release(): void;
}

/**
 * Makes `dir` (and its parents) and takes it for this process: a lock file made with
 * O_EXCL holds this pid and later the private redis-server's. A lock whose processes
 * are all gone (a kill -9) is taken over; one with a live process throws a DataDirError
 * naming it. Two services on one folder would both append to one AOF and corrupt it.
 */
export function lockDataDir(dir: string): DataDirLock {
  ensureFolder(dir);
  const file = join(dir, LOCK_FILE);
  const mine: Owner = { pid: process.pid };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, JSON.stringify(mine), { flag: "wx" });
      return held(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const owner = readOwner(file);
    if (owner === undefined && Date.now() - mtimeOf(file) < 2_000) {
      throw new DataDirError("is being locked by another process just now");
    }
    if (owner !== undefined && alive(owner.pid)) {
      throw new DataDirError(`is in use by process ${owner.pid}`, {
        pid: owner.pid,
        what: "service",
      });
    }
    if (owner?.redisPid !== undefined && alive(owner.redisPid)) {
      throw new DataDirError(
        `is in use by ${serverName(owner.redisPid) ?? "redis-server"} process ${owner.redisPid}, left running by process ${owner.pid}, which is gone`,
        { pid: owner.redisPid, what: "redis-server" },
      );
    }
    // Stale (its owner was killed): take it over.
    rmSync(file, { force: true });
  }
  throw new DataDirError("could not be locked (another process keeps taking its lock)");
}

/**
 * After a crash of the service (kill -9, a lost process): when `dir`'s lock names a
 * service that is gone and a redis-server that still runs, and that process is the
 * private redis-server of `redisDir` (`isPrivateRedis`), stops it cleanly (SIGTERM,
 * which Redis handles as SHUTDOWN: its AOF, fsynced at every write, keeps every
 * acknowledged one) and waits up to `waitMs` for it to exit. Answers the one line to log,
 * or undefined when there was nothing to take over. Any other live process is left
 * alone (`lockDataDir` then names it).
 */
export async function stopLeftRedis(
  dir: string,
  redisDir: string,
  socket: string | undefined,
  waitMs = 8_000,
): Promise<string | undefined> {
  const owner = readOwner(join(dir, LOCK_FILE));
  if (owner?.redisPid === undefined || alive(owner.pid) || !alive(owner.redisPid)) {
    return undefined;
  }
  const pid = owner.redisPid;
  const name = privateStoreName(pid, redisDir, socket);
  if (name === undefined) return undefined;
  process.kill(pid, "SIGTERM");
  const until = Date.now() + waitMs;
  while (alive(pid)) {
    if (Date.now() > until) {
      throw new DataDirError(
        `holds ${name} process ${pid}, left running by process ${owner.pid}, which is gone, and it did not stop within ${waitMs} ms`,
        { pid, what: "redis-server" },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return `took over ${dir}: stopped ${name} process ${pid} (clean shutdown, AOF kept) left running by process ${owner.pid}, which is gone`;
}

/**
 * The name of `pid` when it is a private store's server (`redis-server`, `valkey-server`)
 * working in `redisDir` (the server changes to its `--dir`, and rewrites its command
 * line, so its name and its working folder tell), with its socket in place when it has
 * one; undefined when it is not.
 */
function privateStoreName(
  pid: number,
  redisDir: string,
  socket: string | undefined,
): string | undefined {
  try {
    const name = serverName(pid);
    if (name === undefined) return undefined;
    if (realpathSync(`/proc/${pid}/cwd`) !== realpathSync(redisDir)) return undefined;
    return socket === undefined || lstatSync(socket).isSocket() ? name : undefined;
  } catch {
    return undefined;
  }
}

/** The process name of `pid` when it is one of PRIVATE_STORE_SERVERS, else undefined. */
function serverName(pid: number): string | undefined {
  try {
    const comm = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
    return (PRIVATE_STORE_SERVERS as readonly string[]).includes(comm) ? comm : undefined;
  } catch {
    return undefined;
  }
}

function held(file: string): DataDirLock {
  let owner: Owner = { pid: process.pid };
  return {
    noteRedis(redisPid) {
      owner = { ...owner, redisPid };
      writeFileSync(file, JSON.stringify(owner));
    },
    release() {
      if (readOwner(file)?.pid === process.pid) rmSync(file, { force: true });
    },
  };
}

function ensureFolder(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST" || code === "ENOTDIR") throw new DataDirError("must be a folder");
    throw new DataDirError(`cannot be made (${code ?? String(err)})`);
  }
  if (!statSync(dir).isDirectory()) throw new DataDirError("must be a folder");
}

/** When the file was last written, in ms since the epoch; 0 when it is gone. */
function mtimeOf(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

/** The lock file's owner; undefined when it is unreadable (gone, or half written). */
function readOwner(file: string): Owner | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as Partial<Owner>;
    return typeof parsed.pid === "number" ? (parsed as Owner) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True when a process with this pid exists (EPERM: it exists, owned by someone else).
 * This process's own pid in a lock it has not taken yet is an earlier process's (a
 * container whose service is always pid 1): gone. So is a zombie (exited, not reaped).
 */
function alive(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  return !zombie(pid);
}

/** True for a process that has exited but was not reaped yet (Linux: state Z). */
function zombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}
