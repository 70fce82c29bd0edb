// Which keys belong to the page, and which to a text field.

/** Whether keys typed now go into a text field rather than to the page. */
export function typing(target) {
  if (!(target instanceof Element)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) {
    return !["radio", "checkbox", "button", "submit", "reset", "range", "color"].includes(target.type);
  }
  return false;
}

/** Whether the keyboard is in no control at all (the page itself has the keys). */
export function onPage(target) {
  return target === document.body || target === document.documentElement || target === null;
}

/** A key press with a modifier that belongs to the browser or the system. */
export function modified(event) {
  return event.altKey || event.ctrlKey || event.metaKey;
}
