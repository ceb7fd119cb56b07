/**
 * The reference's three quotas of a chat's offers ("At most one per turn, three waiting
 * at a time and ten in a chat's lifetime"). They are written here once: the refusal
 * texts (refusals.ts), the restore ceiling (settlement.ts) and the atomic Lua checks
 * (store/lua/offer-3.lua and settle-3.lua receive them as ARGV from
 * store/suggestion-store.ts) all read these. test/store/settlement-rule.test.ts runs the Lua
 * with them and compares its answers with the TypeScript rule.
 *
 * The field limits (60 / 240 / 4000) are declared in the proto's options and read by
 * tool-declaration.ts.
 */

/** Offers one chat may make in its lifetime. */
export const LIFETIME_LIMIT = 10;

/** Offers that may wait (be open) at once; also the restore ceiling. */
export const OPEN_LIMIT = 3;

/** Offers one model turn may make. */
export const TURN_LIMIT = 1;
