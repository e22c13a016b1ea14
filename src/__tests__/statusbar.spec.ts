import { nullTranslator } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { NotebookLive } from '../live/store';
import { STATUS_ITEM_CLASS, ThemistoStatusItem } from '../statusbar/item';
import { FakeLive } from './fakelive';
import {
  KERNEL,
  PATH,
  TRAJECTORY,
  localModel,
  predictorsInfo,
  recordingEvent,
  stepEvent
} from './fixtures';

/**
 * Let pending promise callbacks run.
 */
async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
  }
}

function knownStore(recording = true, steps = 0): NotebookLive {
  const store = new NotebookLive(PATH);
  store.kernelId = KERNEL;
  store.applyKernel({
    kernel_id: KERNEL,
    recording,
    reason: null,
    trajectory_id: TRAJECTORY,
    steps
  });
  return store;
}

describe('ThemistoStatusItem', () => {
  let live: FakeLive;
  let toggles: number;
  let toggle: () => Promise<void>;
  let item: ThemistoStatusItem;

  beforeEach(() => {
    live = new FakeLive(null);
    toggles = 0;
    toggle = async () => {
      toggles++;
      const store = live.current!;
      store.applyKernel({
        kernel_id: KERNEL,
        recording: !store.recording,
        reason: null,
        trajectory_id: store.trajectoryId,
        steps: store.stepCount
      });
    };
    item = new ThemistoStatusItem({
      live,
      toggle: () => toggle(),
      translator: nullTranslator
    });
    Widget.attach(item, document.body);
  });

  afterEach(() => {
    item.dispose();
  });

  it('shows no kernel without a notebook', () => {
    expect(item.hasClass(STATUS_ITEM_CLASS)).toBe(true);
    expect(item.node.textContent).toBe('Themisto: no kernel');
    expect(item.node.dataset.recording).toBe('false');
    expect(item.node.dataset.steps).toBe('0');
  });

  it('shows the state of the active notebook kernel', () => {
    live.show(knownStore(true, 0));
    expect(item.node.textContent).toBe('Themisto: recording · 0 steps');
    expect(item.node.dataset.recording).toBe('true');
    expect(item.node.dataset.state).toBe('ready');
    expect(item.node.title).toBe(
      'Themisto recording (trajectory t1, 0 steps). Click to stop recording.'
    );
  });

  it('waits for the kernel state', () => {
    const store = new NotebookLive(PATH);
    store.kernelId = KERNEL;
    live.show(store);
    expect(item.node.dataset.state).toBe('loading');
    expect(item.node.textContent).toBe('Themisto: …');
  });

  it('counts the steps the stream brings, without asking the server', () => {
    const store = knownStore(true, 0);
    live.show(store);
    store.apply(stepEvent(1));
    expect(item.node.dataset.steps).toBe('1');
    store.apply(stepEvent(2));
    expect(item.node.dataset.steps).toBe('2');
    expect(item.node.textContent).toBe('Themisto: recording · 2 steps');
    expect(live.kernelReads).toBe(0);
  });

  it('follows recording switched elsewhere (a recording event)', () => {
    const store = knownStore(true, 3);
    live.show(store);
    store.apply(recordingEvent(false));
    expect(item.node.dataset.recording).toBe('false');
    expect(item.node.textContent).toBe('Themisto: off');
    // The count is kept for when recording is back on.
    expect(item.node.dataset.steps).toBe('3');
  });

  it('shows why recording fails, as a warning, until it works again', () => {
    const store = knownStore(true, 3);
    live.show(store);
    const reason =
      'the trajectory store /data/t.sqlite3 cannot be used (read-only)';
    store.apply(recordingEvent(false, TRAJECTORY, reason));
    expect(item.node.dataset.warning).toBe('true');
    expect(item.node.dataset.recording).toBe('false');
    expect(item.node.textContent).toBe('Themisto: not recording ⚠');
    expect(item.node.title).toContain(reason);
    store.apply(recordingEvent(true));
    expect(item.node.dataset.warning).toBe('false');
    expect(item.node.textContent).toBe('Themisto: recording · 3 steps');
  });

  it('says when the embedded model is off, with the reason, until it is back', async () => {
    live.show(knownStore(true, 2));
    expect(item.node.dataset.model).toBe('ok');
    const reason = "the local model's process died 3 times in 300 s";
    live.predictors = predictorsInfo({
      predictors: ['hybrid'],
      contexts: ['full'],
      local_models: [localModel('hybrid', 'off', reason)]
    });
    await live.refreshPredictors();
    expect(item.node.dataset.model).toBe('off');
    expect(item.node.textContent).toBe(
      'Themisto: recording · 2 steps · model off ⚠'
    );
    expect(item.node.title).toContain(reason);
    live.predictors = { ...live.predictors!, local_models: [] };
    await live.refreshPredictors();
    expect(item.node.dataset.model).toBe('ok');
    expect(item.node.textContent).toBe('Themisto: recording · 2 steps');
  });

  it('shows the reason the server gives when the state is read', () => {
    const store = new NotebookLive(PATH);
    store.kernelId = KERNEL;
    store.applyKernel({
      kernel_id: KERNEL,
      recording: false,
      reason: 'the journal directory /j cannot be written',
      trajectory_id: null,
      steps: 0
    });
    live.show(store);
    expect(item.node.dataset.warning).toBe('true');
    expect(item.node.title).toContain(
      'the journal directory /j cannot be written'
    );
  });

  it('counts from zero when the kernel restarts', () => {
    const store = knownStore(true, 3);
    live.show(store);
    store.noteStepCount('t2', 0);
    expect(item.node.dataset.steps).toBe('0');
  });

  it('toggles recording on click and Enter', async () => {
    live.show(knownStore(true));
    item.node.click();
    await flush();
    expect(toggles).toBe(1);
    expect(item.node.dataset.recording).toBe('false');
    expect(item.node.textContent).toBe('Themisto: off');
    item.node.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    await flush();
    expect(toggles).toBe(2);
    expect(item.node.dataset.recording).toBe('true');
  });

  it('follows the active notebook', () => {
    const first = knownStore(true, 2);
    const second = new NotebookLive('other.ipynb');
    live.show(first);
    live.show(second);
    expect(item.node.textContent).toBe('Themisto: no kernel');
    first.apply(stepEvent(3));
    expect(item.node.textContent).toBe('Themisto: no kernel');
  });

  it('shows server errors and reads the state again on click', async () => {
    const store = new NotebookLive(PATH);
    store.kernelId = 'unknown';
    store.recordingError = 'Unknown kernel unknown';
    live.show(store);
    expect(item.node.dataset.state).toBe('error');
    expect(item.node.textContent).toBe('Themisto: unavailable');
    expect(item.node.title).toBe('Themisto: Unknown kernel unknown');
    item.node.click();
    await flush();
    expect(live.kernelReads).toBe(1);
    expect(toggles).toBe(0);
  });

  it('shows a failed switch until the state changes', async () => {
    const store = knownStore(true);
    live.show(store);
    toggle = async () => {
      throw new Error('Forbidden');
    };
    item.node.click();
    await flush();
    expect(item.node.dataset.state).toBe('error');
    expect(item.node.title).toBe('Themisto: Forbidden');
    store.apply(recordingEvent(false));
    expect(item.node.dataset.state).toBe('ready');
  });
});
