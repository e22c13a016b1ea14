/**
 * The class view's pure parts: the query a roster's state asks the server,
 * and how a row's figures read. No JupyterLab dependency (unit tested).
 */
import type { IClassQuery } from '../api/model';
import type { NotebookRow } from '../api/records';

export const PAGE_ROWS = 100;

export type RosterColumn =
  | 'user'
  | 'notebook_path'
  | 'cells'
  | 'errors'
  | 'active_seconds'
  | 'last_at'
  | 'chrf';

/**
 * What the teacher chose: filters, sort and page.
 */
export interface IRosterState {
  notebook: string;
  /** `YYYY-MM-DD`, or '' (any). */
  from: string;
  to: string;
  sort: RosterColumn;
  order: 'asc' | 'desc';
  predictor: string;
  offset: number;
}

export const INITIAL_STATE: IRosterState = {
  notebook: '',
  from: '',
  to: '',
  sort: 'user',
  order: 'asc',
  predictor: '',
  offset: 0
};

/**
 * The query of a state: a day range is taken in UTC, `to` inclusive.
 */
export function rosterQuery(state: IRosterState): IClassQuery {
  const day = (value: string, plus = 0): string | undefined => {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) {
      return undefined;
    }
    const date = new Date(`${value}T00:00:00Z`);
    date.setUTCDate(date.getUTCDate() + plus);
    return date.toISOString();
  };
  return {
    notebook: state.notebook || undefined,
    active_after: day(state.from),
    active_before: day(state.to, 1),
    sort: state.sort,
    order: state.order,
    predictor: state.predictor || undefined,
    limit: PAGE_ROWS,
    offset: state.offset
  };
}

/**
 * Sorting by a column: again on the same column turns the order round.
 */
export function sortBy(
  state: IRosterState,
  column: RosterColumn
): IRosterState {
  const order =
    state.sort === column && state.order === 'asc'
      ? 'desc'
      : state.sort === column
        ? 'asc'
        : column === 'user' || column === 'notebook_path'
          ? 'asc'
          : 'desc';
  return { ...state, sort: column, order, offset: 0 };
}

/**
 * `1 h 05 min`, `12 min`, `40 s`.
 */
export function duration(seconds: number): string {
  if (seconds < 60) {
    return `${Math.round(seconds)} s`;
  }
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) {
    return `${minutes} min`;
  }
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/**
 * The output chrF of `predictor` (the first output score when none is
 * chosen), with how many predictions it averages.
 */
export function outputScore(
  row: NotebookRow,
  predictor: string
): { predictor: string; chrf: number; n: number } | null {
  const score = row.scores.find(
    s => s.task === 'output' && (!predictor || s.predictor === predictor)
  );
  return score
    ? { predictor: score.predictor, chrf: score.chrf, n: score.n }
    : null;
}

/**
 * The predictors that have output scores in these rows, in first-seen order.
 */
export function scoredPredictors(rows: NotebookRow[]): string[] {
  const seen: string[] = [];
  for (const row of rows) {
    for (const score of row.scores) {
      if (score.task === 'output' && !seen.includes(score.predictor)) {
        seen.push(score.predictor);
      }
    }
  }
  return seen;
}

/**
 * The key of a row (a user's notebook).
 */
export function rowKey(
  row: Pick<NotebookRow, 'user' | 'notebook_path'>
): string {
  return `${row.user}\u0000${row.notebook_path ?? ''}`;
}
