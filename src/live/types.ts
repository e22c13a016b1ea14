/**
 * Types of the live data shared by the store, its users and tokens.ts.
 *
 * This module only names types.
 */
import type { LivePrediction, PredictionTask, Scores } from '../api/records';

export type { ConnectionState } from '../api/stream';

/**
 * One column of the panel: a predictor with a kind of context.
 */
export interface ICombo {
  predictor: string;
  context: string;
}

/**
 * One predictor × context's prediction for one target step.
 */
export interface IPredictionSlot extends ICombo {
  task: PredictionTask;
  targetStep: number;
  cellId: string | null;
  state: 'predicting' | 'done' | 'error';
  prediction: LivePrediction | null;
}

/**
 * Which part of the data changed; listeners re-render only that part.
 */
export type LiveChange =
  | 'trajectory'
  | 'steps'
  | 'predictions'
  | 'scores'
  | 'connection'
  | 'recording';

/**
 * A point of a score series.
 */
export interface IScorePoint {
  step: number;
  scores: Scores;
}

/**
 * Running means of the three scores.
 */
export interface IScoreMeans {
  /**
   * Number of scored predictions.
   */
  readonly count: number;
  /**
   * The means; `null` before any score.
   */
  mean(): Scores | null;
}

/**
 * One scoreboard row.
 */
export interface IScoreRow extends ICombo {
  task: PredictionTask;
  means: IScoreMeans;
}
