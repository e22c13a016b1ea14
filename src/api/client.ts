/**
 * The one client of the Themisto server REST API: the recording switch,
 * predictors, trajectories, steps, predictions, export and the event stream.
 */
import { ServerConnection } from '@jupyterlab/services';
import { type ISignal, Signal } from '@lumino/signaling';

import type { IThemistoClient } from '../tokens';
import { ThemistoApiError } from './errors';
import type {
  IClassQuery,
  ICompletionRequest,
  IPredictionRequest,
  IRecordingUpdate,
  ISpeculationRequest,
  IStepsPage,
  ITrajectoryFilter
} from './model';
import {
  readCellCompletion,
  readClassPage,
  readCompletionLine,
  readForgotten,
  readHistoryPage,
  readKernelRecording,
  readMe,
  readPrediction,
  readPredictionsPage,
  readPredictionsStarted,
  readPredictorsInfo,
  readSpeculationReply,
  readStepsPage,
  readTrajectoryPage
} from './readers';
import type { IReader } from './reader';
import type {
  CellCompletion,
  ClassPage,
  Forgotten,
  HistoryPage,
  KernelRecording,
  LivePrediction,
  LiveStep,
  Me,
  Prediction,
  PredictorsInfo,
  SpeculationReply,
  Step,
  Trajectory
} from './records';
import { apiJson, apiLines, apiRequest, apiUrl, type Query } from './request';

export { ThemistoApiError } from './errors';
export { API_NAMESPACE } from './request';

/**
 * Typed client of the Themisto server REST API.
 */
export class ThemistoClient implements IThemistoClient {
  /**
   * @param serverSettings Settings of the Jupyter server; defaults to the
   *   page's settings.
   */
  constructor(serverSettings?: ServerConnection.ISettings) {
    this.serverSettings = serverSettings ?? ServerConnection.makeSettings();
  }

  /**
   * The server settings used for requests.
   */
  readonly serverSettings: ServerConnection.ISettings;

  get recordingChanged(): ISignal<IThemistoClient, KernelRecording> {
    return this._recordingChanged;
  }

  async getKernel(kernelId: string): Promise<KernelRecording> {
    return check(
      await this._json(['kernels', kernelId], { method: 'GET' }),
      readKernelRecording
    );
  }

  async setRecording(
    kernelId: string,
    recording: boolean
  ): Promise<KernelRecording> {
    const body: IRecordingUpdate = { recording };
    const model = check(
      await this._json(['kernels', kernelId], jsonInit('PUT', body)),
      readKernelRecording
    );
    this._recordingChanged.emit(model);
    return model;
  }

  async getPredictors(): Promise<PredictorsInfo> {
    return check(await this._get(['predictors']), readPredictorsInfo);
  }

  /**
   * The latest trajectory matching a filter, or `null` when none does. The
   * list is oldest first, so its total gives the offset of the last one.
   */
  async latestTrajectory(
    filter: ITrajectoryFilter
  ): Promise<Trajectory | null> {
    const first = check(
      await this._get(['trajectories'], { ...filter, limit: 1 }),
      readTrajectoryPage
    );
    if (first.total === 0) {
      return null;
    }
    const page =
      first.total > 1
        ? check(
            await this._get(['trajectories'], {
              ...filter,
              limit: 1,
              offset: first.total - 1
            }),
            readTrajectoryPage
          )
        : first;
    return page.trajectories[page.trajectories.length - 1] ?? null;
  }

  async listTrajectories(filter: ITrajectoryFilter): Promise<Trajectory[]> {
    const page = check(
      await this._get(['trajectories'], { ...filter, limit: 1000 }),
      readTrajectoryPage
    );
    return page.trajectories;
  }

  async getSteps(
    trajectoryId: string,
    sinceStep: number,
    limit: number
  ): Promise<IStepsPage> {
    const page = check(
      await this._get(['trajectories', trajectoryId, 'steps'], {
        since_step: sinceStep,
        limit
      }),
      readStepsPage
    );
    return { ...page, steps: page.steps.map(liveStep) };
  }

  async getHistory(
    trajectoryId: string,
    sinceStep: number,
    limit: number
  ): Promise<HistoryPage> {
    return check(
      await this._get(['trajectories', trajectoryId, 'history'], {
        since_step: sinceStep,
        limit
      }),
      readHistoryPage
    );
  }

  async getPredictions(
    trajectoryId: string,
    sinceStep: number,
    untilStep?: number
  ): Promise<LivePrediction[]> {
    const page = check(
      await this._get(['trajectories', trajectoryId, 'predictions'], {
        since_step: sinceStep,
        until_step: untilStep,
        slim: 'true'
      }),
      readPredictionsPage
    );
    // Asked slim: the server leaves prompt and raw out; never keep them.
    return page.predictions.map(({ prompt, raw, ...slim }) => slim);
  }

  async getPrediction(predictionId: string): Promise<Prediction> {
    return check(
      await this._get(['predictions', predictionId]),
      readPrediction
    );
  }

