/**
 * The services Themisto's plugins share, as interfaces with their tokens.
 * Implementations live in api/, live/ and settings.ts; this module only names
 * types, so it depends on nothing but type modules.
 */
import { Token } from '@lumino/coreutils';
import type { ISignal } from '@lumino/signaling';

import type {
  IClassQuery,
  ICompletionRequest,
  IPredictionRequest,
  ISpeculationRequest,
  IStepsPage,
  ITrajectoryFilter,
  ScoreName
} from './api/model';
import type {
  CellCompletion,
  Forgotten,
  ClassPage,
  HistoryPage,
  KernelRecording,
  LiveEvent,
  LivePrediction,
  LiveStep,
  Me,
  Prediction,
  PredictionTask,
  PredictorsInfo,
  SpeculationReply,
  Trajectory
} from './api/records';
import type { ICellSource } from './live/cellmatch';
import type {
  ConnectionState,
  ICombo,
  IPredictionSlot,
  ICellStep,
  IScorePoint,
  IScoreRow,
  ISpeculation,
  IStepDetail,
  IStepHistory,
  LiveChange
} from './live/types';

/**
 * Client of the Themisto server REST API (`themisto/api/...`).
 *
 * Every request method throws a `ThemistoApiError` on a non-2xx response, a
 * network error or a malformed reply.
 */
export interface IThemistoClient {
  /**
   * Emitted after any caller switched a kernel's recording on or off, with
   * the server's reply.
   */
  readonly recordingChanged: ISignal<IThemistoClient, KernelRecording>;

  /**
   * Get the recording state and step count of a kernel.
   */
  getKernel(kernelId: string): Promise<KernelRecording>;

  /**
   * Start or stop recording a kernel.
   */
  setRecording(kernelId: string, recording: boolean): Promise<KernelRecording>;

  /**
   * The server's predictors and contexts.
   */
  getPredictors(): Promise<PredictorsInfo>;

  /**
   * The server's user: whether they consent to being recorded, the capture
   * level, whether they may read everyone's trajectories.
   */
  getMe(): Promise<Me>;

  /**
   * Consent to being recorded, or withdraw it (nothing is recorded then).
   */
  setConsent(consent: boolean): Promise<Me>;

  /**
   * Delete everything the user recorded (trajectories, predictions,
   * journals), nothing of anyone else's.
   */
  deleteMyData(): Promise<Forgotten>;

  /**
   * A page of the class roster: every user's notebooks (own only without
   * the read-all right) and who opted out.
   */
  getClass(query?: IClassQuery): Promise<ClassPage>;

  /**
   * The latest trajectory matching a filter, or `null` when none does.
   */
  latestTrajectory(filter: ITrajectoryFilter): Promise<Trajectory | null>;

  /**
   * The trajectories matching a filter, oldest first (at most 1,000).
   */
  listTrajectories(filter: ITrajectoryFilter): Promise<Trajectory[]>;

  /**
   * A page of a trajectory's steps after `sinceStep`.
   */
  getSteps(
    trajectoryId: string,
    sinceStep: number,
    limit: number
  ): Promise<IStepsPage>;

  /**
   * A page of a trajectory's steps in brief (cell, time, memory, error name,
   * the predictions' scores or why they are missing) after `sinceStep`.
   */
  getHistory(
    trajectoryId: string,
    sinceStep: number,
    limit: number
  ): Promise<HistoryPage>;

  /**
   * A trajectory's predictions of target steps after `sinceStep` (up to
   * `untilStep`), without their prompts.
   */
  getPredictions(
    trajectoryId: string,
    sinceStep: number,
    untilStep?: number
  ): Promise<LivePrediction[]>;

  /**
   * One whole prediction, with its prompt and raw answer.
   */
  getPrediction(predictionId: string): Promise<Prediction>;

  /**
   * Ask for a prediction; the result arrives on the stream. Resolves to the
   * target step the server chose, when it says.
   */
  requestPrediction(body: IPredictionRequest): Promise<number | null>;

  /**
   * Announce a code cell's text before it runs: the server predicts its
   * output now and uses that prediction if the cell runs with this text.
   */
  speculate(body: ISpeculationRequest): Promise<SpeculationReply>;

  /**
   * What goes at the cursor of a code cell being typed, as the server's
   * completer writes it (nothing is stored); `signal` aborts the request,
   * which stops the model on the server too. With `onText`, streamed: it
   * takes the text so far each time the model's grows, before the answer
   * (which alone decides: it may be `null` after streamed text).
   */
  completeCell(
    body: ICompletionRequest,
    signal?: AbortSignal,
    onText?: (text: string) => void
  ): Promise<CellCompletion>;

