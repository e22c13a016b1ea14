import type { Notebook } from '@jupyterlab/notebook';

import { isFrontier } from '../notebook/cells';

/**
 * A notebook's cells as `isFrontier` reads them: id, type, source.
 */
function notebook(
  cells: Array<[string, 'code' | 'markdown', string]>
): Pick<Notebook, 'widgets'> {
  return {
    widgets: cells.map(([id, type, source]) => ({
      model: { id, type, sharedModel: { getSource: () => source } }
    }))
  } as unknown as Pick<Notebook, 'widgets'>;
}

describe('isFrontier', () => {
  const nb = notebook([
    ['a', 'code', 'x = 1'],
    ['m', 'markdown', '# Then'],
    ['b', 'code', 'print(x)'],
    ['c', 'code', '  \n'],
    ['d', 'markdown', 'notes']
  ]);

  it('is not after a cell whose next code cell is written (markdown between)', () => {
    expect(isFrontier(nb, 'a')).toBe(false);
  });

  it('is after a cell whose next code cell is empty, or that has none below', () => {
    expect(isFrontier(nb, 'b')).toBe(true);
    expect(isFrontier(nb, 'c')).toBe(true);
  });

  it('is where no cell is known: none run yet, or one gone', () => {
    expect(isFrontier(nb, null)).toBe(true);
    expect(isFrontier(nb, 'deleted')).toBe(true);
  });
});