  async requestPrediction(body: IPredictionRequest): Promise<number> {
    const reply = check(
      await this._post(['predictions'], body),
      readPredictionsStarted
    );
    return reply.target_step;
  }

  async speculate(body: ISpeculationRequest): Promise<SpeculationReply> {
    return check(
      await this._post(['speculations'], body),
      readSpeculationReply
    );
  }

  async completeCell(
    body: ICompletionRequest,
    signal?: AbortSignal,
    onText?: (text: string) => void
  ): Promise<CellCompletion> {
    if (!onText) {
      return check(
        await this._post(['completions'], body, signal),
        readCellCompletion
      );
    }
    let answer: CellCompletion | null = null;
    await apiLines(
      this.serverSettings,
      apiUrl(this.serverSettings, ['completions']),
      jsonInit('POST', { ...body, stream: true }, signal),
      data => {
        const line = check(data, readCompletionLine);
        if (line.done) {
          answer = line; // the last line: the answer (done: true)
        } else if (answer === null) {
          onText(line.completion);
        }
      }
    );
    if (answer === null) {
      throw new ThemistoApiError(
        200,
        'The completion ended without its answer'
      );
    }
    return answer;
  }

  async getMe(): Promise<Me> {
    return check(await this._get(['me']), readMe);
  }

  async setConsent(consent: boolean): Promise<Me> {
    return check(
      await this._json(['me'], jsonInit('PUT', { consent })),
      readMe
    );
  }

  async deleteMyData(): Promise<Forgotten> {
    return check(await this._json(['me'], { method: 'DELETE' }), readForgotten);
  }

  async getClass(query: IClassQuery = {}): Promise<ClassPage> {
    const clean: Query = {};
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined && value !== '') {
        clean[name] = value as string | number;
      }
    }
    return check(await this._get(['class'], clean), readClassPage);
  }

  /**
   * Read trajectories as JSONL: an authenticated request (the token goes in
   * a header, never in the URL) whose body the caller streams.
   */
  openExport(
    what:
      | { trajectories: string[] }
      | { notebook: string; user?: string }
      | { all: true; user?: string },
    filename: string
  ): Promise<Response> {
    const selection: Query =
      'trajectories' in what
        ? { trajectory: what.trajectories }
        : 'notebook' in what
          ? { notebook: what.notebook, user: what.user }
          : { all: 'true', user: what.user };
    return apiRequest(
      this.serverSettings,
      apiUrl(this.serverSettings, ['export'], { ...selection, filename }),
      { method: 'GET' }
    );
  }

  private _get(path: string[], query: Query = {}): Promise<unknown> {
    return apiJson(
      this.serverSettings,
      apiUrl(this.serverSettings, path, query)
    );
  }

  /**
   * Send a request to `themisto/api/<path...>` and parse the JSON reply.
   */
  private _post(
    path: string[],
    body: object,
    signal?: AbortSignal
  ): Promise<unknown> {
    return this._json(path, jsonInit('POST', body, signal));
  }

  private _json(path: string[], init: RequestInit): Promise<unknown> {
    return apiJson(
      this.serverSettings,
      apiUrl(this.serverSettings, path),
      init
    );
  }

  private _recordingChanged = new Signal<IThemistoClient, KernelRecording>(
    this
  );
}

/**
 * A request sending `body` as JSON.
 */
function jsonInit(
  method: 'POST' | 'PUT',
  body: object,
  signal?: AbortSignal
): RequestInit {
  return {
    method,
    body: JSON.stringify(body),
    headers: { 'Content-Type': 'application/json' },
    signal
  };
}

/**
 * A file name for a notebook's export: its base name with `.jsonl`, reduced
 * to characters the server accepts in a plain file name.
 */
export function exportFilename(notebookPath: string): string {
  const base = notebookPath.split('/').pop() ?? '';
  // (a name given as `x.jsonl` keeps one extension, not `x.jsonl.jsonl`)
  const stem = base.replace(/\.(ipynb|jsonl)$/i, '').replace(/[^\w.-]+/g, '_');
  const safe = stem.replace(/^[._]+/, '') || 'trajectory';
  return `${safe}.jsonl`;
}

/**
 * A reply read by `read`, or an error saying where it breaks its schema.
 */
function check<T>(data: unknown, read: IReader<T>): T {
  const value = read(data);
  if (value === null) {
    throw new ThemistoApiError(
      200,
      `Unexpected response from the Themisto server (${read.problem(data)}): ` +
        String(JSON.stringify(data)).slice(0, 200)
    );
  }
  return value;
}

/**
 * A step as the live stream carries it: what the panel shows of it.
 */
function liveStep(step: Step): LiveStep {
  return {
    trajectory_id: step.trajectory_id,
    kernel_id: step.kernel_id,
    notebook_path: step.notebook_path ?? null,
    step: step.step,
    cell_id: step.cell_id ?? null,
    code: step.code,
    output: step.output,
    execution_time: step.execution_time,
    memory_bytes: step.memory_bytes,
    runtime_variables: step.runtime_variables,
    error: step.error
  };
}