  /**
   * Read trajectories as JSONL (authenticated by header; the caller streams
   * the body).
   */
  openExport(
    what:
      | { trajectories: string[] }
      | { notebook: string; user?: string }
      | { all: true; user?: string },
    filename: string
  ): Promise<Response>;
}

/**
 * The Themisto REST client token.
 */
export const IThemistoClient = new Token<IThemistoClient>(
  'themisto-ext:IThemistoClient',
  'A client of the Themisto server REST API.'
);

/**
 * The live data of one notebook: its kernel's recording state, its latest
 * trajectory's steps, predictions and scores. Kept up to date from the
 * event stream; read-only for its users.
 */
export interface INotebookLive {
  /**
   * The notebook path.
   */
  readonly path: string;

  /**
   * Emitted after a change, once per event or history batch.
   */
  readonly changed: ISignal<INotebookLive, LiveChange>;

  /**
   * The trajectory followed, once known.
   */
  readonly trajectoryId: string | null;

  /**
   * Set when this is a recorded trajectory replayed read-only (the class
   * view's drill-down), not an open notebook: whose and which notebook.
   */
  readonly replayOf: IReplayOf | null;

  /**
   * The kernel of the notebook's session, else of its latest trajectory.
   */
  readonly kernelId: string | null;

  /**
   * The state of the live events of the notebook's kernel.
   */
  readonly connection: ConnectionState;

  /**
   * Whether the kernel records; `null` while unknown.
   */
  readonly recording: boolean | null;

  /**
   * Why the kernel's recording state could not be read, if it could not.
   */
  readonly recordingError: string | null;
  /**
   * Why the kernel is not recorded although its switch is on, as the server
   * says (the journal directory or the store cannot be written, ...).
   */
  readonly recordingReason: string | null;

  /**
   * The highest step number seen (steps and predictions are numbered by it).
   */
  readonly lastStep: number;

  /**
   * The number of steps of the trajectory: the highest step seen, or more
   * when the server said so before the steps arrived.
   */
  readonly stepCount: number;

  /**
   * The latest step kept whole.
   */
  readonly latestStep: LiveStep | null;

  /**
   * Predictor × context pairs seen in predictions, in arrival order.
   */
  readonly seenCombos: Iterable<ICombo>;

  /**
   * Running means per task × predictor × context.
   */
  readonly scoreRows: IScoreRow[];

  /**
   * A step, if it is kept whole.
   */
  getStep(step: number): LiveStep | null;

  /**
   * The highest target step with a prediction of this task, or `null`.
   */
  latestTarget(task: PredictionTask): number | null;

  /**
   * The output predicted for a cell before it runs: the trajectory's latest
   * speculation while it is about the next step (`null` otherwise).
   */
  readonly speculation: ISpeculation | null;

  /**
   * The kept target steps of a task, ascending.
   */
  targets(task: PredictionTask): readonly number[];

  /**
   * The predictions of one target step, in arrival order.
   */
  slots(task: PredictionTask, targetStep: number): IPredictionSlot[];

  /**
   * Scores over steps of one task × predictor × context (bounded, by step).
   */
  series(task: PredictionTask, combo: ICombo): readonly IScorePoint[];

  /**
   * The id of the code cell run last (seen finishing on this page, else the
   * cell of the latest step recorded).
   */
  readonly lastRunCell: string | null;

  /**
   * The current trajectory's steps in brief (cell, time, memory, error,
   * predictions' scores or why they are missing), as far as loaded.
   */
  readonly history: IStepHistory;

  /**
   * A cell's latest step: in the current trajectory, else in an earlier one
   * of the notebook (before a kernel restart, another kernel).
   */
  cellStep(cellId: string): ICellStep | null;

  /**
   * Learn the notebook's code cells (id and source), so that `cellStep`
   * finds the steps of a cell whose id no step names: a reloaded notebook of
   * nbformat < 4.5 gets new cell ids at every load.
   */
  recognize(cells: readonly ICellSource[]): void;

  /**
   * The steps in brief of the current or an earlier trajectory.
   */
  historyOf(trajectoryId: string): IStepHistory | null;

  /**
   * Whether a prediction of this target was asked for by the user (as
   * opposed to made automatically by the server).
   */
  isRequested(task: PredictionTask, targetStep: number): boolean;
}

/**
 * A stream event with the notebook store it was applied to.
 */
export interface ILiveEventArgs {
  store: INotebookLive;
  event: LiveEvent;
}

/**
 * The live data of the notebooks: one event stream per followed notebook,
 * parsed into per-notebook stores, plus the server's predictor set-up.
 */
