import { createSuggestionClient } from "@oda/suggest-task/node";

export const baseUrl = process.env.SUGGEST_URL ?? "http://127.0.0.1:8080";

export const client = createSuggestionClient({
  baseUrl,
  protocol: "grpc", // the default; or "connect" or "grpc-web"
  token: process.env.SUGGEST_TOKEN, // optional: sent as `authorization: Bearer <token>`
});
