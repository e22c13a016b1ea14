/**
 * The in-memory live data of one notebook: its kernel's recording state, its
 * steps, predictions and scores, updated incrementally from stream events,
 * history pages and the kernel's state read once.
 *
 * Everything is bounded so a 1,000-step trajectory stays fast: only the
 * latest steps and prediction targets are kept whole, scores are folded into
 * running means, and score series are capped.
 */
import { type ISignal, Signal } from '@lumino/signaling';

import type {
  KernelRecording,
  LiveEvent,
  LivePrediction,
  LiveStep,
  PredictionTask,
  ScoredEvent,
  StepSummary
} from '../api/records';
import type { INotebookLive, IReplayOf } from '../tokens';
import { CellAliases, type ICellSource } from './cellmatch';
import { StepIndex } from './history';
import { insertSorted, trimFront } from './order';
import { EarlierTrajectories } from './past';
import { withSpeculated } from './speculated';
import { ScoreBook } from './trajectoryscores';
import { PredictionSlots } from './slots';
import type {
  ConnectionState,
  ICombo,
  IPredictionSlot,
  IScorePoint,
  ICellStep,
  IScoreRow,
  ISpeculation,
  IStepHistory,
  LiveChange
} from './types';

/**
 * Size limits of a store.
 */
export interface ILiveLimits {
  /** Whole steps kept (the latest ones). */
  steps: number;
  /** Prediction target steps kept whole, per task (the latest ones). */
  targets: number;
  /** Points kept per score series. */
  seriesPoints: number;
}

export const DEFAULT_LIMITS: ILiveLimits = {
  steps: 200,
  targets: 100,
  seriesPoints: 2000
};

/**
 * The live data of one notebook.
 */
export class NotebookLive implements INotebookLive {
  /**
   * Whose recorded trajectory this store replays (`null`: an open notebook).
   */
  replayOf: IReplayOf | null = null;

  constructor(
    readonly path: string,
    limits: Partial<ILiveLimits> = {}
  ) {
    this._limits = { ...DEFAULT_LIMITS, ...limits };
    this._slots = new PredictionSlots(this._limits.targets);
    this._book = new ScoreBook(this._limits.seriesPoints);
  }

  /**
   * Emitted after a change, once per event or history batch.
   */
  get changed(): ISignal<INotebookLive, LiveChange> {
    return this._changed;
  }

  get trajectoryId(): string | null {
    return this._trajectoryId;
  }

  /**
   * The kernel of the notebook's session, else of its latest trajectory.
   */
  get kernelId(): string | null {
    return this._kernelId;
  }

  set kernelId(value: string | null) {
    if (value !== this._kernelId) {
      this._kernelId = value;
      this._changed.emit('recording');
    }
  }

  get connection(): ConnectionState {
    return this._connection;
  }

  set connection(value: ConnectionState) {
    if (value !== this._connection) {
      this._connection = value;
      this._changed.emit('connection');
    }
  }

  /**
   * Whether the kernel records; `null` while unknown.
   */
  get recording(): boolean | null {
    return this._recording;
  }

  set recording(value: boolean | null) {
    if (value !== this._recording) {
      this._recording = value;
      this._changed.emit('recording');
    }
  }

  /**
   * Why the kernel is not recorded although its switch is on (the server's
   * `reason`); `null` when it is recorded, switched off or unknown.
   */
  get recordingReason(): string | null {
    return this._recordingReason;
  }

  set recordingReason(value: string | null) {
    if (value !== this._recordingReason) {
      this._recordingReason = value;
      this._changed.emit('recording');
    }
  }

  get recordingError(): string | null {
    return this._recordingError;
  }

  set recordingError(value: string | null) {
    if (value !== this._recordingError) {
      this._recordingError = value;
      this._changed.emit('recording');
    }
  }

