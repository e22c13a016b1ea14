/**
 * Formatting of the Themisto status bar item.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type { KernelRecording } from '../api/records';

/**
 * What the status bar item currently displays.
 */
export type StatusView =
  | { kind: 'no-kernel' }
  | { kind: 'loading'; kernelId: string }
  | { kind: 'error'; kernelId: string; message: string }
  | {
      kind: 'ready';
      model: KernelRecording;
      /**
       * Why the embedded model gives no predictions for now (it crashed too
       * often, or cannot start); absent while it can.
       */
      modelDown?: string | null;
    };

/**
 * Format a number of steps, e.g. `1 step`, `3 steps`.
 */
export function formatSteps(steps: number, trans: TranslationBundle): string {
  return trans._n('%1 step', '%1 steps', steps);
}

/**
 * The text shown in the status bar.
 */
export function formatStatusLabel(
  view: StatusView,
  trans: TranslationBundle
): string {
  switch (view.kind) {
    case 'no-kernel':
      return trans.__('Themisto: no kernel');
    case 'loading':
      return trans.__('Themisto: …');
    case 'error':
      return trans.__('Themisto: unavailable');
    case 'ready':
      if (view.model.recording) {
        return view.modelDown
          ? trans.__(
              'Themisto: recording · %1 · model off ⚠',
              formatSteps(view.model.steps, trans)
            )
          : trans.__(
              'Themisto: recording · %1',
              formatSteps(view.model.steps, trans)
            );
      }
      return view.model.reason !== null
        ? trans.__('Themisto: not recording ⚠')
        : trans.__('Themisto: off');
  }
}

/**
 * The tooltip of the status bar item.
 */
export function formatStatusTitle(
  view: StatusView,
  trans: TranslationBundle
): string {
  switch (view.kind) {
    case 'no-kernel':
      return trans.__('Themisto: the active notebook has no kernel');
    case 'loading':
      return trans.__('Themisto: loading state of kernel %1', view.kernelId);
    case 'error':
      return trans.__('Themisto: %1', view.message);
    case 'ready': {
      const { model } = view;
      const trajectory = model.trajectory_id
        ? trans.__(
            'trajectory %1, %2',
            model.trajectory_id,
            formatSteps(model.steps, trans)
          )
        : trans.__('no trajectory');
      if (model.recording) {
        const recording = trans.__(
          'Themisto recording (%1). Click to stop recording.',
          trajectory
        );
        return view.modelDown
          ? recording +
              ' ' +
              trans.__(
                'The embedded model gives no predictions: %1',
                view.modelDown
              )
          : recording;
      }
      return model.reason !== null
        ? trans.__(
            'Themisto cannot record this kernel: %1 (%2). Click to switch recording off.',
            model.reason,
            trajectory
          )
        : trans.__(
            'Themisto not recording (%1). Click to start recording.',
            trajectory
          );
    }
  }
}

/**
 * Values of the `data-*` attributes of the status bar item node.
 */
export interface IStatusDataset {
  state: StatusView['kind'];
  recording: 'true' | 'false';
  steps: string;
  /**
   * `true` while the kernel should record and cannot (a reason is shown).
   */
  warning: 'true' | 'false';
  /**
   * `off` while the embedded model gives no predictions, else `ok`.
   */
  model: 'off' | 'ok';
}

/**
 * Compute the `data-*` attributes of the status bar item node.
 */
export function statusDataset(view: StatusView): IStatusDataset {
  if (view.kind === 'ready') {
    return {
      state: view.kind,
      recording: view.model.recording ? 'true' : 'false',
      steps: String(view.model.steps),
      warning:
        !view.model.recording && view.model.reason !== null ? 'true' : 'false',
      model: view.modelDown ? 'off' : 'ok'
    };
  }
  return {
    state: view.kind,
    recording: 'false',
    steps: '0',
    warning: 'false',
    model: 'ok'
  };
}
