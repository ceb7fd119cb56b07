/**
 * The baselines: a noop unary call (grpc.health.v1.Health/Check answering SERVING at
 * once) served by the same stack as the service, so that every figure of the benchmark
 * is read as a ratio to what the framework alone costs on this machine, this minute.
 *
 *   node --import tsx bench/noop-server.ts connect|grpc-js <port>
 */
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponse_ServingStatus,
  HealthCheckResponseSchema,
} from "../gen/grpc/health/v1/health_pb.js";

const [kind, portArg] = process.argv.slice(2);
const port = Number(portArg);
const serving = create(HealthCheckResponseSchema, {
  status: HealthCheckResponse_ServingStatus.SERVING,
});

if (kind === "connect") {
  // connect-node's default adapter on a plain h2c server: the baseline connect-node's own cost is read against.
  const handler = connectNodeAdapter({
    routes: (router) =>
      router.service(Health, {
        check: () => serving,
        async *watch() {},
      }),
  });
  http2.createServer(handler).listen(port, "127.0.0.1", () => console.log("ready"));
} else if (kind === "grpc-js") {
  const server = new grpc.Server();
  server.addService(
    {
      check: {
        path: "/grpc.health.v1.Health/Check",
        requestStream: false,
        responseStream: false,
        requestSerialize: (m: unknown) =>
          Buffer.from(toBinary(HealthCheckRequestSchema, m as never)),
        requestDeserialize: (b: Buffer) => fromBinary(HealthCheckRequestSchema, b),
        responseSerialize: (m: unknown) =>
          Buffer.from(toBinary(HealthCheckResponseSchema, m as never)),
        responseDeserialize: (b: Buffer) => fromBinary(HealthCheckResponseSchema, b),
      },
    },
    {
      check: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(null, serving),
    },
  );
  server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => {
    if (err) throw err;
    console.log("ready");
  });
} else {
  throw new Error(`unknown baseline ${kind}`);
}
