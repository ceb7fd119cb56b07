/** Children `h` accepts: nodes, text (never parsed as HTML), or nothing. */
export type Child = Node | string | false | null | undefined;

/**
 * Creates an element with attributes and children. Text is always a text node, so nothing a
 * suggestion says (its title, tldr, brief) can become markup: the page has no innerHTML.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Readonly<Record<string, string | boolean | undefined>> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) {
    if (child === false || child === null || child === undefined) continue;
    el.append(child);
  }
  return el;
}

/** The element with `id`, which the page's HTML declares. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`the page has no #${id}`);
  return el as T;
}

/** Replaces `parent`'s children, putting focus back on the control that had it. */
export function replaceChildren(parent: HTMLElement, children: readonly Node[]): void {
  const active = document.activeElement;
  const key = active instanceof HTMLElement ? active.dataset.focusKey : undefined;
  parent.replaceChildren(...children);
  if (key === undefined) return;
  const again = document.querySelector<HTMLElement>(`[data-focus-key="${CSS.escape(key)}"]`);
  again?.focus();
}