  /**
   * Apply the kernel's state as the server reported it
   * (`GET|PUT themisto/api/kernels/{id}`): its recording switch, and the
   * step count of its latest trajectory.
   */
  applyKernel(model: KernelRecording): void {
    this.recordingError = null;
    this.recording = model.recording;
    this.recordingReason = model.reason;
    if (model.trajectory_id !== null) {
      this.noteStepCount(model.trajectory_id, model.steps);
    }
  }

  /**
   * Remember how many steps a trajectory has, before its steps arrive (the
   * count of a trajectory left earlier is ignored).
   */
  noteStepCount(trajectoryId: string, steps: number): void {
    if (this.adopt(trajectoryId) && steps > this._knownSteps) {
      const before = this.stepCount;
      this._knownSteps = steps;
      if (this.stepCount !== before) {
        this._changed.emit('steps');
      }
    }
  }

  /**
   * The highest step number seen (the step count of the trajectory).
   */
  get lastStep(): number {
    return this._lastStep;
  }

  get stepCount(): number {
    return Math.max(this._lastStep, this._knownSteps);
  }

  get latestStep(): LiveStep | null {
    const n = this._stepOrder[this._stepOrder.length - 1];
    return n === undefined ? null : (this._steps.get(n) ?? null);
  }

  getStep(step: number): LiveStep | null {
    return this._steps.get(step) ?? null;
  }

  /**
   * The highest target step with a prediction of this task, or `null`.
   */
  latestTarget(task: PredictionTask): number | null {
    return this._slots.latestTarget(task);
  }

  /**
   * The kept target steps of a task, ascending.
   */
  targets(task: PredictionTask): readonly number[] {
    return this._slots.targets(task);
  }

  /**
   * The predictions of one target step, in arrival order.
   */
  slots(task: PredictionTask, targetStep: number): IPredictionSlot[] {
    return this._slots.slots(task, targetStep);
  }

  /**
   * Predictor × context pairs seen in predictions, in arrival order.
   */
  get seenCombos(): Iterable<ICombo> {
    return this._slots.combos;
  }

  /**
   * Running means per task × predictor × context.
   */
  get scoreRows(): IScoreRow[] {
    return this._book.rows;
  }

  /**
   * Scores over steps of one task × predictor × context (bounded, by step).
   */
  series(task: PredictionTask, combo: ICombo): readonly IScorePoint[] {
    return this._book.series(task, combo);
  }

  /**
   * The code cell run last: the last one this page saw finish, else that of
   * the latest step recorded.
   */
  get lastRunCell(): string | null {
    const recorded =
      this._lastRun ??
      this._index.get(this._index.last)?.cell_id ??
      this._past.lastCell;
    return recorded === null ? null : this._aliases.cellOf(recorded);
  }

  /**
   * Learn the notebook's code cells, to find the steps of those whose id no
   * step names (a reloaded notebook of nbformat < 4.5: see cellmatch.ts).
   */
  recognize(cells: readonly ICellSource[]): void {
    this._aliases.recognize(cells, [this._index, ...this._past.indexes]);
  }

  /**
   * A cell's latest step: in the current trajectory, else in the latest
   * earlier one that ran it; by the id its steps ran under when they name no
   * cell of the notebook (see `recognize`).
   */
  cellStep(cellId: string): ICellStep | null {
    return (
      this._stepOfCell(cellId) ?? this._stepOfCell(this._aliases.ranAs(cellId))
    );
  }

  private _stepOfCell(cellId: string | null): ICellStep | null {
    if (cellId === null) {
      return null;
    }
    const current = this._index.latestOfCell(cellId);
    if (current) {
      return {
        trajectoryId: this._trajectoryId,
        summary: current,
        current: true
      };
    }
    return this._past.cellStep(cellId);
  }

  /**
   * The steps in brief of the current or an earlier trajectory.
   */
  historyOf(trajectoryId: string): IStepHistory | null {
    if (trajectoryId === this._trajectoryId) {
      return this._index;
    }
    return this._past.find(trajectoryId);
  }

