/**
 * Why a prediction is missing, in words: a missed prediction is said, never
 * hidden.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type {
  PredictionError,
  PredictionErrorCode,
  PredictorsInfo
} from '../api/records';

/**
 * The error code of a prediction missed because the next cell started first
 * (prediction.schema.json, error_code).
 */
export const SUPERSEDED: PredictionErrorCode = 'superseded';

/**
 * The error type that meant the same in records stored before error codes
 * existed (the server's class name: read only when there is no code).
 */
const SUPERSEDED_TYPE = 'PredictionSuperseded';

/**
 * The server's reason for the commonest miss (prediction/live.py).
 */
const NEXT_CELL_STARTED = 'the next cell started first';

/**
 * Whether a prediction's error says it was missed rather than failed.
 */
export function isMissed(error: PredictionError | null | undefined): boolean {
  if (!error) {
    return false;
  }
  return error.code !== undefined
    ? error.code === SUPERSEDED
    : error.type === SUPERSEDED_TYPE;
}

/**
 * Why a prediction with an error has no answer: `superseded: the next cell
 * started first`, or `provider error: …`.
 */
export function errorReason(
  error: PredictionError,
  trans: TranslationBundle
): string {
  if (isMissed(error)) {
    return error.message === NEXT_CELL_STARTED || !error.message
      ? trans.__('superseded: the next cell started first')
      : trans.__('superseded: %1', error.message);
  }
  return trans.__(
    'provider error: %1',
    error.message ? `${error.type}: ${error.message}` : error.type
  );
}

/**
 * Error types that meant the same as the `local-model` code in records stored
 * before error codes existed (prediction/clients/local: read only when there is
 * no code).
 */
const MODEL_PROCESS_TYPES = new Set([
  'LocalModelError',
  'ModelProcessDied',
  'ModelProcessHung',
  'LocalModelOff'
]);

/**
 * Whether a prediction's error comes from the embedded model's process (it
 * died, hung, cannot start or was switched off): the server's account of that
 * process (`GET predictors`) may have changed.
 */
export function isModelProcessError(
  error: PredictionError | null | undefined
): boolean {
  if (!error) {
    return false;
  }
  return error.code !== undefined
    ? error.code === 'local-model'
    : MODEL_PROCESS_TYPES.has(error.type);
}

/**
 * Why the embedded model gives no predictions for now (it crashed too
 * often, or cannot start), or `null` while it can.
 */
export function localModelDown(
  predictors: PredictorsInfo | null
): string | null {
  for (const model of predictors?.local_models ?? []) {
    if (model.state === 'off' || model.state === 'failed') {
      return model.reason ?? model.state;
    }
  }
  return null;
}

/**
 * Why a step has no prediction at all (none was recorded for it).
 */
export function noPredictionReason(
  predictors: PredictorsInfo | null,
  autoPredict: boolean,
  trans: TranslationBundle
): string {
  if (predictors && predictors.predictors.length === 0) {
    return trans.__('no predictor');
  }
  if (!autoPredict) {
    return trans.__('auto-predict is off');
  }
  return trans.__('none was recorded for this step');
}