/**
 * Whose recorded trajectory a replay shows.
 */
export interface IReplayOf {
  user: string;
  notebookPath: string | null;
}

export interface IThemistoLive {
  /**
   * The store of the active notebook, if any (or of a replay).
   */
  readonly current: INotebookLive | null;

  /**
   * Show a recorded trajectory, read-only, as the current store (until a
   * notebook is activated): its steps, outputs, predictions and runtime, as
   * the prediction panel shows an open notebook's.
   */
  replay(trajectory: Trajectory): Promise<INotebookLive>;

  /**
   * Emitted when the active notebook (hence `current`) changes.
   */
  readonly currentChanged: ISignal<IThemistoLive, INotebookLive | null>;

  /**
   * Emitted when a notebook's store is made (the notebook opened).
   */
  readonly storeAdded: ISignal<IThemistoLive, INotebookLive>;

  /**
   * Emitted for each stream event after its store applied it.
   */
  readonly eventReceived: ISignal<IThemistoLive, ILiveEventArgs>;

  /**
   * The server's predictors and contexts; `null` until known.
   */
  readonly predictors: PredictorsInfo | null;

  /**
   * Why the predictors could not be read, if they could not.
   */
  readonly predictorsError: string | null;

  /**
   * Emitted when `predictors` or `predictorsError` change.
   */
  readonly predictorsChanged: ISignal<IThemistoLive, void>;

  /**
   * The store of a notebook path, if it was ever followed.
   */
  store(path: string): INotebookLive | null;

  /**
   * Read the server's predictors again.
   */
  refreshPredictors(): Promise<void>;

  /**
   * Read the active notebook's kernel state again (recording and step
   * count; one request). Failures land in the store's `recordingError`.
   */
  refreshKernel(): Promise<void>;

  /**
   * One step whole for review, with the step after it and the predictions
   * of both: from what the store keeps, else read from the server.
   */
  loadStep(
    store: INotebookLive,
    step: number,
    trajectoryId?: string | null
  ): Promise<IStepDetail>;

  /**
   * Read the history page holding `step` if it is not loaded yet (review
   * going back past what was read).
   */
  loadHistoryBefore(store: INotebookLive, step: number): Promise<void>;

  /**
   * Ask for a prediction for a notebook's kernel (the active notebook by
   * default); the result arrives on the stream.
   *
   * @throws {ThemistoApiError} when the server refuses or there is no kernel.
   */
  requestPrediction(
    task: PredictionTask,
    options?: { code?: string; store?: INotebookLive }
  ): Promise<void>;
}

/**
 * The live data token.
 */
export const IThemistoLive = new Token<IThemistoLive>(
  'themisto-ext:IThemistoLive',
  'Live steps, predictions and scores of the open notebooks.'
);

/**
 * How the panel lays out several predictors × contexts.
 */
export type PanelLayout = 'side-by-side' | 'stacked';

/**
 * The values of the prediction settings (schema/predictions.json).
 */
export interface IPredictionOptions {
  /**
   * Predict as cells run. When off, the panel shows only predictions asked
   * for ("Predict next cell now", Retry).
   */
  autoPredict: boolean;
  /**
   * Predictors to show; empty shows every predictor the server runs.
   */
  predictors: string[];
  /**
   * Contexts to show; empty shows every context the server uses.
   */
  contexts: string[];
  layout: PanelLayout;
  /**
   * The score shown on cell markers.
   */
  markerScore: ScoreName;
  showCellMarkers: boolean;
  /**
   * A line under each executed cell: its recorded time, memory and score.
   */
  showCellFooter: boolean;
  /**
   * Offer the next-cell prediction as ghost text when an empty cell is
   * selected.
   */
  ghostText: boolean;
  /**
   * Ask the server to predict a code cell's output before it runs: when its
   * text has been stable for `speculationPause` ms, and when it is selected.
   */
  speculate: boolean;
  /**
   * Milliseconds a cell's text must stay unchanged before it is announced.
   */
  speculationPause: number;
}

/**
 * The prediction settings shared by the prediction plugins.
 */
export interface IPredictionSettings {
  /**
   * The current values, validated.
   */
  readonly settings: IPredictionOptions;

  /**
   * Emitted with the new values after they changed.
   */
  readonly changed: ISignal<IPredictionSettings, IPredictionOptions>;
}

/**
 * The prediction settings token (schema/predictions.json).
 */
export const IPredictionSettings = new Token<IPredictionSettings>(
  'themisto-ext:IPredictionSettings',
  'The user settings of the Themisto prediction features.'
);
