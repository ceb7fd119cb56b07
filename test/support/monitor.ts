import { connect, type Socket } from "node:net";

/** One command as Redis's MONITOR reported it. */
export interface MonitoredCommand {
  /** `ip:port` of the client that sent it, or `lua` for a command a script ran. */
  readonly source: string;
  /** The command name (lowercased) and its arguments, byte for byte. */
  readonly name: string;
  readonly args: readonly Buffer[];
}

/** A MONITOR connection collecting every command a Redis runs, until stopped. */
export interface Monitor {
  readonly commands: readonly MonitoredCommand[];
  /** Waits until a command that satisfies `test` was seen (the stream lags a little). */
  seen(test: (c: MonitoredCommand) => boolean, timeoutMs?: number): Promise<void>;
  /** Closes the connection; answers every command seen. */
  stop(): Promise<readonly MonitoredCommand[]>;
}

const ESCAPES: Readonly<Record<string, number>> = {
  n: 10,
  r: 13,
  t: 9,
  a: 7,
  b: 8,
  '"': 34,
  "\\": 92,
};

/**
 * Reads the quoted arguments of a MONITOR line, undoing Redis's escaping (`\"`, `\\`,
 * `\n`, `\xHH`, ...) so that binary arguments come back exact. ioredis's own `monitor`
 * splits on `" "`, which a binary argument can contain.
 */
export function parseMonitorLine(line: string): MonitoredCommand | undefined {
  const head = /^\d+\.\d+ \[\d+ ([^\]]+)\] /.exec(line);
  if (head === null) return undefined;
  const args: Buffer[] = [];
  let i = head[0].length;
  while (i < line.length) {
    if (line[i] !== '"') throw new Error(`unexpected MONITOR line: ${line}`);
    const bytes: number[] = [];
    i++;
    while (line[i] !== '"') {
      if (i >= line.length) throw new Error(`unterminated MONITOR argument: ${line}`);
      if (line[i] === "\\") {
        const e = line[i + 1] as string;
        if (e === "x") {
          bytes.push(Number.parseInt(line.slice(i + 2, i + 4), 16));
          i += 4;
        } else {
          bytes.push(ESCAPES[e] ?? e.charCodeAt(0));
          i += 2;
        }
      } else {
        bytes.push(line.charCodeAt(i));
        i++;
      }
    }
    args.push(Buffer.from(bytes));
    i += 2; // the closing quote and the space after it
  }
  const [name, ...rest] = args;
  if (name === undefined) return undefined;
  return { source: head[1] as string, name: name.toString().toLowerCase(), args: rest };
}

/** Opens a MONITOR connection to the Redis on `port`; resolves once it is monitoring. */
export async function startMonitor(port: number): Promise<Monitor> {
  const commands: MonitoredCommand[] = [];
  const socket: Socket = connect({ host: "127.0.0.1", port });
  socket.setEncoding("latin1");
  let buffered = "";
  let onOk: (() => void) | undefined;
  socket.on("data", (chunk: string) => {
    buffered += chunk;
    let end = buffered.indexOf("\r\n");
    while (end >= 0) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      if (line === "+OK") onOk?.();
      else if (line.startsWith("+")) {
        const command = parseMonitorLine(line.slice(1));
        if (command !== undefined) commands.push(command);
      }
      end = buffered.indexOf("\r\n");
    }
  });
  await new Promise<void>((resolve, reject) => {
    onOk = resolve;
    socket.once("error", reject);
    socket.write("MONITOR\r\n");
  });
  return {
    commands,
    async seen(test, timeoutMs = 5_000) {
      const until = Date.now() + timeoutMs;
      while (!commands.some(test)) {
        if (Date.now() > until) throw new Error("MONITOR never showed the command awaited");
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async stop() {
      await new Promise<void>((resolve) => socket.end(resolve));
      socket.destroy();
      return commands;
    },
  };
}
