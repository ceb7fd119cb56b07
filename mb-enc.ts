import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { SuggestTaskResponseSchema } from "./gen/oda/suggest/v1/suggestion_service_pb.js";
import { encodeBinary } from "./server/codec/binary-encoding.js";
const m = create(SuggestTaskResponseSchema, {
  suggestion: { id: "5b1f1c9e-7a8b-4c2d-9e0f-123456789abc", sessionId: "bench-sess-1", turnId: "run1-t1",
    title: "Add a retry to the uploader", tldr: "Uploads fail on flaky networks",
    brief: "Find where uploads fail and retry them with backoff.", offeredAt: timestampFromMs(Date.now()), workspaceId: "bench-ws", state: 1 } as never,
  result: "Suggested \"Add a retry to the uploader\". The user can start it from the suggestion card.",
});
for (let r = 0; r < 5; r++) { const t = process.hrtime.bigint(); for (let k = 0; k < 300000; k++) encodeBinary(SuggestTaskResponseSchema, m, 5); console.log((Number(process.hrtime.bigint() - t) / 300000).toFixed(0), "ns"); }
