--[[
  The projection: a cache of the fold of one session's log, kept in a hash so that the
  quota checks of a write, and the lists (readLists-2.lua), need no scan of the stream.
  It is only a cache: when it is missing, behind the stream (deleted, or records appended
  by another writer) or of an older format, it is caught up by folding the records it
  has not seen. Pinned by test/store/list-read.test.ts.

  It heals: every script checks it against itself and the log before use (`intact`),
  and rebuilds it from the log in the same script when a field is missing, a counter
  disagrees with the fields it counts, it was folded from another log (copied onto this
  chat's key), or the log lost entries it had folded (XDEL).
  Pinned by test/store/projection-heal.test.ts, which deletes each field in turn.

  One include per concept, in the order they use each other:
    records.lua    a stream entry's fields (`recordFields`); HMGET in chunks (`hmget`)
    fold.lua       how each record changes the projection (`applyRecord`): the fold
    fences.lua     the inbox fences (`inboxFence`, `fenceEveryToken`) and the offer's
                   workspace (`offerWorkspace`)
    catch-up.lua   self-healing: `intact`, `catchUp`, `seal`, `appendRecord`
    retention.lua  a chat's keys' expiry after a write (`renewChat`)
    clock.lua      the server's time in ms (`nowMs`)

  The hash's fields (PROJECTION_FORMAT in catch-up.lua names their format):

  | field         | holds                                                        | kept by          |
  |---------------|--------------------------------------------------------------|------------------|
  | v             | format of these fields (PROJECTION_FORMAT); another one is   | catch-up.lua     |
  |               | rebuilt                                                      |                  |
  | l             | the key of the log it folds: a projection copied from        | catch-up.lua     |
  |               | another chat's key names that chat's log, and is rebuilt,    |                  |
  |               | even when the two logs end at the same entry id after as     |                  |
  |               | many entries                                                 |                  |
  | h             | the hash's own field count (HLEN) after the last write: a    | catch-up.lua     |
  |               | deleted field of any kind shows as a difference              |                  |
  | m             | stream entries folded: XLEN must equal it once caught up,    | catch-up.lua     |
  |               | or the log lost entries (XDEL) and the projection is rebuilt |                  |
  | seen          | id of the last stream entry folded                           | catch-up.lua     |
  | n             | offers recorded (valid `offered` records)                    | fold.lua         |
  | open          | offers open now                                              | fold.lua         |
  | i:<n>         | id of the n-th offer recorded (1 to n): the lists' order     | fold.lua         |
  | s:<id>        | standing of an offer: open, started, drafted or dismissed    | fold.lua         |
  | e:<id>        | stream id of the offer's record                              | fold.lua         |
  | a:<id>        | stream id of the settlement the offer stands by (absent      | fold.lua         |
  |               | while open)                                                  |                  |
  | k:<id>        | chat id of a started offer                                   | fold.lua         |
  | t:<turn_id>   | id of the first offer of that turn                           | fold.lua         |
  | c:<call_id>   | id of the offer that tool call recorded                      | fold.lua         |
  | u:<id>        | the offer's normalized title (its record's `nt`: trimmed,    | fold.lua         |
  |               | lower-cased, inner white space collapsed, computed by the    |                  |
  |               | service); absent for an offer recorded before the field      |                  |
  |               | existed, which no title repeats                              |                  |
  | x:<id>        | present while the offer stands dismissed by the agent        | fold.lua         |
  |               | (withdrawn): a title that repeats it is no duplicate         |                  |
  | o:<id>        | stream id of the offer's first `starting` record: the        | fold.lua         |
  |               | options its Start was fixed with (lua/beginStart-4.lua),     |                  |
  |               | whichever Start comes later; removed by an `abandoned`       |                  |
  |               | record naming it (its Start failed before any chat could     |                  |
  |               | exist: lua/abandonStart-4.lua), after which the next Start's |                  |
  |               | `starting` record is the first                               |                  |
  | w:<call_id>   | stream id of the settlement that withdraw_suggestion call    | fold.lua         |
  |               | recorded                                                     |                  |
  | r:<entry id>  | present for each `settled` record the fold did not accept    | fold.lua         |
  |               | (it names no offer yet, or does not fit its standing): every |                  |
  |               | other `settled` record with an id was accepted, which        |                  |
  |               | ListSettlements reads (settlements-2.lua) without folding    |                  |
  |               | the records before its cursor                                |                  |
  | f:<ws>        | the inbox fence of workspace ws (store/workspace-inbox.ts):  | fences.lua, set  |
  |               | writes announced with a token at or below it are refused.    | by inboxChat-2   |
  |               | Not part of the fold: kept when the rest is folded again     |                  |
  |               | (lua/inboxChat-2.lua, which sets it, counts it in `h`)       |                  |
  | f:*           | the fence of every workspace: set when the projection is     | fences.lua       |
  |               | folded from the first record (it may have been deleted by    |                  |
  |               | hand, fences and all) to the server's time in microseconds   |                  |
  |               | plus a minute, above every token handed out before (tokens   |                  |
  |               | are at least their server's time: see lua/announce-2.lua)    |                  |
]]
--- @include "records"
--- @include "fold"
--- @include "fences"
--- @include "catch-up"
--- @include "retention"
--- @include "clock"
