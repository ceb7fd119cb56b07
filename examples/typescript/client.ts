import { createSuggestionClient } from "@oda/suggest-task/node";

/** The service: SUGGEST_URL, else where `npm start` listens. */
export const baseUrl = process.env.SUGGEST_URL ?? "http://127.0.0.1:8080";

/** A typed SuggestionService client; failures carrying details are the SDK's typed errors. */
export const client = createSuggestionClient({
  baseUrl,
  protocol: "grpc", // the default; or "connect" or "grpc-web"
  token: process.env.SUGGEST_TOKEN, // optional: sent as `authorization: Bearer <token>`
});
