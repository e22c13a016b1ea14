/**
 * A notebook's steps in brief (cell, time, memory, error name, and each
 * prediction's scores or why it is missing), merged from history pages read
 * newest first and from the live stream: what each cell shows on its badge
 * and footer, and what review navigates.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type {
  LivePrediction,
  LiveStep,
  PredictionSummary,
  Scores,
  StepSummary
} from '../api/records';
import { codeHash } from './cellmatch';
import { insertSorted } from './order';
import type { IStepHistory } from './types';

/**
 * Targets whose predictions are held before their step lands (the running
 * cell and the one after it; older ones are about steps never recorded).
 */
const PENDING_TARGETS = 8;

export class StepIndex implements IStepHistory {
  /**
   * @param trajectoryId The trajectory whose steps these are.
   */
  constructor(readonly trajectoryId: string | null = null) {}

  get first(): number {
    return this._order.length ? this._order[0] : 0;
  }

  get last(): number {
    return this._order.length ? this._order[this._order.length - 1] : 0;
  }

  get size(): number {
    return this._order.length;
  }

  /**
   * The steps held, in order.
   */
  *summaries(): IterableIterator<StepSummary> {
    for (const step of this._order) {
      const summary = this._steps.get(step);
      if (summary) {
        yield summary;
      }
    }
  }

  get(step: number): StepSummary | null {
    return this._steps.get(step) ?? null;
  }

  latestOfCell(cellId: string): StepSummary | null {
    const step = this._cells.get(cellId);
    return step === undefined ? null : (this._steps.get(step) ?? null);
  }

  previous(step: number): number | null {
    const at = this._lowerBound(step);
    return at > 0 ? this._order[at - 1] : null;
  }

  next(step: number): number | null {
    let at = this._lowerBound(step);
    if (this._order[at] === step) {
      at++;
    }
    return at < this._order.length ? this._order[at] : null;
  }

  /**
   * Merge steps in brief (a history page); returns whether anything changed.
   */
  addSummaries(summaries: readonly StepSummary[]): boolean {
    let changed = false;
    for (const summary of summaries) {
      const held = this._steps.get(summary.step);
      if (held) {
        for (const prediction of summary.predictions) {
          changed = merge(held.predictions, prediction) || changed;
        }
        continue;
      }
      this._hold({ ...summary, predictions: [...summary.predictions] });
      changed = true;
    }
    return changed;
  }

  /**
   * Add a step from the stream (or read whole).
   */
  addStep(step: LiveStep): boolean {
    if (this._steps.has(step.step)) {
      return false;
    }
    this._hold({
      step: step.step,
      cell_id: step.cell_id,
      code_hash: codeHash(step.code),
      execution_time: step.execution_time,
      memory_bytes: step.memory_bytes,
      error: step.error ? step.error.ename : null,
      predictions: []
    });
    return true;
  }

  /**
   * Add a prediction (live or read whole) to its target step, or hold it
   * until that step lands.
   */
  addPrediction(prediction: LivePrediction): boolean {
    const brief: PredictionSummary = {
      id: prediction.id,
      task: prediction.task,
      predictor: prediction.predictor,
      model: prediction.model,
      context: prediction.context,
      scores: prediction.scores,
      error: prediction.error,
      abstained: prediction.abstained === true
    };
    const held = this._steps.get(prediction.target_step);
    if (held) {
      return merge(held.predictions, brief);
    }
    let pending = this._pending.get(prediction.target_step);
    if (!pending) {
      pending = [];
      this._pending.set(prediction.target_step, pending);
      const targets = [...this._pending.keys()].sort((a, b) => a - b);
      for (const old of targets.slice(0, -PENDING_TARGETS)) {
        this._pending.delete(old);
      }
    }
    return merge(pending, brief);
  }

  /**
   * Apply the scores of a prediction (a `scored` event); the prediction, if
   * held.
   */
  setScores(
    predictionId: string,
    targetStep: number,
    scores: Scores | null
  ): PredictionSummary | null {
    const list =
      this._steps.get(targetStep)?.predictions ??
      this._pending.get(targetStep) ??
      [];
    const found = list.find(p => p.id === predictionId);
    if (!found) {
      return null;
    }
    found.scores = scores;
    return found;
  }

  private _hold(summary: StepSummary): void {
    const pending = this._pending.get(summary.step);
    if (pending) {
      this._pending.delete(summary.step);
      for (const prediction of pending) {
        merge(summary.predictions, prediction);
      }
    }
    this._steps.set(summary.step, summary);
    insertSorted(this._order, summary.step);
    const cell = summary.cell_id;
    if (cell !== null) {
      const latest = this._cells.get(cell);
      if (latest === undefined || latest < summary.step) {
        this._cells.set(cell, summary.step);
      }
    }
  }

  private _lowerBound(step: number): number {
    let lo = 0;
    let hi = this._order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this._order[mid] < step) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  private _steps = new Map<number, StepSummary>();
  private _order: number[] = [];
  private _cells = new Map<string, number>();
  private _pending = new Map<number, PredictionSummary[]>();
}

/**
 * Add or update a prediction of a list by id; whether it changed.
 */
function merge(
  list: PredictionSummary[],
  prediction: PredictionSummary
): boolean {
  const at = list.findIndex(p => p.id === prediction.id);
  if (at < 0) {
    list.push({ ...prediction });
    return true;
  }
  const held = list[at];
  // A history page may be older than the stream: keep scores once known.
  const scores = prediction.scores ?? held.scores;
  if (held.scores === scores && held.error === prediction.error) {
    return false;
  }
  list[at] = { ...prediction, scores };
  return true;
}

/**
 * The latest prediction of each predictor × context of one task, in the
 * order they first appear.
 */
export function latestByCombo(
  predictions: readonly PredictionSummary[],
  task: PredictionSummary['task']
): PredictionSummary[] {
  const out = new Map<string, PredictionSummary>();
  for (const p of predictions) {
    if (p.task === task) {
      out.set(`${p.predictor}\u0000${p.context}`, p);
    }
  }
  return [...out.values()];
}
