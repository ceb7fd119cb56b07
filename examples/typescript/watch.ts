import { Code, ConnectError } from "@connectrpc/connect";
import { client } from "./client.js";

const sessionId = process.argv[2] ?? "chat-1";
const watching = new AbortController();
process.once("SIGINT", () => watching.abort()); // Ctrl-C ends the watch

try {
  const lists = client.watchSuggestions({ sessionId }, { signal: watching.signal });
  for await (const { open, settled } of lists) {
    console.log(`${open.length} open, ${settled.length} settled`); // at once, then on every change
  }
} catch (err) {
  // Aborting your own signal rejects with Code.Canceled, as on every connect-es call: not a failure.
  const mine = watching.signal.aborted && err instanceof ConnectError && err.code === Code.Canceled;
  if (!mine) throw err;
}
console.log("stopped watching");
