import {
  readKernelRecording,
  readLiveBusMessage,
  readLiveEvent,
  readPredictorsInfo,
  readTrajectory
} from '../api/readers';
import {
  localModel,
  prediction,
  predictingEvent,
  predictionEvent,
  predictorsInfo,
  recordingEvent,
  scoredEvent,
  scores,
  speculatedEvent,
  stepEvent,
  trajectory,
  writingEvent
} from './fixtures';

describe('readKernelRecording', () => {
  const valid = {
    kernel_id: 'k1',
    recording: true,
    reason: null,
    trajectory_id: null,
    steps: 2
  };

  it('accepts the API shape, with or without a reason', () => {
    expect(readKernelRecording(valid)).toEqual(valid);
    const failing = { ...valid, recording: false, reason: 'disk full' };
    expect(readKernelRecording(failing)).toEqual(failing);
    expect(readKernelRecording.problem(valid)).toBeNull();
  });

  it('refuses other values and says where they break the schema', () => {
    expect(readKernelRecording(null)).toBeNull();
    expect(readKernelRecording([])).toBeNull();
    expect(readKernelRecording({ ...valid, recording: 'yes' })).toBeNull();
    expect(readKernelRecording({ ...valid, steps: 1.5 })).toBeNull();
    expect(readKernelRecording({ ...valid, trajectory_id: 3 })).toBeNull();
    const { kernel_id: _ignored, ...missing } = valid;
    expect(readKernelRecording(missing)).toBeNull();
    const negative = { ...valid, steps: -1 };
    expect(readKernelRecording(negative)).toBeNull();
    expect(readKernelRecording.problem(negative)).toBe(
      'KernelRecording/steps: must be >= 0'
    );
    expect(readKernelRecording.problem(missing)).toContain(
      "must have required property 'kernel_id'"
    );
  });
});

describe('the test fixtures', () => {
  // They stand for what the server sends: each must pass its reader, so a
  // schema change that they miss fails here and not in a confusing spec.
  it('are records and events as the schemas have them', () => {
    const p = prediction('output', 2);
    const events = [
      stepEvent(1),
      predictingEvent('output', 2),
      writingEvent('output', 2, 'partial'),
      predictionEvent(p),
      speculatedEvent(p, '0123abcd'),
      scoredEvent(p, 'out 2', scores(1)),
      recordingEvent(true)
    ];
    for (const event of events) {
      expect(readLiveEvent.problem(event)).toBeNull();
    }
    expect(readTrajectory.problem(trajectory())).toBeNull();
    const info = predictorsInfo({
      local_models: [localModel('hybrid', 'running')]
    });
    expect(readPredictorsInfo.problem(info)).toBeNull();
  });
});

describe('readLiveEvent', () => {
  const event = { ...stepEvent(1) } as Record<string, unknown>;

  it('refuses an event of an unknown type, or without its number', () => {
    expect(readLiveEvent({ ...event, type: 'gossip' })).toBeNull();
    const { seq: _seq, ...unnumbered } = event;
    expect(readLiveEvent(unnumbered)).toBeNull();
    expect(readLiveEvent({ ...event, seq: 0 })).toBeNull();
  });

  it('refuses fields an event does not have, and scores out of [0, 1]', () => {
    expect(readLiveEvent({ ...event, extra: 1 })).toBeNull();
    const p = prediction('output', 2, {
      scores: { exact_match: 2, rouge_l: 0, chrf: 0 }
    });
    expect(readLiveEvent(predictionEvent(p))).toBeNull();
  });

  it('refuses a prediction with its prompt on the stream', () => {
    const event = predictionEvent(prediction('output', 2));
    expect(readLiveEvent(event)).not.toBeNull();
    const prompt = { system: 's', user: 'u' };
    const withPrompt = {
      ...event,
      prediction: { ...prediction('output', 2), prompt }
    };
    expect(readLiveEvent(withPrompt)).toBeNull();
  });

  it('reads the bus message that carries an event as its JSON text', () => {
    const message = { type: 'step', event: JSON.stringify(event) };
    expect(readLiveBusMessage(message)).toEqual(message);
    expect(readLiveBusMessage({ type: 'step' })).toBeNull();
  });
});
