/**
 * Types of the live data shared by the store, its users and tokens.ts.
 *
 * This module only names types.
 */
import type {
  LivePrediction,
  LiveStep,
  PredictionTask,
  Scores,
  StepSummary
} from '../api/records';

/**
 * The state of the page's live events (live/feed.ts): `closed` for a
 * notebook without a kernel.
 */
export type ConnectionState = 'connecting' | 'open' | 'retrying' | 'closed';

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
  /**
   * While the model writes (streamed): its answer so far.
   */
  partial?: string | null;
}

/**
 * The output predicted for a cell before it runs (`speculated` events): what
 * the cell with this text will show if it runs as step `targetStep`.
 */
export interface ISpeculation {
  codeHash: string;
  targetStep: number;
  cellId: string | null;
  /**
   * One per predictor × context, as each was made.
   */
  predictions: LivePrediction[];
}

/**
 * Which part of the data changed; listeners re-render only that part.
 */
export type LiveChange =
  | 'trajectory'
  | 'history'
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

/**
 * A notebook's steps in brief, as far as they are loaded (history pages are
 * read newest first; live steps are added as they land).
 */
export interface IStepHistory {
  /**
   * The trajectory whose steps these are.
   */
  readonly trajectoryId: string | null;
  /**
   * The lowest step held (0 when none).
   */
  readonly first: number;
  /**
   * The highest step held (0 when none).
   */
  readonly last: number;
  get(step: number): StepSummary | null;
  /**
   * The latest step of a cell, by the notebook's cell id.
   */
  latestOfCell(cellId: string): StepSummary | null;
  /**
   * The held step before (after) `step`, if any.
   */
  previous(step: number): number | null;
  next(step: number): number | null;
}

/**
 * A cell's latest step: in the notebook's current trajectory, or in an
 * earlier one (before a kernel restart, or another kernel).
 */
export interface ICellStep {
  trajectoryId: string | null;
  summary: StepSummary;
  /**
   * Whether it is a step of the trajectory followed live.
   */
  current: boolean;
}

/**
 * One step whole, for review: the step, the one after it (whose code the
 * next-cell prediction made after it is compared with), and the predictions
 * of both (without prompts).
 */
export interface IStepDetail {
  trajectoryId: string | null;
  step: number;
  whole: LiveStep | null;
  next: LiveStep | null;
  predictions: LivePrediction[];
}