  /**
   * Add steps in brief of an earlier trajectory of this notebook.
   */
  addPastSummaries(
    trajectoryId: string,
    summaries: readonly StepSummary[]
  ): void {
    if (trajectoryId === this._trajectoryId) {
      this.addSummaries(summaries);
      return;
    }
    if (this._past.add(trajectoryId, summaries)) {
      this._changed.emit('history');
    }
  }

  /**
   * A code cell of this notebook finished running.
   */
  noteRun(cellId: string): void {
    this._lastRun = cellId;
  }

  /**
   * The steps in brief, as far as loaded.
   */
  get history(): IStepHistory {
    return this._index;
  }

  /**
   * Add steps in brief (a history page): cells' badges and footers, and
   * the scoreboard, from steps not kept whole.
   */
  addSummaries(summaries: readonly StepSummary[]): void {
    if (!this._index.addSummaries(summaries)) {
      return;
    }
    for (const summary of summaries) {
      this._lastStep = Math.max(this._lastStep, summary.step);
      for (const p of summary.predictions) {
        this._book.add({ ...p, target_step: summary.step });
      }
    }
    this._changed.emit('history');
  }

  /**
   * Whether a prediction of this target was asked for by the user (as
   * opposed to made automatically by the server).
   */
  isRequested(task: PredictionTask, targetStep: number): boolean {
    return this._slots.isRequested(task, targetStep);
  }

  /**
   * Remember a user request for a target of a task; by default the next
   * step, which is what the server predicts on request.
   */
  markRequested(
    task: PredictionTask,
    target: number = this._lastStep + 1
  ): number {
    if (this._slots.markRequested(task, target)) {
      this._changed.emit('predictions');
    }
    return target;
  }

  /**
   * Follow a trajectory. A different one than the current (a restarted
   * kernel) starts from empty; one left earlier is refused so late events
   * of an old kernel cannot take the panel back.
   */
  adopt(trajectoryId: string, kernelId?: string): boolean {
    if (trajectoryId === this._trajectoryId) {
      return true;
    }
    if (this._retired.has(trajectoryId)) {
      return false;
    }
    if (this._trajectoryId !== null) {
      // Only a change of trajectory discards data: history read before the
      // first event belongs to the trajectory being adopted. Its steps in
      // brief stay: cells not run again keep their badges.
      this._retired.add(this._trajectoryId);
      this._past.keep(this._index);
      this._reset();
    }
    // Read already as an earlier trajectory of the notebook (it was opened
    // before its kernel answered): those steps are this trajectory's.
    const kept = this._past.take(trajectoryId);
    this._trajectoryId = trajectoryId;
    // The notebook's session knows its kernel best; the trajectory's is a
    // fallback for a store followed before its session reported one.
    if (kernelId && !this._kernelId) {
      this._kernelId = kernelId;
    }
    this._index = kept ?? new StepIndex(trajectoryId);
    if (kept) {
      this._lastStep = kept.last;
      for (const summary of kept.summaries()) {
        for (const p of summary.predictions) {
          this._book.add({ ...p, target_step: summary.step });
        }
      }
    }
    this._changed.emit('trajectory');
    return true;
  }

  /**
   * Apply a stream event; events of other trajectories are ignored.
   */
  apply(event: LiveEvent): void {
    if (event.type === 'heartbeat') {
      return;
    }
    if (event.trajectory_id && !this.adopt(event.trajectory_id)) {
      return;
    }
    switch (event.type) {
      case 'trajectory':
        this.noteStepCount(event.trajectory_id, event.trajectory.steps);
        return;
      case 'step':
        this.addSteps([event.step]);
        return;
      case 'recording':
        this.recordingError = null;
        this.recording = event.recording;
        this.recordingReason = event.reason ?? null;
        return;
      case 'predicting':
        this._slots.started(event);
        this._changed.emit('predictions');
        return;
      case 'writing':
        if (this._slots.writing(event)) {
          this._changed.emit('predictions');
        }
        return;
      case 'prediction':
        this.addPredictions([event.prediction]);
        return;
      case 'scored':
        this._scored(event);
        return;
      case 'speculated':
        this._speculation = withSpeculated(this._speculation, event);
        this._changed.emit('predictions');
        return;
    }
  }

