import {
  formatStatusLabel,
  formatStatusTitle,
  formatSteps,
  statusDataset,
  StatusView
} from '../statusbar/format';
import type { KernelRecording } from '../api/records';
import { nullTranslator } from '@jupyterlab/translation';

const trans = nullTranslator.load('themisto_ext');

function ready(model: Partial<KernelRecording>): StatusView {
  return {
    kind: 'ready',
    model: {
      kernel_id: 'k1',
      recording: true,
      reason: null,
      trajectory_id: 't1',
      steps: 0,
      ...model
    }
  };
}

describe('formatSteps', () => {
  it('uses the singular for one step', () => {
    expect(formatSteps(1, trans)).toBe('1 step');
  });

  it('uses the plural otherwise', () => {
    expect(formatSteps(0, trans)).toBe('0 steps');
    expect(formatSteps(3, trans)).toBe('3 steps');
  });
});

describe('formatStatusLabel', () => {
  it('shows the step count while recording', () => {
    expect(formatStatusLabel(ready({ recording: true, steps: 3 }), trans)).toBe(
      'Themisto: recording · 3 steps'
    );
    expect(formatStatusLabel(ready({ recording: true, steps: 1 }), trans)).toBe(
      'Themisto: recording · 1 step'
    );
  });

  it('shows off when not recording', () => {
    expect(
      formatStatusLabel(ready({ recording: false, trajectory_id: null }), trans)
    ).toBe('Themisto: off');
  });

  it('shows when there is no kernel', () => {
    expect(formatStatusLabel({ kind: 'no-kernel' }, trans)).toBe(
      'Themisto: no kernel'
    );
  });

  it('shows errors as unavailable, with the message in the title', () => {
    const view: StatusView = {
      kind: 'error',
      kernelId: 'k1',
      message: 'Unknown kernel k1'
    };
    expect(formatStatusLabel(view, trans)).toBe('Themisto: unavailable');
    expect(formatStatusTitle(view, trans)).toBe('Themisto: Unknown kernel k1');
  });
});

describe('formatStatusTitle', () => {
  it('tells the click action', () => {
    expect(formatStatusTitle(ready({ recording: true, steps: 2 }), trans)).toBe(
      'Themisto recording (trajectory t1, 2 steps). Click to stop recording.'
    );
    expect(
      formatStatusTitle(ready({ recording: false, trajectory_id: null }), trans)
    ).toBe('Themisto not recording (no trajectory). Click to start recording.');
  });
});

describe('statusDataset', () => {
  it('reflects the model', () => {
    expect(statusDataset(ready({ recording: true, steps: 2 }))).toEqual({
      state: 'ready',
      recording: 'true',
      steps: '2',
      warning: 'false',
      model: 'ok'
    });
    expect(statusDataset(ready({ recording: false, steps: 5 }))).toEqual({
      state: 'ready',
      recording: 'false',
      steps: '5',
      warning: 'false',
      model: 'ok'
    });
  });

  it('is not recording without a model', () => {
    expect(statusDataset({ kind: 'loading', kernelId: 'k1' })).toEqual({
      state: 'loading',
      recording: 'false',
      steps: '0',
      warning: 'false',
      model: 'ok'
    });
  });

  it('says when the embedded model is off, only while it is', () => {
    const down = {
      ...ready({ recording: true, steps: 4 }),
      modelDown: 'died 3 times in 300 s'
    };
    expect(statusDataset(down).model).toBe('off');
    expect(formatStatusLabel(down, trans)).toBe(
      'Themisto: recording · 4 steps · model off ⚠'
    );
    expect(formatStatusTitle(down, trans)).toContain('died 3 times in 300 s');
    expect(statusDataset(ready({ recording: true, steps: 4 })).model).toBe(
      'ok'
    );
  });

  it('warns when the kernel should record and cannot', () => {
    const failing = ready({ recording: false, reason: 'disk full', steps: 3 });
    expect(statusDataset(failing).warning).toBe('true');
    expect(formatStatusLabel(failing, trans)).toBe('Themisto: not recording ⚠');
    expect(formatStatusTitle(failing, trans)).toBe(
      'Themisto cannot record this kernel: disk full (trajectory t1, 3 steps). ' +
        'Click to switch recording off.'
    );
  });
});
