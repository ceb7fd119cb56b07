import { Code, ConnectError } from "@connectrpc/connect";
import {
  type ChatSettings,
  DismissReason,
  Permission,
  type Suggestion,
} from "../../sdk/src/web.js";
import { createClients, isAbort, probe, refusal, tokenClaims, tokenStore } from "./api.js";
import { byId, h, replaceChildren } from "./dom.js";
import {
  type Action,
  card,
  chatFromSuggestion,
  chatPanel,
  inboxEntry,
  REASON_WORDS,
  words,
} from "./render.js";
import "./style.css";

const clients = createClients(location.origin);

/** The page's state: its watches, the chat's latest lists, each card's last failure. */
const state = {
  watch: undefined as AbortController | undefined,
  inboxWatch: undefined as AbortController | undefined,
  lists: { open: [] as Suggestion[], settled: [] as Suggestion[] },
  errors: new Map<string, string>(),
  /**
   * Why the host's records (a chat's settings, a started chat) are not readable with this
   * credential, once known: they need the host-admin role, which an app token lacks.
   */
  hostDenied: undefined as string | undefined,
  /** The suggestion the open Start or Dismiss dialog is about. */
  dialogFor: undefined as Suggestion | undefined,
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
  const granted = showGrants();
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("chat");
  if (fromHash) void openChat(fromHash);
  if (granted.length === 1) {
    byId<HTMLInputElement>("workspace-id").value = granted[0] as string;
    void openInbox(granted[0] as string);
  }
}

/**
 * Says what a JWT grants (its roles and workspaces, as its `scope` names them) and offers
 * its workspaces in the inbox's field; the service enforces them on every call. Answers
 * the workspaces granted by name (none for a static token or `workspace:*`).
 */
function showGrants(): readonly string[] {
  const claims = tokenClaims(tokenStore.get());
  const note = byId("grants");
  const options = byId("granted-workspaces");
  state.hostDenied = undefined;
  if (claims === undefined) {
    note.hidden = true;
    options.replaceChildren();
    return [];
  }
  if (!claims.roles.includes("host-admin")) {
    state.hostDenied = "its scope has no host-admin role";
  }
  const all = claims.workspaces.includes("*");
  const named = all ? [] : claims.workspaces;
  const where = all
    ? "every workspace"
    : named.length === 0
      ? "no workspace"
      : `workspace${named.length === 1 ? "" : "s"} ${named.join(", ")}`;
  const until = claims.expires === undefined ? "" : `, until ${claims.expires.toLocaleString()}`;
  note.hidden = false;
  note.textContent = `This token (a JWT) opens ${where}, as ${claims.roles.join(", ") || "no role"}${until}.`;
  options.replaceChildren(...named.map((id) => h("option", { value: id })));
  return named;
}

function stopWatching(): void {
  state.watch?.abort();
  state.inboxWatch?.abort();
}

/** Why a watch's stream ended, as the page says it while the SDK reconnects. */
function endReason(reason: ConnectError | undefined): string {
  return reason === undefined ? "the stream ended" : reason.rawMessage;
}

/**
 * Watches one chat's lists with the SDK's watch (WatchSuggestions): they render at once and
 * after every change. When the stream breaks (a restart, a proxy) the SDK reconnects by
 * itself; the page says so meanwhile, keeping the last lists, and says "Live." again once a
 * stream answers. A refusal ends the watch with the service's message.
 */
