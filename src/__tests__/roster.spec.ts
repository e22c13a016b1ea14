import type { NotebookRow } from '../api/records';
import {
  duration,
  INITIAL_STATE,
  outputScore,
  rosterQuery,
  rowKey,
  scoredPredictors,
  sortBy
} from '../class/roster';

const row = (scores: NotebookRow['scores']): NotebookRow => ({
  user: 'alice',
  notebook_path: 'lab1.ipynb',
  trajectories: 1,
  cells: 3,
  errors: 1,
  active_seconds: 65,
  first_at: '2026-01-01T00:00:00+00:00',
  last_at: '2026-01-01T01:00:00+00:00',
  scores
});

describe('the class roster', () => {
  it('asks for a day range in UTC, the last day included', () => {
    const query = rosterQuery({
      ...INITIAL_STATE,
      from: '2026-03-01',
      to: '2026-03-31',
      notebook: 'lab'
    });
    expect(query.active_after).toBe('2026-03-01T00:00:00.000Z');
    expect(query.active_before).toBe('2026-04-01T00:00:00.000Z');
    expect(query.notebook).toBe('lab');
    expect(
      rosterQuery({ ...INITIAL_STATE, from: 'nonsense' }).active_after
    ).toBe(undefined);
  });

  it('sorts a column again the other way, and numbers largest first', () => {
    const cells = sortBy({ ...INITIAL_STATE, offset: 200 }, 'cells');
    expect([cells.sort, cells.order, cells.offset]).toEqual([
      'cells',
      'desc',
      0
    ]);
    expect(sortBy(cells, 'cells').order).toBe('asc');
    expect(sortBy(INITIAL_STATE, 'user').order).toBe('desc');
    expect(sortBy(cells, 'user').order).toBe('asc');
  });

  it('reads durations and scores', () => {
    expect(duration(40)).toBe('40 s');
    expect(duration(65)).toBe('1 min');
    expect(duration(3900)).toBe('1 h 05 min');
    const scored = row([
      {
        predictor: 'copy-previous',
        context: 'full',
        task: 'output',
        n: 4,
        exact_match: 0,
        chrf: 0.2
      },
      {
        predictor: 'hybrid',
        context: 'full',
        task: 'output',
        n: 3,
        exact_match: 1,
        chrf: 0.9
      },
      {
        predictor: 'hybrid',
        context: 'full',
        task: 'next-cell',
        n: 3,
        exact_match: 0,
        chrf: 0.1
      }
    ]);
    expect(outputScore(scored, 'hybrid')).toEqual({
      predictor: 'hybrid',
      chrf: 0.9,
      n: 3
    });
    expect(outputScore(scored, '')?.predictor).toBe('copy-previous');
    expect(outputScore(row([]), '')).toBeNull();
    expect(scoredPredictors([scored, row([])])).toEqual([
      'copy-previous',
      'hybrid'
    ]);
    expect(rowKey(scored)).not.toBe(
      rowKey({ user: 'alice', notebook_path: null })
    );
  });
});
