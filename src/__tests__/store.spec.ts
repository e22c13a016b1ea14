import { insertSorted } from '../live/order';
import { NotebookLive, shownTarget } from '../live/store';
import {
  KERNEL,
  PATH,
  prediction,
  predictingEvent,
  predictionEvent,
  recordingEvent,
  scoredEvent,
  scores,
  step,
  stepEvent,
  TRAJECTORY,
  writingEvent
} from './fixtures';

function changes(store: NotebookLive): string[] {
  const seen: string[] = [];
  store.changed.connect((_, change) => seen.push(change));
  return seen;
}

describe('NotebookLive', () => {
  it('adopts the trajectory of its first event and keeps steps in order', () => {
    const store = new NotebookLive(PATH);
    const seen = changes(store);
    store.apply(stepEvent(2));
    store.apply(stepEvent(1));
    store.apply(stepEvent(2));
    expect(store.trajectoryId).toBe('t1');
    expect(store.lastStep).toBe(2);
    expect(store.latestStep?.step).toBe(2);
    expect(store.getStep(1)?.code).toBe('x1 = 1');
    expect(seen).toEqual(['trajectory', 'steps', 'steps']);
  });

  it('keeps only the latest steps whole', () => {
    const store = new NotebookLive(PATH, { steps: 3 });
    store.addSteps([1, 2, 3, 4, 5].map(n => step(n)));
    expect(store.lastStep).toBe(5);
    expect(store.getStep(2)).toBeNull();
    expect(store.getStep(3)?.step).toBe(3);
  });

  it('shows the answer being written, then the whole one', () => {
    const store = new NotebookLive(PATH);
    store.apply(stepEvent(1));
    store.apply(predictingEvent('output', 2));
    const seen = changes(store);
    store.apply(writingEvent('output', 2, '[0, 1'));
    store.apply(writingEvent('output', 2, '[0, 1, 4]'));
    let [slot] = store.slots('output', 2);
    expect(slot.state).toBe('predicting');
    expect(slot.partial).toBe('[0, 1, 4]');
    expect(seen).toEqual(['predictions', 'predictions']);
    store.apply(
      predictionEvent(prediction('output', 2, { answer: '[0, 1, 4]' }))
    );
    [slot] = store.slots('output', 2);
    expect(slot.state).toBe('done');
    expect(slot.partial).toBeNull();
    // a piece arriving after the answer changes nothing
    store.apply(writingEvent('output', 2, '[0'));
    expect(store.slots('output', 2)[0].partial).toBeNull();
    expect(seen).toHaveLength(3);
  });

  it('follows an output prediction from predicting to scored', () => {
    const store = new NotebookLive(PATH);
    store.apply(stepEvent(1));
    store.apply(predictingEvent('output', 2));
    let [slot] = store.slots('output', 2);
    expect(slot.state).toBe('predicting');
    expect(slot.cellId).toBe('c2');

    store.apply(predictionEvent(prediction('output', 2, { answer: 'out 2' })));
    [slot] = store.slots('output', 2);
    expect(slot.state).toBe('done');
    expect(slot.prediction?.answer).toBe('out 2');
    expect(store.scoreRows).toHaveLength(0);

    store.apply(stepEvent(2));
    const scored = prediction('output', 2);
    store.apply(scoredEvent(scored, 'out 2', scores(1)));
    store.apply(scoredEvent(scored, 'out 2', scores(1)));
    [slot] = store.slots('output', 2);
    expect(slot.prediction).toMatchObject({
      answer: 'out 2',
      reference: 'out 2',
      scores: scores(1)
    });
    const [row] = store.scoreRows;
    expect(row).toMatchObject({ task: 'output', predictor: 'baseline' });
    expect(row.means.count).toBe(1);
    expect(row.means.mean()).toEqual(scores(1));
    expect(store.series('output', row)).toEqual([
      { step: 2, scores: scores(1) }
    ]);
    expect(
      store.cellStep('c2')?.summary.predictions.map(p => p.scores)
    ).toEqual([scores(1)]);
    expect(store.latestTarget('output')).toBe(2);
  });

  it('finds the cell of a prediction without cell id from its step', () => {
    const store = new NotebookLive(PATH);
    store.addSteps([step(1, { cell_id: 'abc' })]);
    store.addPredictions([
      prediction('output', 1, { cell_id: null, scores: scores(0.5) })
    ]);
    expect(store.cellStep('abc')?.summary.predictions).toHaveLength(1);
  });

  it('keeps a re-run cell at its latest step', () => {
    const store = new NotebookLive(PATH);
    store.addSteps([step(1, { cell_id: 'a' }), step(2, { cell_id: 'a' })]);
    store.addPredictions([
      prediction('output', 2, { cell_id: 'a', scores: scores(0.9) }),
      prediction('output', 1, { cell_id: 'a', scores: scores(0.1) })
    ]);
    const latest = store.cellStep('a')!;
    expect(latest.summary.step).toBe(2);
    expect(latest.current).toBe(true);
    expect(latest.summary.predictions[0].scores).toEqual(scores(0.9));
  });

  it('holds a prediction until its step lands, and history pages merge in', () => {
    const store = new NotebookLive(PATH);
    store.addSteps([step(1, { cell_id: 'a' })]);
    store.addPredictions([prediction('output', 2, { cell_id: 'b' })]);
    expect(store.cellStep('b')).toBeNull();
    store.addSteps([step(2, { cell_id: 'b' })]);
    expect(store.cellStep('b')?.summary.predictions).toHaveLength(1);
    // An older page read later: steps before, the scores counted once.
    const older = {
      step: 0,
      cell_id: 'z',
      code_hash: '00000000',
      execution_time: 1,
      memory_bytes: null,
      error: 'NameError',
      predictions: [
        {
          id: 'p0',
          task: 'output' as const,
          predictor: 'baseline',
          model: 'baseline',
          context: 'none' as const,
          scores: scores(0.5),
          error: null,
          abstained: false
        }
      ]
    };
    store.addSummaries([{ ...older, step: 1 }]);
    store.addSummaries([{ ...older, step: 1 }]);
    expect(store.history.get(1)?.predictions.map(p => p.id)).toEqual(['p0']);
    expect(store.scoreRows[0].means.count).toBe(1);
    expect(store.lastRunCell).toBe('b');
    store.noteRun('a');
    expect(store.lastRunCell).toBe('a');
  });

  it('keeps an earlier trajectory in brief for cells not run since a restart', () => {
    const store = new NotebookLive(PATH);
    store.adopt('t-old');
    store.addSteps([
      step(1, { trajectory_id: 't-old', cell_id: 'a' }),
      step(2, { trajectory_id: 't-old', cell_id: 'b' })
    ]);
    store.adopt('t-new');
    store.addSteps([step(1, { trajectory_id: 't-new', cell_id: 'b' })]);
    expect(store.cellStep('a')).toMatchObject({
      trajectoryId: 't-old',
      current: false,
      summary: { step: 1 }
    });
    expect(store.cellStep('b')).toMatchObject({
      trajectoryId: 't-new',
      current: true
    });
    expect(store.historyOf('t-old')?.last).toBe(2);
    expect(store.lastStep).toBe(1);
  });

  it('shows a retry as predicting again, then its answer', () => {
    const store = new NotebookLive(PATH);
    store.apply(
      predictionEvent(
        prediction('next-cell', 1, {
          error: { type: 'ProviderError', message: 'down' }
        })
      )
    );
    expect(store.slots('next-cell', 1)[0].state).toBe('error');
    store.apply(predictingEvent('next-cell', 1));
    expect(store.slots('next-cell', 1)[0]).toMatchObject({
      state: 'predicting',
      prediction: null
    });
  });

  it('starts again on a new trajectory and ignores the old one after', () => {
    const store = new NotebookLive(PATH);
    store.apply(stepEvent(1));
    store.addPredictions([prediction('output', 1, { scores: scores(1) })]);
    store.apply({
      type: 'trajectory',
      seq: 2,
      trajectory_id: 't2',
      kernel_id: 'k1',
      notebook_path: PATH,
      trajectory: {
        id: 't2',
        kernel_id: 'k1',
        notebook_path: PATH,
        started_at: '2026-01-01T00:00:00Z',
        ended_at: null,
        end_reason: null,
        restart_of: 't1',
        steps: 0,
        source: 'kernel',
        user: 'alice'
      }
    });
    expect(store.trajectoryId).toBe('t2');
    expect(store.lastStep).toBe(0);
    expect(store.scoreRows).toHaveLength(0);
    store.apply(stepEvent(5));
    expect(store.lastStep).toBe(0);
    expect(store.adopt('t1')).toBe(false);
  });

  it('ignores the scores of a prediction it does not hold', () => {
    const store = new NotebookLive(PATH);
    store.apply(stepEvent(1));
    const seen = changes(store);
    store.apply(scoredEvent(prediction('output', 1), 'out 1', scores(1)));
    expect(store.scoreRows).toHaveLength(0);
    expect(store.slots('output', 1)).toHaveLength(0);
    // A retry replaced the prediction in the panel: it stays predicting. The
    // old one is still a stored prediction: its scores count, as they do
    // when the history is read after a reload.
    const first = prediction('next-cell', 2, { id: 'first' });
    store.apply(predictionEvent(first));
    store.apply(predictingEvent('next-cell', 2));
    store.apply(scoredEvent(first, 'x2 = 2', scores(0.5)));
    expect(store.scoreRows).toHaveLength(1);
    expect(store.slots('next-cell', 2)[0].state).toBe('predicting');
    expect(seen).toEqual(['predictions', 'predictions', 'scores']);
  });

  it('follows recording and the step count from the kernel state and the stream', () => {
    const store = new NotebookLive(PATH);
    store.kernelId = KERNEL;
    const seen = changes(store);
    expect(store.recording).toBeNull();
    store.applyKernel({
      kernel_id: KERNEL,
      recording: true,
      reason: null,
      trajectory_id: TRAJECTORY,
      steps: 4
    });
    expect(store.recording).toBe(true);
    expect(store.trajectoryId).toBe(TRAJECTORY);
    // The count is known before the steps arrive; the history still reads
    // from the start.
    expect(store.stepCount).toBe(4);
    expect(store.lastStep).toBe(0);
    store.apply(stepEvent(5));
    expect(store.stepCount).toBe(5);
    store.apply(recordingEvent(false));
    expect(store.recording).toBe(false);
    store.apply(recordingEvent(true, null));
    expect(store.recording).toBe(true);
    expect(seen).toEqual([
      'recording',
      'trajectory',
      'steps',
      'steps',
      'recording',
      'recording'
    ]);
    store.recordingError = 'Unknown kernel';
    store.apply(recordingEvent(false));
    expect(store.recordingError).toBeNull();
  });

  it('counts from zero on a new trajectory', () => {
    const store = new NotebookLive(PATH);
    store.noteStepCount('t1', 3);
    expect(store.stepCount).toBe(3);
    store.noteStepCount('t2', 0);
    expect(store.trajectoryId).toBe('t2');
    expect(store.stepCount).toBe(0);
    // A count of a trajectory left earlier changes nothing.
    store.noteStepCount('t1', 9);
    expect(store.stepCount).toBe(0);
  });

  it('bounds prediction targets and drops older ones', () => {
    const store = new NotebookLive(PATH, { targets: 2 });
    for (const n of [1, 2, 3]) {
      store.apply(predictingEvent('next-cell', n));
    }
    expect(store.targets('next-cell')).toEqual([2, 3]);
    store.apply(predictingEvent('next-cell', 1));
    expect(store.targets('next-cell')).toEqual([2, 3]);
  });

  it('shows only requested targets when asked to', () => {
    const store = new NotebookLive(PATH);
    store.addSteps([step(1)]);
    store.apply(predictingEvent('next-cell', 2));
    expect(shownTarget(store, 'next-cell', false)).toBe(2);
    expect(shownTarget(store, 'next-cell', true)).toBeNull();
    expect(store.markRequested('next-cell')).toBe(2);
    expect(shownTarget(store, 'next-cell', true)).toBe(2);
  });

  it('handles a 1,000-step trajectory with predictions quickly', () => {
    const store = new NotebookLive(PATH);
    let emitted = 0;
    store.changed.connect(() => emitted++);
    const started = Date.now();
    const steps = [];
    const predictions = [];
    for (let n = 1; n <= 1000; n++) {
      steps.push(step(n));
      for (const context of ['none', 'full'] as const) {
        predictions.push(
          prediction('output', n, { context, scores: scores(n % 2) }),
          prediction('next-cell', n, { context, scores: scores(0.5) })
        );
      }
    }
    store.addSteps(steps);
    store.addPredictions(predictions);
    for (let n = 1001; n <= 1100; n++) {
      store.apply(predictingEvent('output', n));
      store.apply(stepEvent(n));
    }
    expect(Date.now() - started).toBeLessThan(1500);
    expect(emitted).toBeLessThan(250);
    expect(store.lastStep).toBe(1100);
    expect(store.targets('output').length).toBeLessThanOrEqual(100);
    const rows = store.scoreRows;
    expect(rows).toHaveLength(4);
    expect(rows.every(r => r.means.count === 1000)).toBe(true);
    expect(
      store.series('output', { predictor: 'baseline', context: 'none' })
    ).toHaveLength(1000);
  });
});

describe('insertSorted', () => {
  it('inserts in place and refuses duplicates', () => {
    const list = [1, 3];
    expect(insertSorted(list, 2)).toBe(true);
    expect(insertSorted(list, 4)).toBe(true);
    expect(insertSorted(list, 0)).toBe(true);
    expect(insertSorted(list, 3)).toBe(false);
    expect(list).toEqual([0, 1, 2, 3, 4]);
  });
});
