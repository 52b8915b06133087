// The agent's overview: forms through the page's API, the tables reloaded live on every change.
import { announce, formValues, live, send, submitWith } from './kit.js';

const state = document.getElementById('state');

/** Replaces the tables with the server's fresh rendering (one renderer, on the server). */
async function reload() {
  const response = await fetch(state.dataset.live, { credentials: 'same-origin' });
  if (!response.ok) return;
  const doc = new DOMParser().parseFromString(await response.text(), 'text/html');
  state.replaceChildren(...doc.body.childNodes);
}

function resultOf(token) {
  return state.querySelector(`[data-result="${CSS.escape(token)}"]`);
}

state.addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-action]');
  if (!button) return;
  const token = button.dataset.token;
  if (button.dataset.action === 'stop-share') {
    const result = await send('POST', `/api/shares/${token}/stop`);
    announce(result.ok ? `Share ${token} stopped` : result.data.error, result.ok ? 'ok' : 'bad');
  } else if (button.dataset.action === 'stop-access') {
    const result = await send('POST', `/api/accesses/${token}/stop`);
    announce(result.ok ? `Access ${token} stopped` : result.data.error, result.ok ? 'ok' : 'bad');
  } else if (button.dataset.action === 'healthcheck') {
    const result = await send('POST', `/api/shares/${token}/healthcheck`, {
      verb: 'GET',
      path: '/',
      expectedStatus: '200',
    });
    const text = result.ok ? healthText(result.data) : result.data.error;
    const output = resultOf(token);
    if (output) output.textContent = text;
    announce(`${token}: ${text}`, result.ok && result.data.healthy ? 'ok' : 'bad');
  }
});

function healthText(data) {
  return data.healthy ? 'healthy' : `unhealthy: ${data.error ?? data.status ?? 'no answer'}`;
}

submitWith(document.getElementById('new-share'), 'POST', '/api/shares', (data) => {
  announce(`Share ${data.token} created: ${data.frontendEndpoints.join(' ') || 'private'}`, 'ok');
  document.getElementById('new-share').reset();
});
submitWith(document.getElementById('new-access'), 'POST', '/api/accesses', (data) => {
  announce(`Access ${data.token} at ${data.endpoint}`, 'ok');
});
submitWith(
  document.getElementById('healthcheck'),
  'POST',
  (form) => `/api/shares/${encodeURIComponent(form.elements.token.value)}/healthcheck`,
  (data) => {
    document.getElementById('health-result').textContent = healthText(data);
  },
  (form) => {
    const values = formValues(form);
    delete values.token;
    return values;
  },
);

live('/events', { changed: reload }, reload);
