import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { clone, type MessageInitShape } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  ApprovalPolicy,
  ChatHostService,
  type ChatSettingsSchema,
  type CreateChatRequest,
  CreateChatRequestSchema,
  type CreateChatResponse,
  LocalHostService,
  Permission,
  type PostMessageRequest,
  SandboxMode,
} from "../../gen/oda/suggest/v1/chat_host_pb.js";
import { EmbeddedChatHost } from "../../server/host/embedded-host.js";
import type { RedisClient } from "../../server/redis/redis-client.js";
import { createLocalHostService } from "../../server/rpc/host-service.js";
import { redisClient } from "./harness.js";

/** What a preset gives a chat for the settings its request leaves unset. */
export type PresetDefaults = Omit<MessageInitShape<typeof ChatSettingsSchema>, "$typeName">;

/** Hooks a test sets to stall or fail the host at a chosen moment. */
export interface TestHostHooks {
  /** Runs before the chat is created. */
  beforeCreateChat?: ((request: CreateChatRequest) => Promise<void>) | undefined;
  /** Runs after the chat is created, before the answer goes back. */
  afterCreateChat?:
    | ((request: CreateChatRequest, response: CreateChatResponse) => Promise<void>)
    | undefined;
  /** Runs before the message is posted. */
  beforePostMessage?: ((request: PostMessageRequest) => Promise<void>) | undefined;
}

/**
 * A chat host of a test's own, reached over gRPC like a remote one (`CHAT_HOST_URL`):
 * the embedded host on Redis, served by a separate HTTP/2 server in this process, that
 * records what the service asked, can be stalled or failed through hooks, and resolves
 * presets the way a real host does (a preset fills only the settings a request leaves
 * unset).
 */
export interface TestHost {
  readonly url: string;
  /** The embedded host behind it, for putting sessions and reading chats directly. */
  readonly host: EmbeddedChatHost;
  readonly redis: RedisClient;
  readonly hooks: TestHostHooks;
  /** The CreateChat and PostMessage requests received, in order. */
  readonly calls: { createChat: CreateChatRequest[]; postMessage: PostMessageRequest[] };
  close(): Promise<void>;
}

/** The presets the test host knows: one that defaults to full access. */
export const TEST_PRESETS: Readonly<Record<string, PresetDefaults>> = {
  autopilot: {
    model: "preset-model",
    permission: Permission.FULL_ACCESS,
    sandbox: SandboxMode.FULL_ACCESS,
    approval: ApprovalPolicy.NEVER,
  },
};

/** Starts a test host on `redisUrl`, listening on a free port. */
export async function startTestHost(redisUrl?: string): Promise<TestHost> {
  const redis = redisClient(redisUrl);
  const host = new EmbeddedChatHost(redis);
  const hooks: TestHostHooks = {};
  const calls: TestHost["calls"] = { createChat: [], postMessage: [] };
  const routes = (router: ConnectRouter) => {
    router.service(ChatHostService, {
      getSession: (request) => host.getSession(request),
      async createChat(request) {
        calls.createChat.push(request);
        await hooks.beforeCreateChat?.(request);
        const resolved = clone(CreateChatRequestSchema, request);
        const preset = TEST_PRESETS[resolved.settings?.presetId ?? ""];
        if (resolved.settings !== undefined && preset !== undefined) {
          const s = resolved.settings;
          s.model ||= preset.model ?? "";
          s.permission ||= preset.permission ?? Permission.UNSPECIFIED;
          s.sandbox ||= preset.sandbox ?? SandboxMode.UNSPECIFIED;
          s.approval ||= preset.approval ?? ApprovalPolicy.UNSPECIFIED;
        }
        const response = await host.createChat(resolved);
        await hooks.afterCreateChat?.(request, response);
        return response;
      },
      async postMessage(request) {
        calls.postMessage.push(request);
        await hooks.beforePostMessage?.(request);
        return host.postMessage(request);
      },
    });
    router.service(LocalHostService, createLocalHostService(host));
  };
  const server = http2.createServer(connectNodeAdapter({ routes }));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    host,
    redis,
    hooks,
    calls,
    close: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const session of sessions) session.destroy();
      await closed;
      redis.disconnect();
    },
  };
}

/** A promise with its resolve function outside, for hooks that wait on the test. */
export function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