async function openChat(sessionId: string): Promise<void> {
  state.watch?.abort();
  const watch = new AbortController();
  state.watch = watch;
  byId<HTMLInputElement>("chat-id").value = sessionId;
  history.replaceState(null, "", `#chat=${encodeURIComponent(sessionId)}`);
  const chatStatus = byId("chat-status");
  const say = (text: string) => {
    if (state.watch === watch) chatStatus.textContent = text;
  };
  say(`Watching chat ${sessionId}…`);
  let received = false;
  const live = () => {
    const { open, settled } = state.lists;
    if (received) say(`Chat ${sessionId}: ${open.length} open, ${settled.length} settled. Live.`);
  };
  try {
    for await (const lists of clients.suggestions.watchSuggestions(
      { sessionId },
      {
        signal: watch.signal,
        onReconnecting: ({ reason }) =>
          say(`Chat ${sessionId}: ${endReason(reason)}; reconnecting…`),
        onConnected: live,
      },
    )) {
      received = true;
      state.lists = { open: lists.open, settled: lists.settled };
      live();
      renderLists();
    }
  } catch (err) {
    if (watch.signal.aborted || isAbort(err)) return;
    const error = ConnectError.from(err);
    if (error.code === Code.Unauthenticated) {
      void enter();
      return;
    }
    byId("lists").hidden = true;
    say(error.rawMessage);
  }
}

function renderLists(): void {
  const on = { act, viewChat };
  const cards = (list: Suggestion[]) => list.map((s) => card(s, state.errors.get(s.id), on));
  byId("lists").hidden = false;
  replaceChildren(byId("open-list"), cards(state.lists.open));
  replaceChildren(byId("settled-list"), cards(state.lists.settled));
}

/** A card's button: Start and Dismiss ask first (a dialog); Draft and Restore act at once. */
function act(action: Action, s: Suggestion): void {
  state.errors.delete(s.id);
  if (action === "Start") void openStartDialog(s);
  else if (action === "Dismiss") openDismissDialog(s);
  else void settle(action, s);
}

/** Draft or Restore; a failure's exact message stays on the card. */
async function settle(action: "Draft" | "Restore", s: Suggestion): Promise<void> {
  const request = { sessionId: s.sessionId, suggestionId: s.id };
  const failed = await refusal(() =>
    action === "Draft"
      ? clients.suggestions.draftSuggestion(request)
      : clients.suggestions.restoreSuggestion(request),
  );
  if (failed !== undefined) state.errors.set(s.id, failed.rawMessage);
  renderLists();
}

/**
 * The offering chat's settings from the host (ChatHostService.GetSession), which the new
 * chat inherits; undefined when this credential may not read them (remembered, so the page
 * asks once) or the host does not know the chat.
 */
async function offeringSettings(sessionId: string): Promise<ChatSettings | undefined> {
  if (state.hostDenied !== undefined) return undefined;
  try {
    const { session } = await clients.host.getSession({ sessionId });
    return session?.settings;
  } catch (err) {
    const error = ConnectError.from(err);
    const denied = [Code.PermissionDenied, Code.Unauthenticated, Code.Unimplemented];
    if (denied.includes(error.code)) state.hostDenied = error.rawMessage;
    return undefined;
  }
}

const PERMISSIONS = [Permission.READ_ONLY, Permission.DEFAULT, Permission.FULL_ACCESS];

/** A permission as the dialog says it: `Permission.READ_ONLY` is "Read only". */
const permissionWords = (p: Permission) => words(Permission[p]);

/**
 * The Start dialog's permissions: "as the offering chat", then each permission not above
 * the one the new chat inherits (all of them while that one is not known: the service
 * refuses one above it).
 */
function fillPermissions(inherited: Permission | undefined): void {
  const select = byId<HTMLSelectElement>("start-permission");
  const kept = Number(select.value || "0");
  const allowed = PERMISSIONS.filter((p) => inherited === undefined || p <= inherited);
  const same = inherited === undefined ? "" : ` (${permissionWords(inherited)})`;
  select.replaceChildren(
    h("option", { value: "0" }, `As the offering chat${same}`),
    ...allowed.map((p) => h("option", { value: String(p) }, permissionWords(p))),
  );
  select.value = allowed.includes(kept) ? String(kept) : "0";
}

/**
 * Opens the Start dialog: the model (empty: the offering chat's), a permission not above
 * the offering chat's, and the brief to edit. The offering chat's settings are read from
 * the host when this credential may; the dialog says what the new chat inherits.
 */
