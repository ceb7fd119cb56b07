import http from "node:http";
import http2 from "node:http2";
import { Code } from "@connectrpc/connect";
import { describe, expect, test } from "vitest";
import { presentedToken } from "../../server/pipeline/auth.js";
import { useTestServer } from "../support/server-fixture.js";

/*
 * How the bearer token's header is read on each protocol: one comparison
 * (`presentedToken`) of what the HTTP layer hands over, and the one difference the
 * HTTP layers make (RFC 9110 strips the spaces around an HTTP/1.1 value; RFC 9113 makes
 * an HTTP/2 value with them malformed, and Node drops it).
 */

const TOKENS = { app: "app-token-0123456789abc" } as const;
const t = useTestServer({ settings: { authTokens: [{ role: "app", token: TOKENS.app }] } });

describe("the authorization header is read alike over HTTP/1.1 and HTTP/2", () => {
  const LIST = "/oda.suggest.v1.SuggestionService/ListSuggestions";
  const body = JSON.stringify({ sessionId: "s-ws" });
  type Outcome = readonly [status: number, message: string];
  const connectMessage = (text: string) => (text === "" ? "" : (JSON.parse(text).message ?? ""));

  /** Connect JSON over HTTP/1.1: the HTTP status and the error's message. */
  function overH1(authorization: string): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        `${t.server.url}${LIST}`,
        { method: "POST", headers: { "content-type": "application/json", authorization } },
        (res) => {
          let text = "";
          res.on("data", (chunk: Buffer) => {
            text += chunk.toString();
          });
          res.on("end", () =>
            resolve([res.statusCode ?? 0, res.statusCode === 200 ? "" : connectMessage(text)]),
          );
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  }

  /**
   * Over HTTP/2: binary gRPC (the fast path; grpc-status and grpc-message) or Connect JSON
   * (connect-node; the HTTP status and the error's message).
   */
  async function overH2(authorization: string, kind: "grpc" | "connect"): Promise<Outcome> {
    const session = http2.connect(t.server.url);
    try {
      return await new Promise((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": LIST,
          "content-type": kind === "grpc" ? "application/grpc" : "application/json",
          te: "trailers",
          authorization,
        });
        let meta: http2.IncomingHttpHeaders = {};
        let text = "";
        stream.on("response", (h) => {
          meta = { ...meta, ...h };
        });
        stream.on("trailers", (h) => {
          meta = { ...meta, ...h };
        });
        stream.on("data", (chunk: Buffer) => {
          text += chunk.toString();
        });
        stream.on("end", () => {
          if (kind === "grpc") {
            resolve([Number(meta["grpc-status"] ?? -1), String(meta["grpc-message"] ?? "")]);
          } else {
            const status = Number(meta[":status"]);
            resolve([status, status === 200 ? "" : connectMessage(text)]);
          }
        });
        stream.on("error", reject);
        stream.end(
          kind === "grpc" ? Buffer.from([0, 0, 0, 0, 6, 0x0a, 4, 0x73, 0x2d, 0x77, 0x73]) : body,
        );
      });
    } finally {
      session.close();
    }
  }

  const REFUSED = "a valid bearer token is required";
  // [HTTP/1.1 Connect, HTTP/2 Connect, HTTP/2 gRPC (the fast path)]
  const CASES: [string, string, Outcome, Outcome, Outcome][] = [
    ["the exact token", `Bearer ${TOKENS.app}`, [200, ""], [200, ""], [0, ""]],
    // HTTP/1.1's parser takes the trailing space off (RFC 9110 OWS); over HTTP/2 the value
    // makes the request malformed (RFC 9113 section 8.2.1) and Node drops the field.
    [
      "a token with a trailing space",
      `Bearer ${TOKENS.app} `,
      [200, ""],
      [401, REFUSED],
      [Code.Unauthenticated, REFUSED],
    ],
    [
      "a token with a space inside",
      `Bearer ${TOKENS.app.slice(0, 5)} ${TOKENS.app.slice(5)}`,
      [401, REFUSED],
      [401, REFUSED],
      [Code.Unauthenticated, REFUSED],
    ],
  ];

  test.each(CASES)("%s", async (_name, value, h1, h2Connect, h2Grpc) => {
    expect(await overH1(value)).toEqual(h1);
    expect(await overH2(value, "connect")).toEqual(h2Connect);
    expect(await overH2(value, "grpc")).toEqual(h2Grpc);
  });

  test("what each protocol hands over for a trailing space: HTTP/1.1 trims it, HTTP/2 drops the field", async () => {
    const seen = async (server: http.Server | http2.Http2Server, url: (port: number) => string) => {
      const got = new Promise<string | undefined>((resolve) =>
        server.on("request", (req: http.IncomingMessage | http2.Http2ServerRequest, res) => {
          resolve(req.headers.authorization);
          res.end();
        }),
      );
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const port = (server.address() as { port: number }).port;
      if (server instanceof http.Server) {
        http
          .get(url(port), { headers: { authorization: "Bearer tok " } })
          .on("response", (r) => r.resume());
      } else {
        const session = http2.connect(url(port));
        session.request({ ":path": "/", authorization: "Bearer tok " }).resume();
        void got.then(() => session.close());
      }
      const value = await got;
      server.close();
      return value;
    };
    expect(await seen(http.createServer(), (p) => `http://127.0.0.1:${p}/`)).toBe("Bearer tok");
    expect(await seen(http2.createServer(), (p) => `http://127.0.0.1:${p}`)).toBe(undefined);
  });

  test("our comparison is one: the same token of the value either protocol hands over", () => {
    expect(presentedToken(`Bearer ${TOKENS.app}`)).toBe(TOKENS.app);
    expect(presentedToken(`Bearer ${TOKENS.app} `)).toBe(TOKENS.app);
    expect(presentedToken(`\tbearer ${TOKENS.app}\t`)).toBe(TOKENS.app);
    expect(presentedToken("Bearer ab cd")).toBe(undefined);
    expect(presentedToken("Bearer  abcd")).toBe(undefined);
    expect(presentedToken(null)).toBe(undefined);
  });
});
