/**
 * The runtime snapshot after a step as a sortable table, without IPython's
 * own names (`_`, `_i3`, `Out`, ...); full names and values on hover.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { h, type VirtualElement } from '@lumino/virtualdom';

import type {
  LiveStep,
  RuntimeVariable,
  RuntimeVariables
} from '../api/records';
import { formatBytes, formatSeconds } from '../live/scoreformat';

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
 * The snapshot of a step (`'loading'` while it is read; `null`: the empty
 * state), sorted as asked.
 */
export function variablesView(
  step: LiveStep | null | 'loading',
  sort: ISort,
  onSort: (key: SortKey) => void,
  trans: TranslationBundle
): VirtualElement {
  const muted = (text: string) => h.p({ className: 'themisto-Muted' }, text);
  const view = (...content: h.Child[]) =>
    h.div({ className: 'themisto-Variables' }, ...content);
  if (step === 'loading') {
    return view(muted(trans.__('loading…')));
  }
  if (!step) {
    return view(muted(trans.__('No cell recorded yet.')));
  }
  const summary = h.div(
    { className: 'themisto-Runtime-summary' },
    trans.__(
      'Step %1 · ran %2 · kernel memory %3',
      step.step,
      formatSeconds(step.execution_time),
      formatBytes(step.memory_bytes)
    )
  );
  const rows = sortVariables(step.runtime_variables, sort);
  if (rows.length === 0) {
    return view(summary, muted(trans.__('No variables.')));
  }
  const head = headerRow(sort, onSort, trans);
  const body = rows
    .slice(0, MAX_ROWS)
    .map(([name, variable]) => variableRow(name, variable));
  return view(
    summary,
    h.table(
      { className: 'themisto-Table themisto-VariablesTable' },
      h.thead(head),
      h.tbody(body)
    ),
    rows.length > MAX_ROWS
      ? muted(trans.__('and %1 more variables', rows.length - MAX_ROWS))
      : null
  );
}

/**
 * The table's header: a sort button per column, the active one marked.
 */
function headerRow(
  sort: ISort,
  onSort: (key: SortKey) => void,
  trans: TranslationBundle
): VirtualElement {
  return h.tr(
    columns(trans).map(({ key, label }) => {
      const active = sort.key === key;
      return h.th(
        {
          scope: 'col',
          'aria-sort': active
            ? sort.ascending
              ? 'ascending'
              : 'descending'
            : 'none',
          className: `themisto-Col-${key}${key === 'size' ? ' themisto-Num' : ''}`
        },
        h.button(
          {
            type: 'button',
            className: 'themisto-Sort',
            dataset: { key },
            onclick: () => onSort(key)
          },
          label,
          active ? (sort.ascending ? ' ▲' : ' ▼') : ''
        )
      );
    })
  );
}

/**
 * One variable: name, type (and shape), size (≈ when estimated), value.
 */
function variableRow(name: string, variable: RuntimeVariable): VirtualElement {
  const shape = variable.shape ? ` ${variable.shape.join('×')}` : '';
  const size =
    variable.size === null
      ? '—'
      : `${variable.size_exact ? '' : '≈'}${formatBytes(variable.size)}`;
  const type = variable.type + shape;
  return h.tr(
    {
      key: name,
      dataset: { name },
      title: `${name}: ${type} = ${variable.repr}`
    },
    h.td({ className: 'themisto-Mono', title: name }, name),
    h.td({ title: type }, type),
    h.td({ className: 'themisto-Num', title: size }, size),
    h.td(
      { className: 'themisto-Mono themisto-Repr', title: variable.repr },
      variable.repr.length > REPR_CHARS
        ? variable.repr.slice(0, REPR_CHARS) + '…'
        : variable.repr
    )
  );
}

/**
 * Where a click on a column's header leads: the other direction, or a new
 * column (sizes largest first).
 */
export function nextSort(sort: ISort, key: SortKey): ISort {
  return sort.key === key
    ? { key, ascending: !sort.ascending }
    : { key, ascending: key !== 'size' };
}
