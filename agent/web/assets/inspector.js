// The request inspector of one share: the live list, filters, one request in full, replay.
import { announce, bytes, el, live, send } from './kit.js';

const share = document.getElementById('filters').dataset.share;
const tbody = document.querySelector('#requests tbody');
const detail = document.getElementById('detail');
const filters = document.getElementById('filters');
let requests = [];
let selected;

function matches(r) {
  const status = filters.elements.status.value;
  const path = filters.elements.path.value;
  if (status !== '' && String(r.status).charAt(0) !== status && !(status === '0' && r.status === 0)) return false;
  return path === '' || r.path.includes(path);
}

function statusClass(status) {
  if (status === 0 || status >= 500) return 'bad';
  if (status >= 400) return 'warn';
  return 'ok';
}

function row(r) {
  const open = el('a', { href: `#r${r.id}`, 'data-id': r.id }, r.path);
  const tr = el(
    'tr',
    { 'data-id': r.id, class: r.id === selected ? 'selected' : undefined },
    el('td', {}, new Date(r.at).toLocaleTimeString()),
    el('td', { class: 'mono' }, r.method),
    el('td', { class: 'mono' }, open),
    el('td', { class: statusClass(r.status) }, r.status === 0 ? 'none' : r.status),
    el('td', {}, `${r.durationMs} ms`),
    el('td', {}, bytes(r.size)),
    el('td', {}, r.identity?.email ?? ''),
  );
  return tr;
}

function render() {
  const shown = requests.filter(matches);
  tbody.replaceChildren(...shown.map(row));
  document.getElementById('count').textContent = `(${shown.length} of ${requests.length})`;
}

async function load() {
  const response = await fetch(`/api/shares/${share}/requests`, { credentials: 'same-origin' });
  if (response.ok) requests = (await response.json()).requests;
  render();
}

function headersTable(caption, headers) {
  return el(
    'table',
    {},
    el('caption', { class: 'muted' }, caption),
    el(
      'tbody',
      {},
      headers.map(([name, value]) =>
        el('tr', {}, el('th', { scope: 'row', class: 'mono' }, name), el('td', { class: 'mono' }, value)),
      ),
    ),
  );
}

function bodyView(label, body) {
  if (body.size === 0) return el('p', { class: 'muted' }, `${label}: empty`);
  if (body.binary) return el('p', {}, `${label}: binary, ${bytes(body.size)}`);
  const note = body.truncated ? ` (first ${bytes(body.text.length)} of ${bytes(body.size)})` : '';
  return el('div', {}, el('p', {}, `${label}${note}`), el('pre', {}, body.text));
}

function responseView(title, r) {
  return el(
    'section',
    { class: 'panel', 'aria-label': title },
    el(
      'h3',
      {},
      title,
      ' ',
      el('span', { class: statusClass(r.status) }, r.status === 0 ? 'no answer' : r.status),
      ` · ${r.durationMs} ms`,
    ),
    headersTable('Response headers', r.responseHeaders),
    bodyView('Response body', r.responseBody),
  );
}

function replayForm(r) {
  const headerText = r.requestHeaders.map(([n, v]) => `${n}: ${v}`).join('\n');
  const form = el(
    'form',
    { id: 'replay', class: 'panel' },
    el('h3', {}, 'Replay to the backend'),
    el(
      'div',
      { class: 'row' },
      el(
        'div',
        { class: 'field' },
        el('label', { for: 'r-method' }, 'Method'),
        el('input', { id: 'r-method', name: 'method', value: r.method, size: 7 }),
      ),
      el(
        'div',
        { class: 'field' },
        el('label', { for: 'r-path' }, 'Path'),
        el('input', { id: 'r-path', name: 'path', value: r.path, size: 40 }),
      ),
    ),
    el(
      'div',
      { class: 'field' },
      el('label', { for: 'r-headers' }, 'Headers'),
      el('textarea', { id: 'r-headers', name: 'headers' }, headerText),
    ),
    el(
      'div',
      { class: 'field' },
      el('label', { for: 'r-body' }, 'Body (leave as is to resend the recorded one)'),
      el('textarea', { id: 'r-body', name: 'body' }, r.requestBody.text ?? ''),
    ),
    el('button', { type: 'submit', class: 'primary' }, 'Replay'),
    el('p', { class: 'error', 'data-error': true, role: 'alert' }),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const edits = {
      method: form.elements.method.value,
      path: form.elements.path.value,
      headers: form.elements.headers.value,
    };
    if (!r.requestBody.binary && !r.requestBody.truncated) edits.body = form.elements.body.value;
    else if (form.elements.body.value !== '') edits.body = form.elements.body.value;
    const result = await send('POST', `/api/shares/${share}/requests/${r.id}/replay`, edits);
    const errorBox = form.querySelector('[data-error]');
    errorBox.textContent = result.ok ? '' : result.data.error;
    if (!result.ok) return;
    document
      .getElementById('compare')
      .replaceChildren(responseView('Recorded response', r), responseView('Replayed response', result.data));
    announce(`Replayed: ${result.data.status}`, statusClass(result.data.status));
  });
  return form;
}

async function show(id) {
  const response = await fetch(`/api/shares/${share}/requests/${id}`, { credentials: 'same-origin' });
  if (!response.ok) return announce('That request is no longer kept', 'bad');
  const r = await response.json();
  selected = r.id;
  render();
  detail.replaceChildren(
    el('h2', { id: 'detail-h' }, `${r.method} ${r.path}`),
    el(
      'p',
      {},
      r.identity ? `Visitor: ${r.identity.email ?? ''} (${r.identity.provider ?? ''})` : 'Visitor: not signed in',
    ),
    headersTable('Request headers', r.requestHeaders),
    bodyView('Request body', r.requestBody),
    el('div', { id: 'compare' }, responseView('Response', r)),
    replayForm(r),
  );
}

tbody.addEventListener('click', (event) => {
  const link = event.target.closest('a[data-id]');
  if (!link) return;
  event.preventDefault();
  show(Number(link.dataset.id));
});
filters.addEventListener('input', render);
filters.addEventListener('submit', (event) => event.preventDefault());

live(
  `/events?share=${encodeURIComponent(share)}`,
  {
    request: (r) => {
      requests.unshift(r);
      requests.length = Math.min(requests.length, Number(filters.dataset.keep) || 100);
      render();
    },
  },
  load,
);
