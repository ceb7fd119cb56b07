import { isValidId } from "./ids.js";

/**
 * The workspaces a credential opens (docs/operating.md "Credentials and tenants"): every one (a static token
 * without grants, or `workspace:*`), or the listed ones. A suggestion is seen and acted
 * on only when the workspace recorded on its offer is granted; `workspace:*` also covers
 * offers of chats in no workspace (an empty workspace id), which a list never does.
 */
export interface WorkspaceGrants {
  /** Every workspace, and chats in none. */
  readonly all: boolean;
  /** The workspaces granted by name (empty when `all`). */
  readonly workspaces: ReadonlySet<string>;
}

/** Every workspace: static tokens without grants, `workspace:*`, and no auth at all. */
export const ALL_WORKSPACES: WorkspaceGrants = Object.freeze({
  all: true,
  workspaces: new Set<string>(),
});

/** Grants of the named workspaces only. */
export function workspaceGrants(ids: Iterable<string>): WorkspaceGrants {
  return { all: false, workspaces: new Set(ids) };
}

/** True when `grants` open `workspaceId` (empty: a chat in no workspace). */
export function isGranted(grants: WorkspaceGrants, workspaceId: string): boolean {
  return grants.all || (workspaceId !== "" && grants.workspaces.has(workspaceId));
}

/** The prefix of a workspace grant in a scope (`workspace:<id>`, `workspace:*`). */
const WORKSPACE_SCOPE = "workspace:";

/** What a space-separated scope (RFC 8693 `scope`) holds: its roles and its grants. */
export interface ParsedScope {
  /** The scope's other words, in order (roles, and words this service does not know). */
  readonly words: readonly string[];
  /** Its workspace grants; none named: no workspace at all. */
  readonly grants: WorkspaceGrants;
}

/**
 * Splits a scope into its words and its workspace grants. A `workspace:` word whose id
 * does not follow the id rule grants nothing (it could name no workspace anyway).
 */
export function parseScope(scope: string): ParsedScope {
  const words: string[] = [];
  const named: string[] = [];
  let all = false;
  for (const word of scope.split(" ")) {
    if (word === "") continue;
    if (!word.startsWith(WORKSPACE_SCOPE)) {
      words.push(word);
      continue;
    }
    const id = word.slice(WORKSPACE_SCOPE.length);
    if (id === "*") all = true;
    else if (isValidId(id)) named.push(id);
  }
  return { words, grants: all ? ALL_WORKSPACES : workspaceGrants(named) };
}
