import { nullTranslator } from '@jupyterlab/translation';

import type { PredictionSummary, StepSummary } from '../api/records';
import {
  errorReason,
  isMissed,
  isModelProcessError,
  noPredictionReason
} from '../live/reasons';
import { NotebookLive } from '../live/store';
import { cellView } from '../notebook/cellview';
import {
  ghostText,
  latestNextCell,
  PausedCompleter,
  StreamedSuggestions
} from '../notebook/inline';
import { downsample, scorePlot } from '../panel/svgplot';
import { sortVariables } from '../panel/variables';
import { PredictionSettings } from '../settings';
import { PATH, prediction, predictorsInfo, scores, step } from './fixtures';

const trans = nullTranslator.load('themisto_ext');

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
      predictors: predictorsInfo({ contexts: ['none', 'full'] })
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

describe('the completer of a cell being typed', () => {
  const asked: string[][] = [];
  const aborted: string[] = [];
  const completer = (answer: string | null | Error, pause = 5) =>
    new PausedCompleter(async (_kernel, before, after, signal) => {
      asked.push([before, after]);
      signal.addEventListener('abort', () => aborted.push(before));
      if (answer instanceof Error) {
        throw answer;
      }
      // an answer takes a while, as a model's does
      await new Promise(resolve => setTimeout(resolve, pause));
      return answer;
    }, 5);

  beforeEach(() => {
    asked.length = 0;
    aborted.length = 0;
  });

  it('asks once typing pauses, for the latest text only', async () => {
    const c = completer('by("key").sum()');
    const older = c.rest('k', 'df.gr', 5, null);
    const newer = c.rest('k', 'df.grou', 7, null);
    await expect(older).resolves.toBeNull();
    await expect(newer).resolves.toBe('by("key").sum()');
    expect(asked).toEqual([['df.grou', '']]);
  });

  it('sends the text before and after the cursor, anywhere in the cell', async () => {
    await expect(
      completer('mean()').rest('k', 'x = df.\nprint(x)', 7, null)
    ).resolves.toBe('mean()');
    expect(asked).toEqual([['x = df.', '\nprint(x)']]);
  });

  it('aborts a request under way at the next keystroke', async () => {
    const c = completer('sum()', 200);
    const older = c.rest('k', 'df.s', 4, null);
    await new Promise(resolve => setTimeout(resolve, 50)); // sent, not answered
    expect(asked).toEqual([['df.s', '']]);
    const newer = c.rest('k', 'df.su', 5, null);
    await expect(older).resolves.toBeNull();
    expect(aborted).toEqual(['df.s']);
    await expect(newer).resolves.toBe('sum()');
  });

  it('offers nothing blank, failed, or making the cell just run', async () => {
    await expect(completer('x').rest('k', '  ', 2, null)).resolves.toBeNull();
    await expect(completer('x').rest('k', '  df', 1, null)).resolves.toBeNull();
    expect(asked).toEqual([]);
    await expect(
      completer(new Error('429')).rest('k', 'df.', 3, null)
    ).resolves.toBeNull();
    await expect(completer(null).rest('k', 'df.', 3, null)).resolves.toBeNull();
    await expect(
      completer('head()').rest('k', 'df.', 3, 'df.head()\n')
    ).resolves.toBeNull();
    await expect(
      completer('head(').rest('k', 'df.)', 3, 'df.head()')
    ).resolves.toBeNull();
    await expect(
      completer('tail()').rest('k', 'df.', 3, 'df.head()')
    ).resolves.toBe('tail()');
  });
});

