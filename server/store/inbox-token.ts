/*
 * The token an append of a chat carries to show that the chat was announced in its
 * workspace's inbox first (store/workspace-inbox.ts says why), and the loop that gets
 * one: announce, append, and again above the fence when the append answers fenced.
 */

/** What makes announcements: a workspace's inbox (`WorkspaceInbox.announcement`). */
export interface Announcer {
  announcement(workspaceId: string, sessionId: string, minimum?: number): Promise<InboxToken>;
  /** Tells the workspace's watchers of a change the append made (`WorkspaceInbox.tell`). */
  tell?(workspaceId: string, sessionId: string): void;
}

/** What an append that carries an inbox token answers when it needs a (new) token. */
export interface Fenced {
  /** The fence the token must be above (0: the chat was not announced yet). */
  readonly fenced: number;
  /** The workspace to announce the chat in. */
  readonly workspaceId: string;
}

/** How an append carries the chat's announcement in a workspace's inbox. */
export interface InboxToken {
  /** The token announced before the append; '' for none. */
  readonly token: string;
  /** The workspace it is announced in; '' for none. */
  readonly workspace: string;
}

/** An append with no announcement (a chat of no workspace, or a first try that asks). */
export const NO_TOKEN: InboxToken = { token: "", workspace: "" };

/**
 * Runs `append` announced for (workspace, session) first ('' workspace: with no token;
 * else by a call of its own, `WorkspaceInbox.announcement`); when it answers fenced (no
 * token, a token of another workspace, or one an inbox read passed), announces the chat in the workspace it names, above the fence, and repeats.
 * Once it went through, the workspace's watchers are told (`Announcer.tell`), unless the
 * append told them itself.
 */
export async function announced<T>(
  inbox: Announcer,
  workspaceId: string,
  sessionId: string,
  append: (at: InboxToken) => Promise<T | Fenced>,
): Promise<T> {
  let workspace = workspaceId;
  let minimum = 0;
  for (let attempt = 0; ; attempt++) {
    const at =
      workspace === "" ? NO_TOKEN : await inbox.announcement(workspace, sessionId, minimum);
    const outcome = await append(at);
    if (!isFenced(outcome)) {
      inbox.tell?.(at.workspace, sessionId);
      return outcome;
    }
    if (attempt >= 10) throw new Error("the inbox fenced every announcement of this chat");
    workspace = outcome.workspaceId;
    minimum = outcome.fenced + 1;
  }
}

/** What knows the workspace of an offer this instance read (lists-cache.ts `workspaceOf`). */
export interface OfferWorkspaces {
  workspaceOf(sessionId: string, suggestionId: string): string | undefined;
}

/**
 * `announced` for a settlement of `suggestionId`. A settlement changes the inbox of its
 * offer's workspace, so its chat is announced there first, as an offer's is: the script
 * refuses a settlement of an offer of a workspace without a fresh token of that
 * workspace and names it (status 5), and it is sent again after the announcement. Offers
 * of no workspace settle in one call, and so do those whose workspace `known` holds
 * (test/store/settle-workspace-guess.test.ts).
 */
export function settlementAnnounced<T>(
  inbox: Announcer,
  known: OfferWorkspaces,
  sessionId: string,
  suggestionId: string,
  run: (at: InboxToken) => Promise<T | Fenced>,
): Promise<T> {
  // The offer's workspace as this instance last read it, if it did: a guess that saves
  // the refused first try; the script checks it (a token of another workspace is none).
  const guess = known.workspaceOf(sessionId, suggestionId) ?? "";
  return announced(inbox, guess, sessionId, run);
}

function isFenced(value: unknown): value is Fenced {
  return typeof value === "object" && value !== null && "fenced" in value;
}
