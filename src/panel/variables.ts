/**
 * The runtime snapshot after a step as a sortable table, without IPython's
 * own names (`_`, `_i3`, `Out`, ...); full names and values on hover.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type {
  LiveStep,
  RuntimeVariable,
  RuntimeVariables
} from '../api/records';
import { formatBytes, formatSeconds } from '../live/scoreformat';
import { h } from './dom';

/**
 * Rows drawn at most: a namespace of thousands of names stays quick, the
 * rest is counted.
 */
export const MAX_ROWS = 200;

/**
 * Characters of a repr shown in its cell (the full repr is its tooltip).
 */
const REPR_CHARS = 160;

/**
 * Names IPython defines in every namespace: the output history (`_`, `__`,
 * `___`, `_N`, `Out`), the input history (`_i`, `_ii`, `_iii`, `_iN`,
 * `In`), `_exit_code`, `_dh`, `_oh` and the shell's exit helpers.
 */
const IPYTHON_NAMES =
  /^(_{1,3}|_i{1,3}|_i\d+|_\d+|_exit_code|_dh|_oh|In|Out|exit|quit|get_ipython)$/;

/**
 * Whether a runtime name is IPython's rather than the user's.
 */
export function isInternalName(name: string): boolean {
  return IPYTHON_NAMES.test(name);
}

export type SortKey = 'name' | 'type' | 'size' | 'repr';

export interface ISort {
  key: SortKey;
  ascending: boolean;
}

type Row = [string, RuntimeVariable];

/**
 * Sort snapshot rows; unknown sizes sort last either way.
 */
export function sortVariables(variables: RuntimeVariables, sort: ISort): Row[] {
  const rows = Object.entries(variables).filter(
    ([name]) => !isInternalName(name)
  );
  const sign = sort.ascending ? 1 : -1;
  const text = (row: Row): string =>
    sort.key === 'name'
      ? row[0]
      : sort.key === 'type'
        ? row[1].type
        : row[1].repr;
  rows.sort((a, b) => {
    if (sort.key === 'size') {
      const sa = a[1].size;
      const sb = b[1].size;
      if (sa === null || sb === null) {
        return sa === sb ? 0 : sa === null ? 1 : -1;
      }
      return sign * (sa - sb) || a[0].localeCompare(b[0]);
    }
    return sign * text(a).localeCompare(text(b)) || a[0].localeCompare(b[0]);
  });
  return rows;
}

function columns(
  trans: TranslationBundle
): ReadonlyArray<{ key: SortKey; label: string }> {
  return [
    { key: 'name', label: trans.__('Name') },
    { key: 'type', label: trans.__('Type') },
    { key: 'size', label: trans.__('Size') },
    { key: 'repr', label: trans.__('Value') }
  ];
}

/**
 * The snapshot view; keeps its sort order across steps.
 */
export class VariablesView {
  constructor(private readonly _trans: TranslationBundle) {}

  readonly node = h('div', { class: 'themisto-Variables' });

  get sort(): ISort {
    return this._sort;
  }

  /**
   * Say that a step's snapshot is being read.
   */
  loading(): void {
    this._step = null;
    this.node.replaceChildren(
      h('p', { class: 'themisto-Muted' }, this._trans.__('loading…'))
    );
  }

  /**
   * Draw the snapshot of a step (or the empty state).
   */
  render(step: LiveStep | null): void {
    const trans = this._trans;
    this._step = step;
    this.node.replaceChildren();
    if (!step) {
      this.node.append(
        h('p', { class: 'themisto-Muted' }, trans.__('No cell recorded yet.'))
      );
      return;
    }
    this.node.append(
      h(
        'div',
        { class: 'themisto-Runtime-summary' },
        trans.__(
          'Step %1 · ran %2 · kernel memory %3',
          step.step,
          formatSeconds(step.execution_time),
          formatBytes(step.memory_bytes)
        )
      )
    );
    const rows = sortVariables(step.runtime_variables, this._sort);
    if (rows.length === 0) {
      this.node.append(
        h('p', { class: 'themisto-Muted' }, trans.__('No variables.'))
      );
      return;
    }
    const head = h(
      'tr',
      {},
      ...columns(trans).map(({ key, label }) => {
        const active = this._sort.key === key;
        const th = h(
          'th',
          {
            scope: 'col',
            'aria-sort': active
              ? this._sort.ascending
                ? 'ascending'
                : 'descending'
              : 'none',
            class: `themisto-Col-${key}${key === 'size' ? ' themisto-Num' : ''}`
          },
          h(
            'button',
            { type: 'button', class: 'themisto-Sort', 'data-key': key },
            label,
            active ? (this._sort.ascending ? ' ▲' : ' ▼') : ''
          )
        );
        th.firstElementChild?.addEventListener('click', () =>
          this._sortBy(key)
        );
        return th;
      })
    );
    const body = h('tbody');
    for (const [name, variable] of rows.slice(0, MAX_ROWS)) {
      const shape = variable.shape ? ` ${variable.shape.join('×')}` : '';
      const size =
        variable.size === null
          ? '—'
          : `${variable.size_exact ? '' : '≈'}${formatBytes(variable.size)}`;
      const type = variable.type + shape;
      body.append(
        h(
          'tr',
          { 'data-name': name, title: `${name}: ${type} = ${variable.repr}` },
          h('td', { class: 'themisto-Mono', title: name }, name),
          h('td', { title: type }, type),
          h('td', { class: 'themisto-Num', title: size }, size),
          h(
            'td',
            { class: 'themisto-Mono themisto-Repr', title: variable.repr },
            variable.repr.length > REPR_CHARS
              ? variable.repr.slice(0, REPR_CHARS) + '…'
              : variable.repr
          )
        )
      );
    }
    this.node.append(
      h(
        'table',
        { class: 'themisto-Table themisto-VariablesTable' },
        h('thead', {}, head),
        body
      )
    );
    if (rows.length > MAX_ROWS) {
      this.node.append(
        h(
          'p',
          { class: 'themisto-Muted' },
          trans.__('and %1 more variables', rows.length - MAX_ROWS)
        )
      );
    }
  }

  private _sortBy(key: SortKey): void {
    this._sort =
      this._sort.key === key
        ? { key, ascending: !this._sort.ascending }
        : { key, ascending: key !== 'size' };
    this.render(this._step);
  }

  private _sort: ISort = { key: 'name', ascending: true };
  private _step: LiveStep | null = null;
}
