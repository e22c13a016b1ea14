/**
 * Shapes of the REST API that have no JSON Schema of their own: the
 * recording switch, the predictor set-up, listings and request bodies. The
 * records themselves (steps, trajectories, predictions, live events) are
 * generated from their schemas in records.ts.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type {
  LiveStep,
  NotebookRow,
  PredictionTask,
  Scores,
  StepSummary,
  Trajectory
} from './records';

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
   * Whether Themisto records executions of this kernel: true only while its
   * cells reach the store.
   */
  recording: boolean;
  /**
   * Why the kernel is not recorded although its switch is on (the journal
   * directory or the store cannot be written, ...); null when it is recorded
   * or switched off.
   */
  reason: string | null;
  /**
   * Id of the kernel's latest trajectory, if any.
   */
  trajectory_id: string | null;
  /**
   * Number of steps of that trajectory.
   */
  steps: number;
}

/**
 * Body of `PUT themisto/api/kernels/{kernel_id}`.
 */
export interface IRecordingUpdate {
  recording: boolean;
}

/**
 * `GET themisto/api/predictors`.
 */
export interface IPredictorsInfo {
  predictors: string[];
  contexts: string[];
  /**
   * Whether the server predicts by itself as cells run.
   */
  live: boolean;
  /**
   * The embedded model's process of each predictor that runs one.
   */
  localModels: ILocalModelState[];
  /**
   * The predictor that completes a cell being typed (`POST completions`);
   * absent when none does.
   */
  completer?: string;
}

/**
 * An entry of `local_models` in `GET themisto/api/predictors` (the fields the
 * front end reads).
 */
export interface ILocalModelState {
  predictor: string;
  /**
   * `idle`, `running`, `restarting`, `off` (it crashed too often), `failed`
   * (it cannot start) or `closed`.
   */
  state: string;
  reason: string | null;
}

/**
 * A trajectory as listed by `GET themisto/api/trajectories` (the fields the
 * front end reads).
 */
export type ITrajectorySummary = Pick<
  Trajectory,
  'id' | 'kernel_id' | 'steps' | 'started_at'
> &
  Partial<Pick<Trajectory, 'user' | 'notebook_path'>>;

/**
 * A page of `GET themisto/api/trajectories/{id}/steps`.
 */
export interface IStepsPage {
  steps: LiveStep[];
  nextSinceStep: number | null;
}

/**
 * A page of `GET themisto/api/trajectories/{id}/history`: steps in brief.
 */
export interface IHistoryPage {
  steps: StepSummary[];
  nextSinceStep: number | null;
}

/**
 * Which trajectories a request is about: those of a kernel (the live
 * filter: it holds across renames and whatever path form the server
 * records) or those of a notebook path.
 */
export interface ITrajectoryFilter {
  kernel?: string;
  notebook?: string;
  /** Another user's (for holders of the read-all right). */
  user?: string;
}

/**
 * Body of `POST themisto/api/predictions`.
 */
export interface IPredictionRequest {
  kernel_id: string;
  task: PredictionTask;
  code?: string;
}

/**
 * The body of `POST completions`: the text typed so far of the cell below
 * the last cell run.
 */
export interface ICompletionRequest {
  kernel_id: string;
  beginning: string;
  after?: string;
}

/**
 * The rest of that cell as the server's completer writes it; `completion`
 * is `null` when there is none, with the `reason`.
 */
export interface ICellCompletion {
  completion: string | null;
  reason: string | null;
}

/**
 * The body of `POST speculations`: a code cell's text, announced before it
 * runs.
 */
export interface ISpeculationRequest {
  kernel_id: string;
  code: string;
  cell_id: string | null;
}

/**
 * The server's answer to a speculation: started (or already under way), or
 * why not.
 */
export interface ISpeculationReply {
  accepted: boolean;
  reason: string | null;
  /**
   * The step the cell will be if it runs next.
   */
  targetStep: number | null;
}

/**
 * The score names, in display order.
 */
export type ScoreName = keyof Scores;

/**
 * `GET/PUT themisto/api/me`: the server's user and their choices.
 */
export interface IMe {
  user: string;
  consent: boolean;
  captureLevel: string;
  readAll: boolean;
}

/**
 * Query of `GET themisto/api/class`.
 */
export interface IClassQuery {
  user?: string;
  notebook?: string;
  active_after?: string;
  active_before?: string;
  sort?: string;
  order?: 'asc' | 'desc';
  predictor?: string;
  limit?: number;
  offset?: number;
}

/**
 * A page of `GET themisto/api/class`.
 */
export interface IClassPage {
  rows: NotebookRow[];
  total: number;
  users: number;
  optedOut: string[];
}
