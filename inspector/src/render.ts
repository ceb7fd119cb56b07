import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  ApprovalPolicy,
  type Chat,
  DismissReason,
  MessageAuthor,
  Permission,
  SandboxMode,
  Settler,
  type Suggestion,
  SuggestionState,
} from "../../sdk/src/web.js";
import { type Child, h } from "./dom.js";

/** The four things a person does with a suggestion, as the buttons name them. */
export const ACTIONS = ["Start", "Draft", "Dismiss", "Restore"] as const;
export type Action = (typeof ACTIONS)[number];

/**
 * The actions a suggestion's state allows (docs/contract.md: started, drafted and dismissed
 * apply only to an open offer, restored only to a dismissed one, the agent's withdrawal
 * included), so a card never offers what the service would refuse. Started and drafted
 * are final: no action.
 */
export function actionsFor(state: SuggestionState): readonly Action[] {
  if (state === SuggestionState.OPEN) return ["Start", "Draft", "Dismiss"];
  if (state === SuggestionState.DISMISSED) return ["Restore"];
  return [];
}

/** A dismissal reason as the page says it, the words the SDK's settlement notes use. */
export const REASON_WORDS: Readonly<Record<DismissReason, string>> = {
  [DismissReason.UNSPECIFIED]: "No reason given",
  [DismissReason.NOT_WANTED]: "Not wanted",
  [DismissReason.ALREADY_DONE]: "Already done",
  [DismissReason.DUPLICATE]: "A duplicate",
  [DismissReason.OTHER]: "Other",
};

/** What a card can ask the page to do. */
export interface CardHandlers {
  readonly act: (action: Action, suggestion: Suggestion) => void;
  readonly viewChat: (suggestion: Suggestion) => void;
}

