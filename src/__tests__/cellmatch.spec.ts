import { codeHash, matchCells, recordedCells } from '../live/cellmatch';
import { StepIndex } from '../live/history';
import { NotebookLive } from '../live/store';
import { step } from './fixtures';

describe('codeHash', () => {
  it('is the server’s records.code_hash (FNV-1a of the UTF-8 bytes)', () => {
    // Values printed by themisto_ext.records.code_hash.
    expect(codeHash('')).toBe('811c9dc5');
    expect(codeHash('x = 1')).toBe('41f65c6b');
    expect(codeHash('print("héllo ✓")')).toBe('59be9641');
    expect(codeHash('df.head()\n# 日本')).toBe('c2395447');
  });
});

describe('matchCells', () => {
  const ran = (
    n: number,
    cell: string,
    code: string
  ): ReturnType<typeof step> => step(n, { cell_id: cell, code });

  it('gives each cell no step names the recorded cell that last ran its code, in order for equal code', () => {
    const index = new StepIndex('t1');
    [
      ran(1, 'old-a', 'import pandas as pd'),
      ran(2, 'old-b', 'df.head()'),
      ran(3, 'old-c', 'x = 1'),
      ran(4, 'old-d', 'df.head()'),
      ran(5, 'old-c', 'x = 2') // edited and re-run: its latest code counts
    ].forEach(s => index.addStep(s));
    const recorded = recordedCells(index.summaries());
    const aliases = matchCells(
      [
        { id: 'n1', source: 'import pandas as pd' },
        { id: 'n2', source: 'df.head()' },
        { id: 'n3', source: 'x = 1' },
        { id: 'n4', source: 'df.head()' },
        { id: 'n5', source: 'x = 2' },
        { id: 'n6', source: '' }
      ],
      recorded.values()
    );
    expect([...aliases]).toEqual([
      ['n1', 'old-a'],
      ['n2', 'old-b'],
      ['n4', 'old-d'],
      ['n5', 'old-c']
    ]);
  });

  it('leaves cells alone whose own id has steps, and never takes a recorded cell still in the notebook', () => {
    const index = new StepIndex('t1');
    [ran(1, 'a', 'x = 1'), ran(2, 'gone', 'x = 1')].forEach(s =>
      index.addStep(s)
    );
    const aliases = matchCells(
      [
        { id: 'a', source: 'x = 1' },
        { id: 'new', source: 'x = 1' }
      ],
      recordedCells(index.summaries()).values()
    );
    expect([...aliases]).toEqual([['new', 'gone']]);
  });
});

describe('NotebookLive.recognize', () => {
  it('finds a reloaded nbformat 4.4 notebook’s steps by code, current and earlier trajectories alike', () => {
    const store = new NotebookLive('nb.ipynb');
    store.addPastSummaries('earlier', [
      {
        step: 1,
        cell_id: 'load-1-a',
        code_hash: codeHash('a = 6'),
        execution_time: 0.1,
        memory_bytes: null,
        error: null,
        predictions: []
      }
    ]);
    store.addSteps([
      step(1, { cell_id: 'load-1-b', code: 'b = a * 7\nb' }),
      step(2, { cell_id: 'load-1-c', code: 'print(b + 1)' })
    ]);
    const cells = [
      { id: 'load-2-a', source: 'a = 6' },
      { id: 'load-2-b', source: 'b = a * 7\nb' },
      { id: 'load-2-c', source: 'print(b + 1)' }
    ];
    expect(store.cellStep('load-2-b')).toBeNull();
    store.recognize(cells);
    expect(store.cellStep('load-2-a')).toMatchObject({
      trajectoryId: 'earlier',
      current: false,
      summary: { step: 1 }
    });
    expect(store.cellStep('load-2-b')?.summary.step).toBe(1);
    expect(store.cellStep('load-2-c')?.summary.step).toBe(2);
    expect(store.lastRunCell).toBe('load-2-c');
    // The user edits a cell: its code no longer is what ran.
    store.recognize([cells[0], { ...cells[1], source: 'b = 0' }, cells[2]]);
    expect(store.cellStep('load-2-b')).toBeNull();
  });
});
