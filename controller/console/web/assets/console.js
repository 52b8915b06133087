// Live figures of the console's environments page: one server-sent event stream, no polling.
const parser = new DOMParser();

function update(data) {
  for (const [token, share] of Object.entries(data.shares ?? {})) {
    const chart = document.querySelector(`[data-chart="${CSS.escape(token)}"]`);
    if (chart) {
      const svg = parser.parseFromString(share.svg, 'image/svg+xml').documentElement;
      chart.replaceChildren(document.importNode(svg, true));
    }
    const summary = document.querySelector(`[data-summary="${CSS.escape(token)}"]`);
    if (summary) summary.textContent = share.summary;
  }
  for (const [envZId, env] of Object.entries(data.environments ?? {})) {
    const state = document.querySelector(`[data-env="${CSS.escape(envZId)}"]`);
    if (state) {
      state.textContent = env.online ? 'online' : 'offline';
      state.className = `state ${env.online ? 'online' : 'offline'}`;
    }
    const seen = document.querySelector(`[data-seen="${CSS.escape(envZId)}"]`);
    if (seen && env.lastSeen) seen.textContent = env.lastSeen;
  }
}

if (document.querySelector('[data-env]')) {
  const events = new EventSource('/console/events');
  events.addEventListener('update', (event) => update(JSON.parse(event.data)));
}