/** An enum value's name as words: `FULL_ACCESS` is "Full access". */
export function words(name: string | undefined): string {
  if (name === undefined || name === "") return "unset";
  const text = name.toLowerCase().replaceAll("_", " ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function time(ts: Timestamp | undefined): Child {
  if (ts === undefined) return null;
  const date = timestampDate(ts);
  return h("time", { datetime: date.toISOString() }, date.toLocaleString());
}

/** Where a suggestion stands: its state, when it was offered, who settled it and when. */
function standing(s: Suggestion): HTMLElement {
  const name = SuggestionState[s.state] ?? "UNSPECIFIED";
  const withdrawn = s.state === SuggestionState.DISMISSED && s.settledBy === Settler.AGENT;
  const parts: Child[] = [
    h(
      "span",
      { class: `state state-${name.toLowerCase()}` },
      withdrawn ? "Withdrawn" : words(name),
    ),
    " · offered ",
    time(s.offeredAt),
  ];
  if (s.state !== SuggestionState.OPEN) {
    // A settlement recorded without a settler is the person's (the contract's Settler).
    const by = s.settledBy === Settler.AGENT ? "the agent" : "the person";
    parts.push(` · settled by ${by} `, time(s.settledAt));
  }
  return h("p", { class: "meta" }, ...parts);
}

/**
 * What the person chose when settling: a Start's options (only those chosen), or a
 * dismissal's reason and note. Nothing for a settlement that chose nothing.
 */
function choices(s: Suggestion): Child[] {
  if (s.state === SuggestionState.STARTED && s.startOptions !== undefined) {
    const { model, permission, brief } = s.startOptions;
    const chosen: string[] = [];
    if (model !== "") chosen.push(`model ${model}`);
    if (permission !== Permission.UNSPECIFIED) {
      chosen.push(`permission ${words(Permission[permission]).toLowerCase()}`);
    }
    if (brief !== "") chosen.push("an edited brief");
    if (chosen.length === 0) return [];
    return [h("p", { class: "meta choices" }, `Started with ${chosen.join(", ")}.`)];
  }
  if (s.state !== SuggestionState.DISMISSED || s.settledBy === Settler.AGENT) return [];
  const out: Child[] = [];
  if (s.dismissReason !== DismissReason.UNSPECIFIED) {
    out.push(
      h(
        "p",
        { class: "meta choices" },
        `Dismissed as ${REASON_WORDS[s.dismissReason].toLowerCase()}.`,
      ),
    );
  }
  if (s.dismissNote !== "") {
    out.push(h("p", { class: "meta choices" }, "Their note: ", h("q", {}, s.dismissNote)));
  }
  return out;
}

/**
 * One suggestion: title, tldr, the brief, where it stands, what the person chose, and the
 * actions its state allows (`actionsFor`). A refusal's exact message is shown on the card
 * (`error`), as the debugging tool should show it.
 */
export function card(s: Suggestion, error: string | undefined, on: CardHandlers): HTMLElement {
  const titleId = `title-${s.id}`;
  const buttons = actionsFor(s.state).map((action) => {
    const button = h("button", { type: "button", "data-focus-key": `${s.id}:${action}` }, action);
    button.addEventListener("click", () => on.act(action, s));
    return button;
  });
  const started = s.state === SuggestionState.STARTED && s.chatId !== "";
  const view = h("button", { type: "button", "data-focus-key": `${s.id}:chat` }, "View its chat");
  view.addEventListener("click", () => on.viewChat(s));
  return h(
    "li",
    { class: "card", "data-suggestion-id": s.id, "aria-labelledby": titleId },
    h("h4", { id: titleId }, s.title),
    h("p", { class: "tldr" }, s.tldr),
    h("details", {}, h("summary", {}, "Brief"), h("p", { class: "brief" }, s.brief)),
    standing(s),
    ...choices(s),
    started && h("p", { class: "meta" }, "Chat ", h("code", {}, s.chatId), " ", view),
    buttons.length > 0 &&
      h(
        "div",
        { class: "actions", role: "group", "aria-label": `Settle “${s.title}”` },
        ...buttons,
      ),
    error !== undefined && h("p", { class: "error", role: "alert" }, error),
  );
}

/** A workspace inbox entry: the suggestion and the chat it lives in, which it opens. */
export function inboxEntry(s: Suggestion, open: (sessionId: string) => void): HTMLElement {
  const button = h("button", { type: "button" }, "Open its chat");
  button.addEventListener("click", () => open(s.sessionId));
  return h(
    "li",
    { class: "card" },
    h("h4", {}, s.title),
    h("p", { class: "tldr" }, s.tldr),
    h(
      "p",
      { class: "meta" },
      "Chat ",
      h("code", {}, s.sessionId),
      " · offered ",
      time(s.offeredAt),
    ),
    button,
  );
}

function settingsList(chat: Chat): HTMLElement {
  const settings = chat.settings;
  const rows: [string, string][] = [
    ["Preset", settings?.presetId || "none"],
    ["Model", settings?.model || "unset"],
    ["Permission", words(Permission[settings?.permission ?? 0])],
    ["Sandbox", words(SandboxMode[settings?.sandbox ?? 0])],
    ["Approval", words(ApprovalPolicy[settings?.approval ?? 0])],
  ];
  return h(
    "dl",
    { class: "settings" },
    ...rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
  );
}

/** Who wrote a message, as the started chat shows it; the brief is the suggestion's. */
function author(value: MessageAuthor): HTMLElement {
  if (value === MessageAuthor.SUGGESTION) {
    return h("span", { class: "badge suggestion" }, "From the suggestion, not the person");
  }
  return h("span", { class: "badge" }, words(MessageAuthor[value]));
}

/** The started chat as the embedded host records it (GetChat). */
export function chatPanel(chat: Chat): HTMLElement[] {
  return [
    h("h3", {}, chat.title),
    h(
      "p",
      { class: "meta" },
      "Chat ",
      h("code", {}, chat.chatId),
      " in workspace ",
      h("code", {}, chat.workspaceId),
    ),
    h("h4", {}, "Settings it runs with"),
    settingsList(chat),
    h("h4", {}, "Messages"),
    h(
      "ol",
      { class: "messages" },
      ...chat.messages.map((m) =>
        h(
          "li",
          {},
          author(m.author),
          m.edited && " ",
          m.edited && h("span", { class: "badge edited" }, "Edited by the person"),
          h("p", { class: "brief" }, m.text),
        ),
      ),
    ),
  ];
}

/**
 * The started chat from what the app's token can see, when it may not call GetChat: the
 * suggestion's title (the chat's title) and brief (its first message), and why.
 */
export function chatFromSuggestion(s: Suggestion, why: string): HTMLElement[] {
  return [
    h("h3", {}, s.title),
    h("p", { class: "meta" }, "Chat ", h("code", {}, s.chatId)),
    h(
      "p",
      { class: "note" },
      `The chat's own record is not readable with this token (${why}); shown from the suggestion.`,
    ),
    h("h4", {}, "First message"),
    h(
      "ol",
      { class: "messages" },
      h("li", {}, author(MessageAuthor.SUGGESTION), h("p", { class: "brief" }, s.brief)),
    ),
  ];
}
