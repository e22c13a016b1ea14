import {
  DEFAULT_SETTINGS,
  PredictionSettings,
  readSettings,
  visibleCombos
} from '../settings';

describe('readSettings', () => {
  it('gives the defaults for nothing', () => {
    expect(readSettings(undefined)).toEqual(DEFAULT_SETTINGS);
    expect(readSettings({})).toEqual(DEFAULT_SETTINGS);
  });

  it('reads valid values and ignores invalid ones', () => {
    expect(
      readSettings({
        autoPredict: false,
        predictors: ['baseline', 'baseline', '', 3],
        contexts: 'full',
        layout: 'stacked',
        markerScore: 'chrf',
        showCellMarkers: 'no',
        showCellFooter: false,
        ghostText: false,
        speculate: false,
        speculationPause: 100
      })
    ).toEqual({
      autoPredict: false,
      predictors: ['baseline'],
      contexts: [],
      layout: 'stacked',
      markerScore: 'chrf',
      showCellMarkers: true,
      showCellFooter: false,
      ghostText: false,
      speculate: false,
      speculationPause: 1500 // below the 200 ms minimum
    });
    expect(readSettings({ speculationPause: 2500 }).speculationPause).toBe(
      2500
    );
    expect(readSettings({ speculationPause: 2.5 }).speculationPause).toBe(1500);
    expect(readSettings({ layout: 'grid', markerScore: 'bleu' })).toMatchObject(
      { layout: 'side-by-side', markerScore: 'rouge_l' }
    );
  });

  it('announces updates', () => {
    const settings = new PredictionSettings();
    const seen: boolean[] = [];
    settings.changed.connect((_, value) => seen.push(value.autoPredict));
    settings.update({ autoPredict: false });
    expect(settings.settings.autoPredict).toBe(false);
    expect(seen).toEqual([false]);
  });
});

describe('visibleCombos', () => {
  const server = {
    predictors: ['baseline', 'local'],
    contexts: ['none', 'full']
  };

  it('crosses the server predictors and contexts, then adds seen ones', () => {
    const combos = visibleCombos(
      server,
      [
        { predictor: 'old', context: 'none' },
        { predictor: 'baseline', context: 'none' }
      ],
      { predictors: [], contexts: [] }
    );
    expect(combos.map(c => `${c.predictor}/${c.context}`)).toEqual([
      'baseline/none',
      'baseline/full',
      'local/none',
      'local/full',
      'old/none'
    ]);
  });

  it('filters by the settings', () => {
    expect(
      visibleCombos(server, [], { predictors: ['local'], contexts: ['full'] })
    ).toEqual([{ predictor: 'local', context: 'full' }]);
    expect(visibleCombos(null, [], { predictors: [], contexts: [] })).toEqual(
      []
    );
  });
});
