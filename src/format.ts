/**
 * Formatting of the Themisto status bar item.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import { IKernelRecording } from './model';

/**
 * What the status bar item currently displays.
 */
export type StatusView =
  | { kind: 'no-kernel' }
  | { kind: 'loading'; kernelId: string }
  | { kind: 'error'; kernelId: string; message: string }
  | { kind: 'ready'; model: IKernelRecording };

/**
 * Format a number of steps, e.g. `1 step`, `3 steps`.
 */
export function formatSteps(steps: number): string {
  return `${steps} ${steps === 1 ? 'step' : 'steps'}`;
}

/**
 * The text shown in the status bar.
 */
export function formatStatusLabel(view: StatusView): string {
  switch (view.kind) {
    case 'no-kernel':
      return 'Themisto: no kernel';
    case 'loading':
      return 'Themisto: …';
    case 'error':
      return 'Themisto: unavailable';
    case 'ready':
      return view.model.recording
        ? `Themisto: recording · ${formatSteps(view.model.steps)}`
        : 'Themisto: off';
  }
}

/**
 * The tooltip of the status bar item.
 */
export function formatStatusTitle(view: StatusView): string {
  switch (view.kind) {
    case 'no-kernel':
      return 'Themisto: the active notebook has no kernel';
    case 'loading':
      return `Themisto: loading state of kernel ${view.kernelId}`;
    case 'error':
      return `Themisto: ${view.message}`;
    case 'ready': {
      const { model } = view;
      const trajectory = model.trajectory_id
        ? `trajectory ${model.trajectory_id}, ${formatSteps(model.steps)}`
        : 'no trajectory';
      const action = model.recording
        ? 'Click to stop recording.'
        : 'Click to start recording.';
      return `Themisto ${model.recording ? 'recording' : 'not recording'} (${trajectory}). ${action}`;
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
}

/**
 * Compute the `data-*` attributes of the status bar item node.
 */
export function statusDataset(view: StatusView): IStatusDataset {
  if (view.kind === 'ready') {
    return {
      state: view.kind,
      recording: view.model.recording ? 'true' : 'false',
      steps: String(view.model.steps)
    };
  }
  return { state: view.kind, recording: 'false', steps: '0' };
}