  get speculation(): ISpeculation | null {
    const found = this._speculation;
    return found && found.targetStep === this._lastStep + 1 ? found : null;
  }

  /**
   * Add steps (live or from history, in any order; duplicates are ignored).
   */
  addSteps(steps: LiveStep[]): void {
    let added = false;
    for (const step of steps) {
      if (this._steps.has(step.step)) {
        continue;
      }
      this._lastStep = Math.max(this._lastStep, step.step);
      if (insertSorted(this._stepOrder, step.step)) {
        this._steps.set(step.step, step);
        added = true;
      }
      this._index.addStep(step);
    }
    for (const n of trimFront(this._stepOrder, this._limits.steps)) {
      this._steps.delete(n);
    }
    if (added) {
      this._changed.emit('steps');
    }
  }

  /**
   * Add predictions (live or from history); scores are counted once per
   * prediction id.
   */
  addPredictions(predictions: LivePrediction[]): void {
    let scored = false;
    for (const prediction of predictions) {
      this._slots.answered(prediction);
      this._index.addPrediction(prediction);
      if (this._book.add(prediction)) {
        scored = true;
      }
    }
    this._changed.emit(scored ? 'scores' : 'predictions');
  }

  /**
   * Apply the scores of a prediction held: the event carries only them. A
   * prediction not held (older than those kept, or replaced by a retry) is
   * ignored.
   */
  private _scored(event: ScoredEvent): void {
    const brief = this._index.setScores(
      event.prediction_id,
      event.target_step,
      event.scores
    );
    if (brief && this._book.add({ ...brief, target_step: event.target_step })) {
      this._changed.emit('scores');
    }
    for (const slot of this._slots.slots(event.task, event.target_step)) {
      if (slot.prediction?.id === event.prediction_id) {
        this.addPredictions([
          {
            ...slot.prediction,
            reference: event.reference,
            scores: event.scores
          }
        ]);
        return;
      }
    }
  }

  private _reset(): void {
    this._steps.clear();
    this._stepOrder = [];
    this._lastStep = 0;
    this._knownSteps = 0;
    this._slots.clear();
    this._book = new ScoreBook(this._limits.seriesPoints);
    this._index = new StepIndex(null);
    this._lastRun = null;
    this._speculation = null;
  }

  private _limits: ILiveLimits;
  private _book: ScoreBook;
  private _index = new StepIndex();
  private _lastRun: string | null = null;
  private _speculation: ISpeculation | null = null;
  private _past = new EarlierTrajectories();
  private _aliases = new CellAliases();
  private _changed = new Signal<INotebookLive, LiveChange>(this);
  private _trajectoryId: string | null = null;
  private _kernelId: string | null = null;
  private _connection: ConnectionState = 'closed';
  private _recording: boolean | null = null;
  private _recordingError: string | null = null;
  private _recordingReason: string | null = null;
  private _retired = new Set<string>();
  private _steps = new Map<number, LiveStep>();
  private _stepOrder: number[] = [];
  private _lastStep = 0;
  private _knownSteps = 0;
  private _slots: PredictionSlots;
}

/**
 * The target step whose predictions the panel shows for a task: the latest
 * one, or with `onlyRequested` (auto-predict off) the latest one the user
 * asked for.
 */
export function shownTarget(
  store: INotebookLive,
  task: PredictionTask,
  onlyRequested: boolean
): number | null {
  const targets = store.targets(task);
  for (let i = targets.length - 1; i >= 0; i--) {
    if (!onlyRequested || store.isRequested(task, targets[i])) {
      return targets[i];
    }
  }
  return null;
}
