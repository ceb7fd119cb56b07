import { readdirSync, readFileSync } from "node:fs";

/** How many files (sockets, pipes, files) process `pid` has open: its descriptors. */
export function openFilesOf(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** The TCP state CLOSE-WAIT as /proc/net/tcp writes it: the peer has closed, we have not. */
const CLOSE_WAIT = "08";

/**
 * How many TCP sockets on local `port` are in CLOSE-WAIT, as process `pid`'s network
 * namespace lists them (/proc/<pid>/net/tcp and tcp6): connections whose client has
 * closed and which the service holds open still.
 */
export function closeWaitOn(pid: number, port: number): number {
  let count = 0;
  for (const table of ["tcp", "tcp6"]) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      if (local === undefined || fields[3] !== CLOSE_WAIT) continue;
      if (Number.parseInt(local.split(":")[1] ?? "", 16) === port) count++;
    }
  }
  return count;
}
