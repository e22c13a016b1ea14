import { NotebookLive } from '../live/store';
import { ghostText, latestNextCell } from '../notebook/inline';
import { markerContent } from '../notebook/markers';
import { downsample, scorePlot } from '../panel/plot';
import { sortVariables } from '../panel/variables';
import { PredictionSettings } from '../settings';
import { PATH, prediction, scores, step } from './fixtures';

describe('ghost text', () => {
  it('offers the whole prediction in an empty cell, the rest while typing', () => {
    expect(ghostText('import pandas', '', 0)).toBe('import pandas');
    expect(ghostText('import pandas', '  \n', 1)).toBe('import pandas');
    expect(ghostText('import pandas', 'import', 6)).toBe(' pandas');
    expect(ghostText('import pandas', 'import', 3)).toBeNull();
    expect(ghostText('import pandas', 'print', 5)).toBeNull();
  });

  it('takes the latest next-cell prediction of the first shown column', () => {
    const store = new NotebookLive(PATH);
    const settings = new PredictionSettings();
    const live = {
      predictors: {
        predictors: ['baseline'],
        contexts: ['none', 'full'],
        live: true
      }
    };
    expect(latestNextCell(store, live, settings)).toBeNull();
    store.addSteps([step(1)]);
    store.addPredictions([
      prediction('next-cell', 2, { context: 'full', answer: 'b = 2' }),
      prediction('next-cell', 2, { context: 'none', answer: '' })
    ]);
    expect(latestNextCell(store, live, settings)).toBe('b = 2');
    // A prediction for a step already run is stale.
    store.addSteps([step(2)]);
    expect(latestNextCell(store, live, settings)).toBeNull();
  });
});

describe('markerContent', () => {
  it('shows the chosen score of the first column and all in the title', () => {
    const slot = (context: 'none' | 'full', value: number) => ({
      task: 'output' as const,
      targetStep: 3,
      predictor: 'baseline',
      context,
      cellId: 'c3',
      state: 'done' as const,
      prediction: prediction('output', 3, { context, scores: scores(value) })
    });
    const content = markerContent(
      [slot('none', 0.4), slot('full', 0.9)],
      'rouge_l'
    );
    expect(content?.text).toBe('RL 0.40');
    expect(content?.value).toBe(0.4);
    expect(content?.title).toContain(
      'baseline · full (step 3): EM 0.00 · ROUGE-L 0.90 · ChrF 0.90'
    );
    expect(markerContent([], 'chrf')).toBeNull();
  });
});

describe('plot', () => {
  const points = Array.from({ length: 1000 }, (_, i) => ({
    step: i + 1,
    scores: scores(i % 2)
  }));

  it('averages long series into buckets', () => {
    const out = downsample(points, 'rouge_l', 100);
    expect(out).toHaveLength(100);
    expect(out[0]).toEqual({ step: 10, value: 0.5 });
    expect(downsample(points.slice(0, 3), 'chrf', 100)).toHaveLength(3);
  });

  it('draws one line per series', () => {
    const node = scorePlot(
      [
        { label: 'a', points },
        { label: 'b', points: points.slice(0, 1) }
      ],
      'rouge_l',
      'ROUGE-L'
    );
    expect(node.querySelectorAll('polyline')).toHaveLength(1);
    expect(node.querySelectorAll('circle')).toHaveLength(2);
    expect(node.getAttribute('aria-label')).toBe('ROUGE-L');
  });
});

describe('sortVariables', () => {
  const variables = {
    b: { type: 'int', size: 28, size_exact: true, repr: '2' },
    a: { type: 'list', size: null, size_exact: false, repr: '[1]' },
    c: { type: 'DataFrame', size: 4096, size_exact: true, repr: 'df' }
  };

  it('sorts by each column, unknown sizes last', () => {
    const names = (key: 'name' | 'type' | 'size' | 'repr', ascending = true) =>
      sortVariables(variables, { key, ascending }).map(([name]) => name);
    expect(names('name')).toEqual(['a', 'b', 'c']);
    expect(names('name', false)).toEqual(['c', 'b', 'a']);
    expect(names('type')).toEqual(['c', 'b', 'a']);
    expect(names('size')).toEqual(['b', 'c', 'a']);
    expect(names('size', false)).toEqual(['c', 'b', 'a']);
  });
});
