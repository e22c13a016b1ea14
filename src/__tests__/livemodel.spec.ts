import {
  parseLiveEvent,
  toPrediction,
  toPredictorsInfo,
  toStep
} from '../livemodel';
import { prediction, step } from './fixtures';

const scope = {
  trajectory_id: 't1',
  kernel_id: 'k1',
  notebook_path: 'a.ipynb'
};

describe('parseLiveEvent', () => {
  it('reads hello and trajectory events', () => {
    expect(parseLiveEvent('hello', '{"type":"hello","filters":{}}')).toEqual({
      type: 'hello'
    });
    expect(
      parseLiveEvent(
        'trajectory',
        JSON.stringify({ type: 'trajectory', ...scope, trajectory: {} })
      )
    ).toEqual({ type: 'trajectory', ...scope });
  });

  it('reads a step, filling its ids from the envelope', () => {
    const raw = { ...step(3), trajectory_id: undefined, extra: 1 };
    const event = parseLiveEvent(
      'step',
      JSON.stringify({ type: 'step', ...scope, step: raw })
    );
    expect(event?.type).toBe('step');
    if (event?.type === 'step') {
      expect(event.step.step).toBe(3);
      expect(event.step.trajectory_id).toBe('t1');
      expect(event.step.runtime_variables.x3.repr).toBe('3');
    }
  });

  it('reads predicting, prediction and scored events', () => {
    const predicting = parseLiveEvent(
      'predicting',
      JSON.stringify({
        type: 'predicting',
        ...scope,
        task: 'output',
        context: 'full',
        predictor: 'baseline',
        target_step: 4,
        cell_id: null
      })
    );
    expect(predicting).toMatchObject({
      type: 'predicting',
      task: 'output',
      context: 'full',
      target_step: 4,
      cell_id: null
    });
    const p = prediction('next-cell', 5, {
      scores: { exact_match: 1, rouge_l: 1, chrf: 1 }
    });
    for (const type of ['prediction', 'scored'] as const) {
      const event = parseLiveEvent(
        type,
        JSON.stringify({ type, ...scope, prediction: p })
      );
      expect(event).toEqual({ type, ...scope, prediction: p });
    }
  });

  it('skips malformed and unknown events', () => {
    expect(parseLiveEvent('step', 'not json')).toBeNull();
    expect(parseLiveEvent('step', '[1]')).toBeNull();
    expect(parseLiveEvent('step', '{"type":"step","step":{}}')).toBeNull();
    expect(parseLiveEvent('x', '{"type":"future-event"}')).toBeNull();
    expect(
      parseLiveEvent(
        'predicting',
        '{"type":"predicting","task":"other","target_step":1}'
      )
    ).toBeNull();
    expect(
      parseLiveEvent('prediction', '{"type":"prediction","prediction":{}}')
    ).toBeNull();
  });
});

describe('payload readers', () => {
  it('clamps scores and keeps errors', () => {
    const p = toPrediction({
      ...prediction('output', 2),
      scores: { exact_match: 0, rouge_l: 1.5, chrf: -1 },
      error: { type: 'ProviderError', message: 'rate limited' }
    });
    expect(p?.scores).toEqual({ exact_match: 0, rouge_l: 1, chrf: 0 });
    expect(p?.error).toEqual({
      type: 'ProviderError',
      message: 'rate limited'
    });
  });

  it('drops incomplete scores', () => {
    expect(
      toPrediction({ ...prediction('output', 2), scores: { rouge_l: 1 } })
        ?.scores
    ).toBeNull();
  });

  it('reads steps defensively', () => {
    const s = toStep({
      step: 1,
      runtime_variables: { a: { size: 'x' }, b: 3 }
    });
    expect(s?.runtime_variables).toEqual({
      a: { type: '?', size: null, size_exact: true, repr: '' }
    });
    expect(s?.memory_bytes).toBeNull();
    expect(toStep({ code: 'x' })).toBeNull();
  });

  it('reads the predictors', () => {
    expect(
      toPredictorsInfo({
        predictors: ['baseline', 3],
        contexts: ['none'],
        live: false
      })
    ).toEqual({ predictors: ['baseline'], contexts: ['none'], live: false });
    expect(toPredictorsInfo({ predictors: [] })).toEqual({
      predictors: [],
      contexts: [],
      live: true
    });
    expect(toPredictorsInfo({})).toBeNull();
  });
});
