import { Code, ConnectError } from "@connectrpc/connect";
import type { Suggestion } from "../../sdk/src/web.js";
import { type Access, createClients, isAbort, probe, refusal, tokenStore } from "./api.js";
import { byId, replaceChildren } from "./dom.js";
import { type Action, card, chatFromSuggestion, chatPanel, inboxEntry } from "./render.js";
import "./style.css";

const clients = createClients(location.origin);

/** The page's state: its watches, the chat's latest lists, and each card's last failure. */
const state = {
  watch: undefined as AbortController | undefined,
  inboxWatch: undefined as AbortController | undefined,
  lists: { open: [] as Suggestion[], settled: [] as Suggestion[] },
  errors: new Map<string, string>(),
};

const status = (text: string) => {
  byId("status").textContent = text;
};

/** Shows the app when the service lets this page in, else the token form (and nothing else). */
async function enter(): Promise<void> {
  const access = await probe(clients);
  if (!access.ok) {
    byId("app").hidden = true;
    stopWatching();
    if (!access.needsToken) {
      status(`The service answered: ${access.message}`);
      return;
    }
    const hadToken = tokenStore.get() !== "";
    tokenStore.clear();
    byId("token-form").hidden = false;
    byId("token-error").textContent = hadToken ? access.message : "";
    status("A token of the app role is needed.");
    byId<HTMLInputElement>("token").focus();
    return;
  }
  byId("token-form").hidden = true;
  byId("app").hidden = false;
  byId("sign-out").hidden = tokenStore.get() === "";
  status("Connected.");
  showInbox(access);
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("chat");
  if (fromHash) void openChat(fromHash);
}

function showInbox(access: Access & { ok: true }): void {
  byId("inbox").hidden = !access.inbox;
  const note = byId("inbox-note");
  note.hidden = access.inbox;
  note.textContent = access.inbox
    ? ""
    : `The workspace inbox is not available here (${access.why}); open a chat by its id.`;
}

function stopWatching(): void {
  state.watch?.abort();
  state.inboxWatch?.abort();
}

/** Failures after which a watch is opened again by itself: the service restarting, a network. */
const TRANSIENT = new Set([Code.Unavailable, Code.Unknown, Code.Internal, Code.DeadlineExceeded]);
const RETRY_MS = 3000;

/**
 * Watches one chat's lists (WatchSuggestions): they render at once and after every change.
 * A watch that ends or breaks (the service restarting) is opened again after a pause, the
 * last lists staying on the page meanwhile; a refused one shows the service's message.
 */
async function openChat(sessionId: string): Promise<void> {
  state.watch?.abort();
  const watch = new AbortController();
  state.watch = watch;
  byId<HTMLInputElement>("chat-id").value = sessionId;
  history.replaceState(null, "", `#chat=${encodeURIComponent(sessionId)}`);
  const chatStatus = byId("chat-status");
  chatStatus.textContent = `Watching chat ${sessionId}…`;
  let why = "the watch ended";
  try {
    for await (const lists of clients.suggestions.watchSuggestions(
      { sessionId },
      // The server's own stream: the page says when it breaks and opens it again itself.
      { signal: watch.signal, raw: true },
    )) {
      state.lists = { open: lists.open, settled: lists.settled };
      chatStatus.textContent = `Chat ${sessionId}: ${lists.open.length} open, ${lists.settled.length} settled. Live.`;
      renderLists();
    }
  } catch (err) {
    if (watch.signal.aborted || isAbort(err)) return;
    const error = ConnectError.from(err);
    if (error.code === Code.Unauthenticated || error.code === Code.PermissionDenied) {
      void enter();
      return;
    }
    if (!TRANSIENT.has(error.code)) {
      byId("lists").hidden = true;
      chatStatus.textContent = error.rawMessage;
      return;
    }
    why = error.rawMessage;
  }
  if (watch.signal.aborted) return;
  chatStatus.textContent = `Chat ${sessionId}: ${why}; watching again in ${RETRY_MS / 1000} s.`;
  setTimeout(() => {
    if (state.watch === watch) void openChat(sessionId);
  }, RETRY_MS);
}

function renderLists(): void {
  const on = { act, viewChat };
  const cards = (list: Suggestion[]) => list.map((s) => card(s, state.errors.get(s.id), on));
  byId("lists").hidden = false;
  replaceChildren(byId("open-list"), cards(state.lists.open));
  replaceChildren(byId("settled-list"), cards(state.lists.settled));
}

/** Runs one of the four buttons; a failure's exact message stays on the card. */
async function act(action: Action, s: Suggestion): Promise<void> {
  const request = { sessionId: s.sessionId, suggestionId: s.id };
  state.errors.delete(s.id);
  try {
    if (action === "Start") {
      const { chatId, suggestion } = await clients.suggestions.startSuggestion(request);
      void viewChat({ ...(suggestion ?? s), chatId });
    } else if (action === "Draft") {
      await clients.suggestions.draftSuggestion(request);
    } else if (action === "Dismiss") {
      await clients.suggestions.dismissSuggestion(request);
    } else {
      await clients.suggestions.restoreSuggestion(request);
    }
  } catch (err) {
    state.errors.set(s.id, ConnectError.from(err).rawMessage);
  }
  renderLists();
}

/** Shows a started suggestion's chat: GetChat on the embedded host, or what the app sees. */
async function viewChat(s: Suggestion): Promise<void> {
  const section = byId("started");
  const body = byId("started-body");
  section.hidden = false;
  body.textContent = `Loading chat ${s.chatId}…`;
  let chat: Awaited<ReturnType<typeof clients.local.getChat>>["chat"];
  const failed = await refusal(async () => {
    chat = (await clients.local.getChat({ chatId: s.chatId })).chat;
  });
  if (chat !== undefined) replaceChildren(body, chatPanel(chat));
  else replaceChildren(body, chatFromSuggestion(s, failed?.rawMessage ?? "no chat answered"));
  section.focus();
}

/** Watches a workspace's inbox; UNIMPLEMENTED (not landed yet) falls back to the chat view. */
async function openInbox(workspaceId: string): Promise<void> {
  state.inboxWatch?.abort();
  const watch = new AbortController();
  state.inboxWatch = watch;
  const inboxStatus = byId("inbox-status");
  inboxStatus.textContent = `Watching workspace ${workspaceId}…`;
  try {
    for await (const page of clients.suggestions.watchWorkspaceSuggestions(
      { workspaceId },
      { signal: watch.signal, raw: true },
    )) {
      inboxStatus.textContent = `Workspace ${workspaceId}: ${page.suggestions.length} open. Live.`;
      const entries = page.suggestions.map((s) => inboxEntry(s, (id) => void openChat(id)));
      replaceChildren(byId("inbox-list"), entries);
    }
  } catch (err) {
    if (watch.signal.aborted || isAbort(err)) return;
    const error = ConnectError.from(err);
    inboxStatus.textContent = error.rawMessage;
    showInbox({ ok: true, inbox: false, why: error.rawMessage });
  }
}

function onSubmit(id: string, run: (value: string) => void): void {
  byId<HTMLFormElement>(id).addEventListener("submit", (event) => {
    event.preventDefault();
    const input = (event.currentTarget as HTMLFormElement).querySelector("input");
    run(input?.value.trim() ?? "");
  });
}

onSubmit("token-form", (token) => {
  tokenStore.set(token);
  void enter();
});
onSubmit("chat-form", (id) => void openChat(id));
onSubmit("workspace-form", (id) => void openInbox(id));
byId("sign-out").addEventListener("click", () => {
  tokenStore.clear();
  location.reload();
});
void enter();
