import type { SpeculationReply } from '../api/records';
import type { ISpeculationRequest } from '../api/model';
import { type ISpeculationTarget, Speculator } from '../notebook/speculate';
import { PredictionSettings } from '../settings';
import { TRAJECTORY } from './fixtures';

function setup(reply: Partial<SpeculationReply> = {}) {
  const sent: ISpeculationRequest[] = [];
  const settings = new PredictionSettings();
  settings.update({ speculationPause: 1000 });
  const target: ISpeculationTarget = {
    kernelId: 'k',
    trajectoryId: 't',
    recording: true,
    lastStep: 3,
    code: 'df.head()',
    cellId: 'c4'
  };
  let answer: SpeculationReply = {
    accepted: true,
    reason: null,
    target_step: 4,
    trajectory_id: TRAJECTORY,
    ...reply
  };
  const speculator = new Speculator({
    speculate: async body => {
      sent.push(body);
      return answer;
    },
    settings,
    target: () => target
  });
  const answerWith = (next: SpeculationReply): void => {
    answer = next;
  };
  return { sent, settings, target, speculator, answerWith };
}

async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
  }
}

describe('Speculator', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('announces a cell once its text has been stable for the pause', async () => {
    const { sent, target, speculator } = setup();
    // The pause is a Debouncer (@lumino/polling): it sets its timer after a
    // microtask, which a browser runs at once; flush() does it here.
    speculator.edited();
    await flush();
    jest.advanceTimersByTime(600);
    target.code = 'df.head(10)';
    speculator.edited(); // still typing: the pause starts again
    await flush();
    jest.advanceTimersByTime(999);
    await flush();
    expect(sent).toEqual([]);
    jest.advanceTimersByTime(1);
    await flush();
    expect(sent).toEqual([
      { kernel_id: 'k', code: 'df.head(10)', cell_id: 'c4' }
    ]);
  });

  it('announces a selected cell at once, and the same text after the same step once', async () => {
    const { sent, target, speculator } = setup();
    speculator.selected();
    await flush();
    speculator.selected();
    await flush();
    expect(sent).toHaveLength(1);
    target.lastStep = 4; // a step landed: the history the prediction reads grew
    speculator.selected();
    await flush();
    expect(sent).toHaveLength(2);
  });

  it('announces again what the server did not start', async () => {
    const { sent, speculator, answerWith } = setup({
      accepted: false,
      reason: 'the kernel is running a cell'
    });
    speculator.selected();
    await flush();
    answerWith({
      accepted: true,
      reason: null,
      trajectory_id: TRAJECTORY,
      target_step: 4
    });
    speculator.selected();
    await flush();
    speculator.selected();
    await flush();
    expect(sent).toHaveLength(2);
  });

  it('announces nothing when switched off, or without a cell worth predicting', async () => {
    const { sent, settings, target, speculator } = setup();
    settings.update({ speculate: false });
    speculator.edited();
    await flush();
    jest.advanceTimersByTime(5000);
    speculator.selected();
    await flush();
    expect(sent).toEqual([]);
    settings.update({ speculate: true });
    for (const change of [
      { code: null }, // a markdown cell
      { code: '  \n' },
      { trajectoryId: null }, // nothing recorded yet: no history
      { recording: false },
      { kernelId: null }
    ]) {
      Object.assign(target, { code: 'x', trajectoryId: 't' }, change);
      target.recording = 'recording' in change ? false : true;
      target.kernelId = 'kernelId' in change ? null : 'k';
      await expect(speculator.announce()).resolves.toBe(false);
    }
    expect(sent).toEqual([]);
  });

  it('forgets a pending announcement when another cell is selected', async () => {
    const { sent, target, speculator } = setup();
    speculator.edited();
    await flush();
    target.code = 'other()';
    speculator.selected(); // announced at once; the pause's announcement is gone
    await flush();
    jest.advanceTimersByTime(5000);
    await flush();
    expect(sent).toEqual([{ kernel_id: 'k', code: 'other()', cell_id: 'c4' }]);
  });

  it('waits the pause the settings say now', async () => {
    const { sent, settings, target, speculator } = setup();
    speculator.edited();
    await flush();
    jest.advanceTimersByTime(1000);
    await flush();
    expect(sent).toHaveLength(1);
    settings.update({ speculationPause: 200 }); // changed in the settings editor
    target.code = 'df.tail()';
    speculator.edited();
    await flush();
    jest.advanceTimersByTime(200);
    await flush();
    expect(sent).toHaveLength(2);
  });

  it('forgets a pending announcement when disposed', async () => {
    const { sent, speculator } = setup();
    speculator.edited();
    await flush();
    speculator.dispose();
    jest.advanceTimersByTime(5000);
    await flush();
    expect(sent).toEqual([]);
  });
});
