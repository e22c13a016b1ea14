import {
  parseBusMessage,
  parseLiveEvent,
  toClassPage,
  toFullPrediction,
  toMe,
  toPrediction,
  toPredictorsInfo,
  toStep,
  toTrajectorySummaries
} from '../api/parse';
import { prediction, step } from './fixtures';

const scope = {
  seq: 7,
  trajectory_id: 't1',
  kernel_id: 'k1',
  notebook_path: 'a.ipynb'
};

/** A bus message's data as JSON text reads, numbered unless it says. */
function parsed(text: string): unknown {
  const value = JSON.parse(text);
  return typeof value === 'object' && value && !Array.isArray(value)
    ? { seq: 1, ...value }
    : value;
}

describe('parseBusMessage', () => {
  it('reads the live event an event bus message carries as JSON text', () => {
    const beat = { type: 'heartbeat', seq: 3, every: 10 };
    const message = {
      schema_id: 'https://themisto-ext.invalid/schemas/live-bus.schema.json',
      __timestamp__: '2026-01-01T00:00:00Z',
      type: 'heartbeat',
      event: JSON.stringify(beat)
    };
    expect(parseBusMessage(message)).toEqual(beat);
  });

  it('skips a message without a readable event', () => {
    expect(parseBusMessage({ type: 'heartbeat' })).toBeNull();
    expect(
      parseBusMessage({ type: 'heartbeat', event: '{not json' })
    ).toBeNull();
    expect(parseBusMessage({ type: 'step', event: '"a string"' })).toBeNull();
    // The event itself, not wrapped, is not what the server sends.
    expect(
      parseBusMessage({ type: 'heartbeat', seq: 1, every: 10 })
    ).toBeNull();
    expect(parseBusMessage(null)).toBeNull();
  });
});

