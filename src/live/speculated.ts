/**
 * The output predictions a notebook holds for a cell not run yet (made from
 * its text before the run, `speculated` events).
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type { SpeculatedEvent } from '../api/records';
import type { ISpeculation } from './types';

/**
 * What is held after `event`: one more prediction of the same text and
 * target (replacing that predictor and context's earlier one), or the first
 * of another, which replaces the older speculation as the server's newer one
 * did.
 */
export function withSpeculated(
  held: ISpeculation | null,
  event: SpeculatedEvent
): ISpeculation {
  const p = event.prediction;
  if (
    !held ||
    held.codeHash !== event.code_hash ||
    held.targetStep !== p.target_step
  ) {
    return {
      codeHash: event.code_hash,
      targetStep: p.target_step,
      cellId: p.cell_id ?? null,
      predictions: [p]
    };
  }
  return {
    ...held,
    predictions: [
      ...held.predictions.filter(
        q => q.predictor !== p.predictor || q.context !== p.context
      ),
      p
    ]
  };
}