describe('a completion streamed as the model writes', () => {
  it('hands over the text so far, only while no newer keystroke came', async () => {
    const partials: string[] = [];
    let grow: (text: string) => void = () => undefined;
    let finish: (text: string) => void = () => undefined;
    const c = new PausedCompleter(
      (_kernel, _before, _after, _signal, onText) => {
        grow = onText;
        return new Promise(resolve => (finish = resolve));
      },
      5
    );
    const answer = c.rest('k', 'df.', 3, 'df.head()', t => partials.push(t));
    await new Promise(resolve => setTimeout(resolve, 30)); // the pause
    grow('he');
    grow('head()'); // the cell just run: not shown
    grow('describe');
    void c.rest('k', 'df.d', 4, null); // a newer keystroke
    grow('describe()');
    finish('describe()');
    await expect(answer).resolves.toBeNull();
    expect(partials).toEqual(['he', 'describe']);
  });

  it('shows the first words, streams the growth, then the answer', async () => {
    const suggestions = new StreamedSuggestions();
    let grow: (text: string) => void = () => undefined;
    let finish: (text: string | null) => void = () => undefined;
    const listed = suggestions.offer(onText => {
      grow = onText;
      return new Promise(resolve => (finish = resolve));
    });
    grow('groupby(');
    const { items } = await listed;
    expect(items).toEqual([
      { insertText: 'groupby(', isIncomplete: true, token: '1' }
    ]);
    const seen: [string, boolean | undefined][] = [];
    const reading = (async () => {
      for await (const { response } of suggestions.stream('1')) {
        seen.push([response.insertText, response.isIncomplete]);
      }
    })();
    grow("groupby('city'");
    await new Promise(resolve => setTimeout(resolve, 0));
    grow("groupby('city')");
    finish("groupby('city').size()");
    await reading;
    expect(seen[seen.length - 1]).toEqual(["groupby('city').size()", false]);
    expect(seen.slice(0, -1).every(([, incomplete]) => incomplete)).toBe(true);
    // a token is streamed once; an unknown one streams nothing
    const again = [];
    for await (const update of suggestions.stream('1')) {
      again.push(update);
    }
    expect(again).toEqual([]);
  });

  it('withdraws streamed text the answer does not keep', async () => {
    const suggestions = new StreamedSuggestions();
    let finish: (text: string | null) => void = () => undefined;
    const listed = suggestions.offer(onText => {
      onText('x = 21');
      return new Promise(resolve => (finish = resolve));
    });
    const { items } = await listed;
    finish(null); // (the model wrote the cell just run)
    const seen: string[] = [];
    for await (const { response } of suggestions.stream(items[0].token!)) {
      seen.push(response.insertText);
    }
    expect(seen).toEqual(['']);
  });

  it('lists a whole answer that came before any text', async () => {
    const suggestions = new StreamedSuggestions();
    await expect(suggestions.offer(async () => 'sum()')).resolves.toEqual({
      items: [{ insertText: 'sum()' }]
    });
    await expect(suggestions.offer(async () => null)).resolves.toEqual({
      items: []
    });
  });
});

