/**
 * Data model of the Themisto server REST API.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */

/**
 * Recording state of one kernel, as returned by
 * `GET|PUT themisto/api/kernels/{kernel_id}`.
 */
export interface IKernelRecording {
  /**
   * The Jupyter kernel id.
   */
  kernel_id: string;
  /**
   * Whether Themisto records executions of this kernel.
   */
  recording: boolean;
  /**
   * Id of the trajectory being recorded, if any.
   */
  trajectory_id: string | null;
  /**
   * Number of steps recorded so far.
   */
  steps: number;
}

/**
 * Body of `PUT themisto/api/kernels/{kernel_id}`.
 */
export interface IRecordingUpdate {
  recording: boolean;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Check that a parsed JSON value has the shape of {@link IKernelRecording}.
 */
export function isKernelRecording(value: unknown): value is IKernelRecording {
  if (!isRecord(value)) {
    return false;
  }
  const { kernel_id, recording, trajectory_id, steps } = value;
  return (
    typeof kernel_id === 'string' &&
    typeof recording === 'boolean' &&
    (trajectory_id === null || typeof trajectory_id === 'string') &&
    typeof steps === 'number' &&
    Number.isInteger(steps) &&
    steps >= 0
  );
}
