import { html, type Html } from './html.ts';

/**
 * A titled section holding a table (column headings, one row per item) or, with no rows, a short
 * note. Headings are `<th scope="col">`; each row renders its own `<tr>` (usually with a
 * `<th scope="row">` first).
 */
export function tableSection(options: {
  readonly id: string;
  readonly title: string;
  readonly columns: readonly string[];
  readonly rows: readonly Html[];
  readonly empty: string;
}): Html {
  const { id, title, columns, rows, empty } = options;
  return html`<section aria-labelledby="${id}-h">
    <h2 id="${id}-h">${title}</h2>
    ${
      rows.length === 0
        ? html`<p class="muted">${empty}</p>`
        : html`<table id="${id}">
            <thead>
              <tr>
                ${columns.map((c) => html`<th scope="col">${c}</th>`)}
              </tr>
            </thead>
            <tbody>
              ${rows}
            </tbody>
          </table>`
    }
  </section>`;
}

/** A labelled form field: `<label for>` above its control (the control must carry `id`). */
export function field(id: string, label: string, control: Html): Html {
  return html`<div class="field"><label for="${id}">${label}</label>${control}</div>`;
}

/** A `<select>` whose options are their own values, the first one chosen; `none` adds an empty first choice. */
export function select(id: string, name: string, options: readonly string[], none?: string): Html {
  return html`<select id="${id}" name="${name}">
    ${none !== undefined ? html`<option value="">${none}</option>` : ''}${options.map((o) => html`<option>${o}</option>`)}
  </select>`;
}
