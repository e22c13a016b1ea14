/**
 * References: answers a prediction is measured against, never shown as a
 * prediction. A copy of the previous output is the commonest: it repeats
 * what the user just saw (the `copy-previous` reference, or a `hybrid`
 * record made before hybrid stopped copying anything but a re-run, which it
 * names `hybrid:rerun` and shows as a prediction).
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */

/**
 * The reference predictors (as `evaluation/report.py`'s REFERENCES).
 */
export const REFERENCE_PREDICTORS: readonly string[] = [
  'copy-previous',
  'baseline'
];

const COPY = 'copy-previous';

/**
 * Whether an answer is a copy of the previous output: the `copy-previous`
 * reference, or a predictor that fell back to it (its model `name:copy-previous`).
 */
export function isCopy(p: {
  predictor: string;
  model?: string | null;
}): boolean {
  return p.predictor === COPY || (p.model ?? '').endsWith(`:${COPY}`);
}

/**
 * Whether a predictor is a reference rather than a model.
 */
export function isReference(predictor: string): boolean {
  return REFERENCE_PREDICTORS.includes(predictor);
}