describe('cellView', () => {
  const combos = [
    { predictor: 'baseline', context: 'none' },
    { predictor: 'baseline', context: 'full' }
  ];
  const brief = (
    context: 'none' | 'full',
    extra: Partial<PredictionSummary> = {}
  ): PredictionSummary => ({
    id: `p-${context}`,
    task: 'output',
    predictor: 'baseline',
    model: 'baseline',
    context,
    scores: null,
    error: null,
    abstained: false,
    ...extra
  });
  const summary = (predictions: PredictionSummary[]): StepSummary => ({
    step: 3,
    cell_id: 'c3',
    code_hash: '00000000',
    execution_time: 1.5,
    memory_bytes: 2048,
    error: null,
    predictions
  });
  const options = {
    combos,
    score: 'rouge_l' as const,
    predicting: false,
    noPrediction: 'no predictor'
  };

  it('shows the chosen score of the first column and all in the title', () => {
    const view = cellView(
      summary([
        brief('none', { scores: scores(0.4) }),
        brief('full', { scores: scores(0.9) })
      ]),
      options,
      trans
    );
    expect(view.badge).toBe('RL 0.40');
    expect(view.state).toBe('scored');
    expect(view.value).toBe(0.4);
    expect(view.title).toContain(
      'baseline · full (step 3): EM 0.00 · ROUGE-L 0.90 · ChrF 0.90'
    );
    expect(view.title).toContain('Click to review step 3');
    expect(view.footer).toBe(
      'step 3 · 1.50 s · 2.00 KiB · output prediction: word overlap (ROUGE-L) 0.40 of 1'
    );
  });

  it('gives a cell whose predictor abstained a quiet footer, not a pill', () => {
    const none = { model: 'hybrid:m', abstained: true };
    const quiet = cellView(summary([brief('full', none)]), options, trans);
    expect(quiet.state).toBe('abstained');
    expect(quiet.badge).toBe('—');
    expect(quiet.value).toBeNull();
    expect(quiet.title).toContain('the predictor abstained');
    expect(quiet.footer).toBe(
      'step 3 · 1.50 s · 2.00 KiB · no confident output prediction'
    );
    // Another column that answered is shown.
    const mixed = cellView(
      summary([
        brief('none', none),
        brief('full', { model: 'hybrid:baseline', scores: scores(0.5) })
      ]),
      options,
      trans
    );
    expect(mixed.state).toBe('scored');
    expect(mixed.badge).toBe('RL 0.50');
  });

  it('badges no copy of the previous output: a reference is not a prediction', () => {
    const copy = { model: 'hybrid:copy-previous', scores: scores(0.2) };
    // Every shown column copied: a quiet badge, the footer says so, no score.
    const copied = cellView(
      summary([brief('none', copy), brief('full', copy)]),
      options,
      trans
    );
    expect(copied.state).toBe('copy');
    expect(copied.badge).toBe('—');
    expect(copied.value).toBeNull();
    expect(copied.title).toContain('only a copy of the previous output');
    expect(copied.footer).toBe(
      'step 3 · 1.50 s · 2.00 KiB · no output prediction (the previous output copied)'
    );
    // Still quiet before its scores came.
    expect(
      cellView(
        summary([brief('none', { ...copy, scores: null })]),
        options,
        trans
      ).state
    ).toBe('copy');
    // A column that predicted is shown, whatever its place.
    const mixed = cellView(
      summary([
        brief('none', copy),
        brief('full', { model: 'hybrid:arrays', scores: scores(0.9) })
      ]),
      options,
      trans
    );
    expect(mixed.state).toBe('scored');
    expect(mixed.badge).toBe('RL 0.90');
    // A copy that failed still says why.
    const failed = cellView(
      summary([
        brief('none', {
          ...copy,
          scores: null,
          error: { type: 'ProviderTimeoutError', message: 'no answer in 60 s' }
        })
      ]),
      options,
      trans
    );
    expect(failed.state).toBe('error');
  });

  it('says why a cell has no prediction', () => {
    const superseded = {
      type: 'PredictionSuperseded',
      message: 'the next cell started first'
    };
    const missed = cellView(
      summary([brief('none', { error: superseded })]),
      options,
      trans
    );
    expect(missed.state).toBe('missed');
    expect(missed.badge).toBe('—');
    expect(missed.title).toContain(
      'baseline · none: superseded: the next cell started first'
    );
    const failed = cellView(
      summary([
        brief('none', {
          error: { type: 'ProviderTimeoutError', message: 'no answer in 60 s' }
        })
      ]),
      options,
      trans
    );
    expect(failed.state).toBe('error');
    expect(failed.footer).toContain(
      'no output prediction: provider error: ProviderTimeoutError: no answer in 60 s'
    );
    const none = cellView(summary([]), options, trans);
    expect(none.state).toBe('none');
    expect(none.footer).toContain('no output prediction: no predictor');
    const running = cellView(
      summary([]),
      { ...options, predicting: true },
      trans
    );
    expect(running.badge).toBe('…');
    expect(running.footer).toContain('predicting…');
    expect(missed.footer).toContain(
      'no output prediction: superseded: the next cell started first'
    );
  });

  it('never says "predicting…" once the prediction has ended', () => {
    // Answered, its score not here yet: the footer says so, not "predicting…".
    const answered = cellView(summary([brief('full')]), options, trans);
    expect(answered.state).toBe('scoring');
    expect(answered.footer).toContain('output predicted, scoring…');
    expect(answered.footer).not.toContain('predicting…');
  });

  it('marks a step of an earlier kernel session as such, visibly', () => {
    const old = cellView(
      summary([brief('none', { scores: scores(0.4) })]),
      { ...options, earlier: true, predicting: true },
      trans
    );
    expect(old.earlier).toBe(true);
    expect(old.footer.startsWith('earlier kernel · step 3')).toBe(true);
    expect(old.title).toContain('From an earlier kernel session');
    // A slot of the new kernel's step of the same number is not this cell's.
    const waiting = cellView(
      summary([]),
      { ...options, earlier: true, predicting: true },
      trans
    );
    expect(waiting.state).toBe('none');
    const current = cellView(summary([]), options, trans);
    expect(current.earlier).toBe(false);
    expect(current.footer.startsWith('step 3')).toBe(true);
  });

  it('says the reasons in words', () => {
    expect(noPredictionReason(null, false, trans)).toBe('auto-predict is off');
    expect(
      noPredictionReason(
        predictorsInfo({ predictors: [], contexts: [] }),
        true,
        trans
      )
    ).toBe('no predictor');
    expect(
      errorReason({ type: 'PredictionSuperseded', message: 'other' }, trans)
    ).toBe('superseded: other');
    expect(isMissed({ type: 'ProviderError', message: '' })).toBe(false);
  });

  it("tells the model process's errors by their code, and old records by type", () => {
    expect(
      isModelProcessError({ type: 'Renamed', message: '', code: 'local-model' })
    ).toBe(true);
    expect(
      isModelProcessError({
        type: 'ModelProcessDied',
        message: '',
        code: 'provider'
      })
    ).toBe(false);
    expect(isModelProcessError({ type: 'ModelProcessHung', message: '' })).toBe(
      true
    );
    expect(isModelProcessError({ type: 'ProviderError', message: '' })).toBe(
      false
    );
    expect(isModelProcessError(undefined)).toBe(false);
  });

  it('tells a missed prediction by its error code, and old records by type', () => {
    // The code decides when there is one, whatever the class is called.
    expect(
      isMissed({ type: 'RenamedSuperseded', message: '', code: 'superseded' })
    ).toBe(true);
    expect(
      isMissed({ type: 'PredictionSuperseded', message: '', code: 'provider' })
    ).toBe(false);
    expect(
      isMissed({ type: 'ModelProcessDied', message: '', code: 'local-model' })
    ).toBe(false);
    // Records stored before codes existed: the type.
    expect(isMissed({ type: 'PredictionSuperseded', message: '' })).toBe(true);
    expect(isMissed(null)).toBe(false);
    expect(
      errorReason(
        {
          type: 'Renamed',
          message: 'the next cell started first',
          code: 'superseded'
        },
        trans
      )
    ).toBe('superseded: the next cell started first');
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

  it('draws one line per series, each point a step to click', () => {
    const shown: number[] = [];
    const node = scorePlot(
      [
        { label: 'a', points },
        { label: 'b', points: points.slice(0, 1) }
      ],
      'rouge_l',
      'ROUGE-L',
      { shown: 500, onStep: step => shown.push(step) }
    );
    expect(node.querySelectorAll('polyline')).toHaveLength(1);
    // 150 buckets of the long series, the lone point of the other.
    expect(node.querySelectorAll('circle')).toHaveLength(151);
    expect(node.getAttribute('aria-label')).toBe('ROUGE-L');
    node
      .querySelector('circle[data-step="1"]')!
      .dispatchEvent(new MouseEvent('click'));
    expect(shown).toEqual([1]);
    expect(node.querySelectorAll('.themisto-Plot-shown')).toHaveLength(1);
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