async function openStartDialog(s: Suggestion): Promise<void> {
  state.dialogFor = s;
  const model = byId<HTMLInputElement>("start-model");
  const inherits = byId("start-inherits");
  byId("start-heading").textContent = `Start “${s.title}”`;
  model.value = "";
  model.placeholder = "as the offering chat";
  byId<HTMLSelectElement>("start-permission").value = "0";
  fillPermissions(undefined);
  byId<HTMLTextAreaElement>("start-brief").value = s.brief;
  byId("start-error").textContent = "";
  inherits.textContent = "Reading the offering chat's settings…";
  byId<HTMLDialogElement>("start-dialog").showModal();
  const settings = await offeringSettings(s.sessionId);
  if (state.dialogFor !== s) return;
  if (settings === undefined) {
    const why = state.hostDenied === undefined ? "" : ` (${state.hostDenied})`;
    inherits.textContent = `The offering chat's settings are not readable here${why}: the new chat inherits its model and permission, and the service refuses a permission above it.`;
    return;
  }
  const inheritedModel = settings.model || "unset";
  model.placeholder = `as the offering chat: ${inheritedModel}`;
  fillPermissions(settings.permission);
  inherits.textContent = `The new chat inherits model ${inheritedModel} and permission ${permissionWords(settings.permission).toLowerCase()} from chat ${s.sessionId}; it may run with less, never more.`;
}

/** Sends the Start with the options the person chose (only those that differ). */
async function submitStart(): Promise<void> {
  const s = state.dialogFor;
  if (s === undefined) return;
  const model = byId<HTMLInputElement>("start-model").value.trim();
  const permission = Number(byId<HTMLSelectElement>("start-permission").value) as Permission;
  const edited = byId<HTMLTextAreaElement>("start-brief").value;
  const brief = edited.trim() === s.brief.trim() ? "" : edited;
  const chosen = model !== "" || permission !== Permission.UNSPECIFIED || brief !== "";
  const request = {
    sessionId: s.sessionId,
    suggestionId: s.id,
    ...(chosen ? { options: { model, permission, brief } } : {}),
  };
  await whileBusy("start-form", async () => {
    try {
      const { chatId, suggestion } = await clients.suggestions.startSuggestion(request);
      closeDialog("start-dialog");
      void viewChat({ ...(suggestion ?? s), chatId });
    } catch (err) {
      byId("start-error").textContent = ConnectError.from(err).rawMessage;
    }
  });
}

const REASONS = [
  DismissReason.UNSPECIFIED,
  DismissReason.NOT_WANTED,
  DismissReason.ALREADY_DONE,
  DismissReason.DUPLICATE,
  DismissReason.OTHER,
];

/** Opens the Dismiss dialog: a reason (none, or one of the contract's) and a note. */
function openDismissDialog(s: Suggestion): void {
  state.dialogFor = s;
  byId("dismiss-heading").textContent = `Dismiss “${s.title}”`;
  const radios = REASONS.map((reason) => {
    const id = `dismiss-reason-${reason}`;
    return h(
      "div",
      { class: "reason" },
      h("input", {
        type: "radio",
        name: "reason",
        id,
        value: String(reason),
        checked: reason === DismissReason.UNSPECIFIED,
      }),
      h("label", { for: id }, REASON_WORDS[reason]),
    );
  });
  byId("dismiss-reasons").replaceChildren(...radios);
  byId<HTMLTextAreaElement>("dismiss-note").value = "";
  byId("dismiss-error").textContent = "";
  byId<HTMLDialogElement>("dismiss-dialog").showModal();
}

/** Sends the Dismiss with its reason and note; the offering agent hears them. */
async function submitDismiss(): Promise<void> {
  const s = state.dialogFor;
  if (s === undefined) return;
  const picked = document.querySelector<HTMLInputElement>('input[name="reason"]:checked');
  const request = {
    sessionId: s.sessionId,
    suggestionId: s.id,
    reason: Number(picked?.value ?? "0") as DismissReason,
    note: byId<HTMLTextAreaElement>("dismiss-note").value,
  };
  await whileBusy("dismiss-form", async () => {
    const failed = await refusal(() => clients.suggestions.dismissSuggestion(request));
    if (failed === undefined) closeDialog("dismiss-dialog");
    else byId("dismiss-error").textContent = failed.rawMessage;
  });
}

