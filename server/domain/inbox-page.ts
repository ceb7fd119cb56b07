import { Code, ConnectError } from "@connectrpc/connect";

/** ListWorkspaceSuggestions answers this many suggestions when `page_size` is 0. */
export const INBOX_PAGE_SIZE_DEFAULT = 50;

/** ListWorkspaceSuggestions never answers more than this many; a larger page_size is capped. */
export const INBOX_PAGE_SIZE_MAX = 500;

/** An offer's place in a workspace's inbox, ordered as the inbox lists it (newest first). */
const MEMBER_PATTERN = /^\d{16}\|[A-Za-z0-9._:-]{1,128}\|\d{10}$/;

const TIME_DIGITS = 16;
const POSITION_DIGITS = 10;

/**
 * The inbox's order as a string: `<offered_at ms, 16 digits>|<session id>|<place in the
 * chat's offer order, 10 digits>`. Newest offer first is the reverse of this string's
 * order: by offer time, then by session id, then later offers of one chat first (as
 * its own open list has them). Unique per offer, so it is also the page cursor.
 */
export function inboxMember(offeredAtMs: number, sessionId: string, position: number): string {
  const ms = Math.min(Math.max(0, Math.trunc(offeredAtMs)), 10 ** TIME_DIGITS - 1);
  return `${String(ms).padStart(TIME_DIGITS, "0")}|${sessionId}|${String(position).padStart(POSITION_DIGITS, "0")}`;
}

/** The session a member names. */
export function sessionOfMember(member: string): string {
  return member.slice(TIME_DIGITS + 1, member.length - POSITION_DIGITS - 1);
}

/**
 * The page size to answer: 0 is the default (50), more than the maximum (500) is
 * capped, a negative size is INVALID_ARGUMENT (AIP-158).
 */
export function inboxPageSize(requested: number): number {
  if (requested < 0) {
    throw new ConnectError("page_size must not be negative", Code.InvalidArgument);
  }
  if (requested === 0) return INBOX_PAGE_SIZE_DEFAULT;
  return Math.min(requested, INBOX_PAGE_SIZE_MAX);
}

const TOKEN_PREFIX = "v1|";

/** The opaque next_page_token after `member`: base64url, so callers do not build one. */
export function encodePageToken(member: string): string {
  return Buffer.from(TOKEN_PREFIX + member, "utf8").toString("base64url");
}

/**
 * The member a page_token names; empty for the first page. A token this service did not
 * make is INVALID_ARGUMENT, checked before Redis is touched.
 */
export function decodePageToken(token: string): string {
  if (token === "") return "";
  const text = /^[A-Za-z0-9_-]{1,400}$/.test(token)
    ? Buffer.from(token, "base64url").toString("utf8")
    : "";
  const member = text.startsWith(TOKEN_PREFIX) ? text.slice(TOKEN_PREFIX.length) : "";
  if (!MEMBER_PATTERN.test(member)) {
    throw new ConnectError(
      "page_token is not a next_page_token of ListWorkspaceSuggestions",
      Code.InvalidArgument,
    );
  }
  return member;
}
