import type { Contents } from '@jupyterlab/services';

import type { StepSummary } from '../api/records';
import { latestByCombo, StepIndex } from '../live/history';
import { ghostCellIndex, lastRunIndex } from '../notebook/cells';
import { freePath, saveStream } from '../notebook/export';
import { nextView, previousStep } from '../panel/review';
import { summarizeTraceback } from '../panel/traceback';
import { isInternalName, sortVariables } from '../panel/variables';
import { prediction, scores, step } from './fixtures';

function brief(n: number, cell: string): StepSummary {
  return {
    step: n,
    cell_id: cell,
    code_hash: '00000000',
    execution_time: 0.1,
    memory_bytes: 10,
    error: null,
    predictions: []
  };
}

describe('StepIndex', () => {
  it('merges pages read newest first with live steps, and finds each cell’s latest step', () => {
    const index = new StepIndex('t1');
    index.addSummaries([brief(3, 'a'), brief(4, 'b')]);
    index.addStep(step(5, { cell_id: 'a' }));
    index.addSummaries([brief(1, 'a'), brief(2, 'c')]);
    expect([index.first, index.last, index.size]).toEqual([1, 5, 5]);
    expect(index.latestOfCell('a')?.step).toBe(5);
    expect(index.latestOfCell('c')?.step).toBe(2);
    expect(index.latestOfCell('zzz')).toBeNull();
    expect([index.previous(3), index.next(3), index.next(5)]).toEqual([
      2,
      4,
      null
    ]);
    expect(index.previous(1)).toBeNull();
  });

  it('holds predictions until their step lands and applies scores once known', () => {
    const index = new StepIndex('t1');
    expect(index.addPrediction(prediction('output', 2))).toBe(true);
    expect(index.addPrediction(prediction('output', 2))).toBe(false);
    index.addStep(step(2));
    expect(index.get(2)?.predictions).toHaveLength(1);
    const brief2 = index.setScores('output-2-baseline-none', 2, scores(0.5));
    expect(brief2?.scores).toEqual(scores(0.5));
    // A page read before the scores came does not undo them.
    index.addSummaries([
      {
        ...brief(2, 'c2'),
        predictions: [{ ...index.get(2)!.predictions[0], scores: null }]
      }
    ]);
    expect(index.get(2)?.predictions[0].scores).toEqual(scores(0.5));
  });

  it('keeps the latest prediction per column', () => {
    const list = [
      { ...prediction('output', 1), id: 'a', scores: scores(0.1) },
      { ...prediction('output', 1), id: 'b', scores: scores(0.2) },
      { ...prediction('next-cell', 1), id: 'c' }
    ].map(p => ({ ...p, abstained: false }));
    expect(latestByCombo(list, 'output').map(p => p.id)).toEqual(['b']);
  });
});

describe('review navigation', () => {
  it('goes back from live to the latest step, forward to live again', () => {
    expect(previousStep({ mode: 'live' }, 4)).toBe(4);
    expect(previousStep({ mode: 'live' }, 0)).toBeNull();
    const at = (step: number, current = true) => ({
      mode: 'review' as const,
      step,
      trajectory: 't',
      current
    });
    expect(previousStep(at(2), 4)).toBe(1);
    expect(previousStep(at(1), 4)).toBeNull();
    expect(nextView(at(2), 4)).toEqual(at(3));
    expect(nextView(at(4), 4)).toEqual({ mode: 'live' });
    // An earlier kernel's last step has nothing live after it.
    expect(nextView(at(4, false), 4)).toBeNull();
  });
});

describe('summarizeTraceback', () => {
  it('finds the error line and the frame it was raised in', () => {
    const text = [
      '---------------------------------------------------------------------------',
      'ZeroDivisionError                         Traceback (most recent call last)',
      'Cell In[4], line 3',
      '      1 def f(x):',
      '      2     return 1 / x',
      '----> 3 f(0)',
      '',
      'Cell In[4], line 2, in f(x)',
      '      1 def f(x):',
      '----> 2     return 1 / x',
      '',
      'ZeroDivisionError: division by zero'
    ].join('\n');
    expect(summarizeTraceback(text, 'ZeroDivisionError')).toEqual({
      error: 'ZeroDivisionError: division by zero',
      frame: [
        'Cell In[4], line 2, in f(x)',
        '      1 def f(x):',
        '----> 2     return 1 / x'
      ].join('\n')
    });
    expect(summarizeTraceback('no error here', 'NameError')).toBeNull();
    expect(summarizeTraceback('NameError: x', 'NameError')).toEqual({
      error: 'NameError: x',
      frame: ''
    });
  });
});

