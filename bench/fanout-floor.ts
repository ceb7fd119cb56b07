/**
 * The floor of a change reaching many watchers: what node:http2 alone costs to deliver
 * one gRPC message to every stream of a chat, measured with the same generator
 * (bench/fanout-load.ts) and the same changes as the service. It serves
 * WatchSuggestions of one chat on a bare HTTP/2 server, with none of the service's
 * pipeline: on every message of the chat's channel it reads the chat's lists once
 * (the store's `snapshot`, as the service's watch hub does), encodes them once, and
 * writes the same frame to every open stream.
 *
 *   node --import tsx bench/fanout-floor.ts '<json: { port, redisUrl, sessionId }>'
 */
import http2, { type ServerHttp2Stream } from "node:http2";
import { WatchSuggestionsResponseSchema } from "../gen/oda/suggest/v1/suggestion_service_pb.js";
import { subscriberConnection } from "../server/redis/redis-client.js";
import { watchResponseOf } from "../server/rpc/shared-responses.js";
import { sessionKeys } from "../server/store/keys.js";
import { createRedisClient } from "../server/store/scripts.js";
import { SuggestionStore } from "../server/store/suggestion-store.js";
import { frameOf } from "../server/transport/grpc-wire.js";
import { WATCH_SUGGESTIONS_PATH } from "./grpc-frames.js";

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] as string) as {
    port: number;
    redisUrl: string;
    sessionId: string;
  };
  const redis = createRedisClient(config.redisUrl);
  const store = new SuggestionStore(redis);
  const framed = async () =>
    frameOf(
      WatchSuggestionsResponseSchema,
      watchResponseOf((await store.snapshot(config.sessionId)).lists),
    );
  let frame = await framed();
  const streams = new Set<ServerHttp2Stream>();
  const subscriber = subscriberConnection(redis);
  subscriber.on("smessage", () => {
    void framed().then((next) => {
      frame = next;
      for (const stream of streams) stream.write(frame);
    });
  });
  await subscriber.ssubscribe(sessionKeys(config.sessionId).changes);

  const server = http2.createServer({ settings: { maxConcurrentStreams: 1000 } });
  server.on("stream", (stream, headers) => {
    if (headers[":path"] !== WATCH_SUGGESTIONS_PATH) {
      stream.respond({ ":status": 404 }, { endStream: true });
      return;
    }
    stream.on("error", () => {
      // A watcher that resets its stream: nothing to answer.
    });
    stream.on("close", () => streams.delete(stream));
    stream.resume();
    stream.respond({ ":status": 200, "content-type": "application/grpc" });
    stream.write(frame);
    streams.add(stream);
  });
  server.listen(config.port, "127.0.0.1", () => console.log("listening on"));
}

void main();