describe('parseLiveEvent', () => {
  it('reads heartbeat and trajectory events', () => {
    const beat = { type: 'heartbeat', seq: 1, every: 10 };
    expect(parseLiveEvent(beat)).toEqual(beat);
    expect(parseLiveEvent({ ...beat, every: 0 })).toBeNull();
    // Unnumbered, it cannot tell what was missed: skipped.
    expect(parseLiveEvent({ ...beat, seq: undefined })).toBeNull();
    expect(parseLiveEvent({ ...beat, seq: 0 })).toBeNull();
    expect(parseLiveEvent({ ...beat, seq: 1.5 })).toBeNull();
    const trajectory = {
      id: 't1',
      kernel_id: 'k1',
      notebook_path: 'a.ipynb',
      started_at: '2026-01-01T00:00:00Z',
      ended_at: null,
      end_reason: null,
      restart_of: 't0',
      steps: 0,
      source: 'kernel',
      user: 'alice'
    };
    expect(
      parseLiveEvent({ type: 'trajectory', ...scope, trajectory })
    ).toEqual({ type: 'trajectory', ...scope, trajectory });
    // What the record lacks, the envelope gives.
    const partial = parseLiveEvent({
      type: 'trajectory',
      ...scope,
      trajectory: {}
    });
    expect(partial).toMatchObject({
      trajectory: { id: 't1', kernel_id: 'k1', steps: 0, restart_of: null }
    });
  });

  it('reads recording events', () => {
    const event = {
      type: 'recording',
      seq: 3,
      trajectory_id: null,
      kernel_id: 'k1',
      notebook_path: 'a.ipynb',
      recording: false,
      reason: null
    };
    expect(parseLiveEvent(event)).toEqual(event);
    expect(parseLiveEvent({ ...event, recording: 'off' })).toBeNull();
    expect(parseLiveEvent({ ...event, kernel_id: 3 })).toBeNull();
  });

  it('reads a step, filling its ids from the envelope', () => {
    // A whole step (as the REST API has it) reads as a live one.
    const raw = {
      ...step(3),
      trajectory_id: undefined,
      outputs: [],
      hash_index: '0123456789abcdef',
      extra: 1
    };
    const event = parseLiveEvent({ type: 'step', ...scope, step: raw });
    expect(event?.type).toBe('step');
    if (event?.type === 'step') {
      expect(event.step.step).toBe(3);
      expect(event.step.trajectory_id).toBe('t1');
      expect(event.step.runtime_variables.x3.repr).toBe('3');
      expect(Object.keys(event.step).sort()).toEqual(
        Object.keys(step(3)).sort()
      );
    }
  });

  it('reads predicting, prediction and scored events', () => {
    const predicting = parseLiveEvent({
      type: 'predicting',
      ...scope,
      task: 'output',
      context: 'full',
      predictor: 'baseline',
      target_step: 4,
      cell_id: null
    });
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
    expect(
      parseLiveEvent({ type: 'prediction', ...scope, prediction: p })
    ).toEqual({ type: 'prediction', ...scope, prediction: p });
    const scored = {
      type: 'scored',
      ...scope,
      prediction_id: p.id,
      task: 'next-cell',
      target_step: 5,
      reference: 'x = 5',
      scores: { exact_match: 0, rouge_l: 0.5, chrf: 0.25 }
    };
    expect(parseLiveEvent(scored)).toEqual(scored);
    expect(parseLiveEvent({ ...scored, scores: null })).toEqual({
      ...scored,
      scores: null
    });
  });

  it('keeps prompts off live predictions', () => {
    const event = parseLiveEvent({
      type: 'prediction',
      ...scope,
      prediction: {
        ...prediction('output', 2),
        prompt: { system: 's', user: 'u' },
        raw: 'raw'
      }
    });
    expect(event?.type === 'prediction' && event.prediction).not.toHaveProperty(
      'prompt'
    );
    expect(event?.type === 'prediction' && event.prediction).not.toHaveProperty(
      'raw'
    );
  });

  it('skips malformed and unknown events', () => {
    expect(parseLiveEvent('not json')).toBeNull();
    expect(parseLiveEvent(parsed('[1]'))).toBeNull();
    expect(parseLiveEvent(parsed('{"type":"step","step":{}}'))).toBeNull();
    expect(parseLiveEvent(parsed('{"type":"future-event"}'))).toBeNull();
    expect(
      parseLiveEvent(
        parsed('{"type":"predicting","task":"other","target_step":1}')
      )
    ).toBeNull();
    expect(
      parseLiveEvent(parsed('{"type":"prediction","prediction":{}}'))
    ).toBeNull();
    expect(
      parseLiveEvent({
        type: 'prediction',
        prediction: { ...prediction('output', 2), context: 'psychic' }
      })
    ).toBeNull();
    expect(
      parseLiveEvent(parsed('{"type":"scored","task":"output"}'))
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

  it('keeps a known error code and drops an unknown one', () => {
    const coded = toPrediction({
      ...prediction('output', 2),
      error: { type: 'ModelProcessDied', message: 'x', code: 'local-model' }
    });
    expect(coded?.error?.code).toBe('local-model');
    const unknown = toPrediction({
      ...prediction('output', 2),
      error: { type: 'X', message: 'x', code: 'from-the-future' }
    });
    expect(unknown?.error).toEqual({ type: 'X', message: 'x' });
  });

  it('reads how a prediction was made', () => {
    const ahead = toPrediction({
      ...prediction('output', 2),
      speculative: true,
      ready_before_start: 2.5
    });
    expect(ahead?.speculative).toBe(true);
    expect(ahead?.ready_before_start).toBe(2.5);
    // records made before the fields existed
    const { speculative, ready_before_start, abstained, ...old } = prediction(
      'output',
      2
    );
    expect(
      speculative === false && ready_before_start === null && !abstained
    ).toBe(true);
    expect(toPrediction(old)).toMatchObject({
      speculative: false,
      ready_before_start: null,
      abstained: false
    });
    // an abstention: no answer, said so
    expect(
      toPrediction({ ...prediction('output', 2), answer: '', abstained: true })
    ).toMatchObject({ answer: '', abstained: true });
  });

  it('drops incomplete scores', () => {
    expect(
      toPrediction({ ...prediction('output', 2), scores: { rouge_l: 1 } })
        ?.scores
    ).toBeNull();
  });

  it('reads a whole prediction with its prompt', () => {
    const whole = {
      ...prediction('output', 2),
      prompt: { system: 'You predict outputs.', user: 'x = 1' },
      raw: ' 1 '
    };
    expect(toFullPrediction(whole)).toEqual(whole);
    const { prompt, raw, ...bare } = whole;
    expect(prompt && raw).toBeTruthy();
    expect(toFullPrediction(bare)).toEqual(bare);
    expect(toFullPrediction({})).toBeNull();
  });

  it('fills what a prediction lacks with neutral values', () => {
    expect(
      toPrediction({ id: 'p', task: 'output', target_step: 1 })
    ).toMatchObject({
      context: 'none',
      predictor: '?',
      model: null,
      latency: null,
      dropped_steps: 0,
      error: null,
      scores: null
    });
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
    ).toEqual({
      predictors: ['baseline'],
      contexts: ['none'],
      live: false,
      localModels: []
    });
    expect(
      toPredictorsInfo({
        predictors: ['hybrid:openai:m'],
        completer: 'hybrid:openai:m'
      })?.completer
    ).toBe('hybrid:openai:m');
    expect(toPredictorsInfo({ predictors: [] })).toEqual({
      predictors: [],
      contexts: [],
      live: true,
      localModels: []
    });
    const off = toPredictorsInfo({
      predictors: ['hybrid'],
      local_models: [
        {
          predictor: 'hybrid',
          state: 'off',
          reason: 'died 3 times',
          pid: null
        },
        'garbage'
      ]
    });
    expect(off?.localModels).toEqual([
      { predictor: 'hybrid', state: 'off', reason: 'died 3 times' }
    ]);
    expect(toPredictorsInfo({})).toBeNull();
  });

  it('reads trajectory listings', () => {
    expect(
      toTrajectorySummaries({
        trajectories: [
          {
            id: 'a',
            kernel_id: 'k',
            steps: 2,
            source: 'kernel',
            started_at: '2026-01-01T00:00:00Z'
          },
          { kernel_id: 'k' },
          { id: 'b' }
        ]
      })
    ).toEqual([
      { id: 'a', kernel_id: 'k', steps: 2, started_at: '2026-01-01T00:00:00Z' },
      { id: 'b', kernel_id: '', steps: 0, started_at: '' }
    ]);
    expect(toTrajectorySummaries(null)).toEqual([]);
  });
});

describe('the class and the user', () => {
  it('reads a roster page and drops rows that are not rows', () => {
    const page = toClassPage({
      rows: [
        {
          user: 'alice',
          notebook_path: 'lab.ipynb',
          trajectories: 2,
          cells: 7,
          errors: 1,
          active_seconds: 90.5,
          first_at: 'a',
          last_at: 'b',
          scores: [
            {
              predictor: 'hybrid',
              context: 'full',
              task: 'output',
              n: 3,
              exact_match: 0.5,
              chrf: 0.75
            },
            { nonsense: true }
          ]
        },
        { notebook_path: 'no user' }
      ],
      total: 1,
      users: 1,
      opted_out: ['bob']
    });
    expect(page.rows).toHaveLength(1);
    expect(page.rows[0].scores).toEqual([
      {
        predictor: 'hybrid',
        context: 'full',
        task: 'output',
        n: 3,
        exact_match: 0.5,
        chrf: 0.75
      }
    ]);
    expect(page.optedOut).toEqual(['bob']);
    expect(
      toMe({ user: 'u', consent: false, capture_level: 'code', read_all: true })
    ).toEqual({
      user: 'u',
      consent: false,
      captureLevel: 'code',
      readAll: true
    });
    expect(toMe({ identity: { username: 'x' } })).toBeNull();
  });
});