describe('runtime table', () => {
  it('hides IPython’s own names', () => {
    for (const name of [
      '_',
      '__',
      '___',
      '_i',
      '_ii',
      '_i12',
      '_7',
      '_exit_code',
      'In',
      'Out'
    ]) {
      expect(isInternalName(name)).toBe(true);
    }
    for (const name of ['_private', 'df', 'In2', '_x1', 'i']) {
      expect(isInternalName(name)).toBe(false);
    }
    const variable = { type: 'int', size: 28, repr: '1' };
    expect(
      sortVariables(
        { x: variable, _: variable, _i3: variable, Out: variable },
        { key: 'name', ascending: true }
      ).map(([name]) => name)
    ).toEqual(['x']);
  });
});

describe('where the next cell goes', () => {
  const notebook = (cells: Array<[string, string, string]>) =>
    ({
      widgets: cells.map(([id, type, source]) => ({
        model: { id, type, sharedModel: { getSource: () => source } }
      }))
    }) as unknown as Parameters<typeof ghostCellIndex>[0];

  it('is the empty code cell right below the last cell run', () => {
    const nb = notebook([
      ['top', 'code', ''],
      ['run', 'code', 'x = 1'],
      ['below', 'code', '  '],
      ['md', 'markdown', '']
    ]);
    expect(lastRunIndex(nb, 'run')).toBe(1);
    expect(ghostCellIndex(nb, 'run')).toBe(2);
    expect(ghostCellIndex(nb, 'below')).toBeNull();
    expect(ghostCellIndex(nb, null)).toBeNull();
    expect(lastRunIndex(nb, 'md')).toBeNull();
    expect(lastRunIndex(nb, 'gone')).toBeNull();
  });
});

describe('export beside the notebook', () => {
  it('never overwrites: the first free name', async () => {
    const taken = new Set(['dir/nb.jsonl', 'dir/nb-1.jsonl']);
    const contents = {
      get: async (path: string) => {
        if (!taken.has(path)) {
          throw new Error('404');
        }
        return {} as Contents.IModel;
      }
    };
    await expect(freePath(contents, 'dir/nb.ipynb', 'nb.jsonl')).resolves.toBe(
      'dir/nb-2.jsonl'
    );
    await expect(freePath(contents, 'top.ipynb', 'top.jsonl')).resolves.toBe(
      'top.jsonl'
    );
  });

  it('writes a streamed export in chunks, or in one request when small', async () => {
    const saved: Array<Partial<Contents.IModel>> = [];
    const contents = {
      save: async (path: string, model?: Partial<Contents.IModel>) => {
        saved.push(model ?? {});
        return {} as Contents.IModel;
      }
    };
    // A streamed body, read chunk by chunk.
    const body = (parts: string[]) =>
      ({
        body: {
          getReader: () => ({
            read: async () => {
              const part = parts.shift();
              return part === undefined
                ? { done: true, value: undefined }
                : { done: false, value: new TextEncoder().encode(part) };
            }
          })
        }
      }) as unknown as Response;
    await expect(
      saveStream(contents, 'a.jsonl', body(['{"a":1}\n', '{"b":2}\n']), 10)
    ).resolves.toBe(16);
    expect(saved.map(m => [m.chunk, m.content])).toEqual([
      [1, '{"a":1}\n{"'],
      [-1, 'b":2}\n']
    ]);
    saved.length = 0;
    await saveStream(contents, 'b.jsonl', body(['é\n']), 10);
    expect(saved).toEqual([{ type: 'file', format: 'text', content: 'é\n' }]);
  });
});
