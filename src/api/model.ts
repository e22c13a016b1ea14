/**
 * The bodies of requests to the REST API and the queries of its listings.
 * What the server sends back (records and replies) is typed in records.ts and
 * read by readers.ts, both generated from the JSON Schemas.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type { LiveStep, PredictionTask, Scores, StepsPage } from './records';

/**
 * Body of `PUT themisto/api/kernels/{kernel_id}`.
 */
export interface IRecordingUpdate {
  recording: boolean;
}

/**
 * A page of `GET themisto/api/trajectories/{id}/steps`, its steps as the
 * live stream carries them.
 */
export type IStepsPage = Omit<StepsPage, 'steps'> & { steps: LiveStep[] };

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
 * The body of `POST speculations`: a code cell's text, announced before it
 * runs.
 */
export interface ISpeculationRequest {
  kernel_id: string;
  code: string;
  cell_id: string | null;
}

/**
 * The score names, in display order.
 */
export type ScoreName = keyof Scores;

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
