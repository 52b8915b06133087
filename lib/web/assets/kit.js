// svc's page kit, the client side: a few helpers every page's script module imports.
// No framework, no build step; DOM is built with textContent only (never innerHTML), so text from
// the server cannot become markup.

/** The session's CSRF token from `<meta name="csrf">`. */
export function csrfToken() {
  return document.querySelector('meta[name="csrf"]')?.getAttribute('content') ?? '';
}

/**
 * Sends a state-changing request with the CSRF header; resolves to `{ ok, status, data }` where
 * data is the parsed JSON answer (or `{ error }` with the answer's text).
 */
export async function send(method, url, body) {
  const response = await fetch(url, {
    method,
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-svc-csrf': csrfToken() },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    data = { error: text };
  }
  return { ok: response.ok, status: response.status, data };
}

/** `el('td', { class: 'mono' }, 'text', child)`: an element with attributes and text/element children. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Puts `text` in the page's polite live region (screen readers read it) for a few seconds. */
export function announce(text, kind = '') {
  const region = document.getElementById('announce');
  if (!region) return;
  region.className = `announce ${kind}`;
  region.textContent = text;
  clearTimeout(announce.timer);
  announce.timer = setTimeout(() => (region.textContent = ''), 6000);
}

/** The values of a form's named fields as an object; checkboxes as booleans, empty fields left out. */
export function formValues(form) {
  const values = {};
  for (const field of form.elements) {
    if (!field.name || field.disabled) continue;
    if (field.type === 'checkbox') values[field.name] = field.checked;
    else if (field.value !== '') values[field.name] = field.value;
  }
  return values;
}

/**
 * Submits `form` through {@link send} instead of navigating: `onDone(data)` on success, the error
 * text in the form's `[data-error]` element otherwise.
 */
export function submitWith(form, method, url, onDone, values = formValues) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const errorBox = form.querySelector('[data-error]');
    if (errorBox) errorBox.textContent = '';
    const button = form.querySelector('button[type=submit]');
    if (button) button.disabled = true;
    try {
      const result = await send(method, typeof url === 'function' ? url(form) : url, values(form));
      if (result.ok) onDone(result.data);
      else if (errorBox) errorBox.textContent = result.data.error ?? `failed (${result.status})`;
      else announce(result.data.error ?? `failed (${result.status})`, 'bad');
    } finally {
      if (button) button.disabled = false;
    }
  });
}

/**
 * Live updates from a server-sent events stream: `handlers` maps event names to functions of the
 * parsed data; `onOpen` runs on every (re)connection, where a page reloads its state (events sent
 * while disconnected are not replayed).
 */
export function live(url, handlers, onOpen) {
  const source = new EventSource(url);
  for (const [name, handler] of Object.entries(handlers)) {
    source.addEventListener(name, (event) => handler(JSON.parse(event.data)));
  }
  if (onOpen) source.addEventListener('open', onOpen);
  return source;
}

/** `1234` → `1.2 kB`. */
export function bytes(n) {
  if (n < 1000) return `${n} B`;
  if (n < 1e6) return `${(n / 1e3).toFixed(1)} kB`;
  return `${(n / 1e6).toFixed(1)} MB`;
}
