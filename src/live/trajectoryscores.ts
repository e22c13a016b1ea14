/**
 * The scores of one trajectory: running means per task × predictor ×
 * context and bounded series over steps. Every prediction is counted once,
 * whether it came live, whole from history or in brief.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type { LivePrediction, PredictionTask } from '../api/records';
import { ScoreMeans, seriesKey } from './scoreformat';
import type { ICombo, IScorePoint, IScoreRow } from './types';

/**
 * What a prediction needs to be counted.
 */
export type IScored = Pick<
  LivePrediction,
  'id' | 'task' | 'predictor' | 'context' | 'target_step' | 'scores'
>;

/**
 * A scoreboard row with its running means.
 */
interface IRow extends IScoreRow {
  means: ScoreMeans;
}

export class ScoreBook {
  /**
   * @param seriesPoints Points kept per series (the latest steps).
   */
  constructor(private readonly _seriesPoints: number) {}

  get rows(): IScoreRow[] {
    return [...this._rows.values()];
  }

  series(task: PredictionTask, combo: ICombo): readonly IScorePoint[] {
    return (
      this._series.get(seriesKey(task, combo.predictor, combo.context)) ?? []
    );
  }

  /**
   * Count a scored prediction; `false` when it has no scores or was counted
   * already.
   */
  add(prediction: IScored): boolean {
    const scores = prediction.scores;
    if (!scores || this._counted.has(prediction.id)) {
      return false;
    }
    this._remember(prediction.id);
    const { task, predictor, context } = prediction;
    const key = seriesKey(task, predictor, context);
    let row = this._rows.get(key);
    if (!row) {
      row = { task, predictor, context, means: new ScoreMeans() };
      this._rows.set(key, row);
    }
    row.means.add(scores);
    let points = this._series.get(key);
    if (!points) {
      points = [];
      this._series.set(key, points);
    }
    // Usually appended; history read late is inserted in step order.
    let at = points.length;
    while (at > 0 && points[at - 1].step > prediction.target_step) {
      at--;
    }
    points.splice(at, 0, { step: prediction.target_step, scores });
    if (points.length > this._seriesPoints) {
      points.splice(0, points.length - this._seriesPoints);
    }
    return true;
  }

  /**
   * Remember a counted id; the oldest are forgotten beyond a bound far
   * above what a session produces, so memory stays bounded.
   */
  private _remember(id: string): void {
    this._counted.add(id);
    if (this._counted.size > 20 * this._seriesPoints) {
      const oldest = this._counted.values().next();
      if (!oldest.done) {
        this._counted.delete(oldest.value);
      }
    }
  }

  private _rows = new Map<string, IRow>();
  private _series = new Map<string, IScorePoint[]>();
  private _counted = new Set<string>();
}