/** Runs `work` with the form's submit button disabled, so one click sends one call. */
async function whileBusy(formId: string, work: () => Promise<void>): Promise<void> {
  const submit = byId(formId).querySelector<HTMLButtonElement>('button[type="submit"]');
  if (submit !== null) submit.disabled = true;
  try {
    await work();
  } finally {
    if (submit !== null) submit.disabled = false;
  }
}

function closeDialog(id: string): void {
  byId<HTMLDialogElement>(id).close();
}

/** Shows a started suggestion's chat: GetChat on the embedded host, or what the app sees. */
async function viewChat(s: Suggestion): Promise<void> {
  const section = byId("started");
  const body = byId("started-body");
  section.hidden = false;
  body.textContent = `Loading chat ${s.chatId}…`;
  let chat: Awaited<ReturnType<typeof clients.local.getChat>>["chat"];
  let why = state.hostDenied;
  if (why === undefined) {
    const failed = await refusal(async () => {
      chat = (await clients.local.getChat({ chatId: s.chatId })).chat;
    });
    why = failed?.rawMessage;
    if (failed?.code === Code.PermissionDenied) state.hostDenied = failed.rawMessage;
  }
  if (chat !== undefined) replaceChildren(body, chatPanel(chat));
  else replaceChildren(body, chatFromSuggestion(s, why ?? "no chat answered"));
  section.focus();
}

/**
 * Watches a workspace's inbox with the SDK's watch, reconnecting as the chat's watch does;
 * a refusal (a workspace this credential is not granted, an inbox the service does not
 * serve) is shown with the service's message.
 */
async function openInbox(workspaceId: string): Promise<void> {
  state.inboxWatch?.abort();
  const watch = new AbortController();
  state.inboxWatch = watch;
  const inboxStatus = byId("inbox-status");
  const say = (text: string) => {
    if (state.inboxWatch === watch) inboxStatus.textContent = text;
  };
  say(`Watching workspace ${workspaceId}…`);
  let open: number | undefined;
  const live = () => {
    if (open !== undefined) say(`Workspace ${workspaceId}: ${open} open. Live.`);
  };
  try {
    for await (const page of clients.suggestions.watchWorkspaceSuggestions(
      { workspaceId },
      {
        signal: watch.signal,
        onReconnecting: ({ reason }) =>
          say(`Workspace ${workspaceId}: ${endReason(reason)}; reconnecting…`),
        onConnected: live,
      },
    )) {
      open = page.suggestions.length;
      live();
      const entries = page.suggestions.map((s) => inboxEntry(s, (id) => void openChat(id)));
      replaceChildren(byId("inbox-list"), entries);
    }
  } catch (err) {
    if (watch.signal.aborted || isAbort(err)) return;
    const error = ConnectError.from(err);
    if (error.code === Code.Unauthenticated) {
      void enter();
      return;
    }
    byId("inbox-list").replaceChildren();
    say(error.rawMessage);
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
for (const [form, submit] of [
  ["start-form", submitStart],
  ["dismiss-form", submitDismiss],
] as const) {
  byId<HTMLFormElement>(form).addEventListener("submit", (event) => {
    event.preventDefault();
    void submit();
  });
}
for (const dialog of document.querySelectorAll("dialog")) {
  // Closed by Cancel, by Escape, or after its call succeeded.
  dialog.addEventListener("close", () => {
    state.dialogFor = undefined;
  });
  for (const button of dialog.querySelectorAll("[data-close]")) {
    button.addEventListener("click", () => dialog.close());
  }
}
// A link to `#chat=<id>` opens that chat (the page writes the hash of the chat it shows).
window.addEventListener("hashchange", () => {
  const id = new URLSearchParams(location.hash.slice(1)).get("chat");
  if (id && !byId("app").hidden) void openChat(id);
});
byId("sign-out").addEventListener("click", () => {
  tokenStore.clear();
  location.reload();
});
void enter();
