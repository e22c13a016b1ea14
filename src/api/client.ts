/**
 * The one client of the Themisto server REST API: the recording switch,
 * predictors, trajectories, steps, predictions, export and the event stream.
 */
import { ServerConnection } from '@jupyterlab/services';
import { type ISignal, Signal } from '@lumino/signaling';

import type { IThemistoClient } from '../tokens';
import { ThemistoApiError } from './errors';
import type {
  ICellCompletion,
  IClassPage,
  IClassQuery,
  ICompletionRequest,
  IHistoryPage,
  IKernelRecording,
  IMe,
  IPredictionRequest,
  IPredictorsInfo,
  IRecordingUpdate,
  ISpeculationReply,
  ISpeculationRequest,
  IStepsPage,
  ITrajectoryFilter,
  ITrajectorySummary
} from './model';
import {
  asRecord,
  toCellCompletion,
  toClassPage,
  toFullPrediction,
  toKernelRecording,
  toMe,
  toPrediction,
  toPredictorsInfo,
  toStep,
  toStepSummary,
  toTrajectorySummaries
} from './parse';
import type {
  LivePrediction,
  LiveStep,
  Prediction,
  StepSummary
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

  get recordingChanged(): ISignal<IThemistoClient, IKernelRecording> {
    return this._recordingChanged;
  }

  async getKernel(kernelId: string): Promise<IKernelRecording> {
    return check(
      await this._json(['kernels', kernelId], { method: 'GET' }),
      toKernelRecording
    );
  }

  async setRecording(
    kernelId: string,
    recording: boolean
  ): Promise<IKernelRecording> {
    const body: IRecordingUpdate = { recording };
    const model = check(
      await this._json(['kernels', kernelId], jsonInit('PUT', body)),
      toKernelRecording
    );
    this._recordingChanged.emit(model);
    return model;
  }

  async getPredictors(): Promise<IPredictorsInfo> {
    return check(await this._get(['predictors']), toPredictorsInfo);
  }

  /**
   * The latest trajectory matching a filter, or `null` when none does. The
   * list is oldest first, so its total gives the offset of the last one.
   */
  async latestTrajectory(
    filter: ITrajectoryFilter
  ): Promise<ITrajectorySummary | null> {
    const first = await this._get(['trajectories'], { ...filter, limit: 1 });
    const total = readTotal(first);
    if (total === 0) {
      return null;
    }
    const page =
      total > 1
        ? await this._get(['trajectories'], {
            ...filter,
            limit: 1,
            offset: total - 1
          })
        : first;
    const list = toTrajectorySummaries(page);
    return list[list.length - 1] ?? null;
  }

  async listTrajectories(
    filter: ITrajectoryFilter
  ): Promise<ITrajectorySummary[]> {
    return toTrajectorySummaries(
      await this._get(['trajectories'], { ...filter, limit: 1000 })
    );
  }

  async getSteps(
    trajectoryId: string,
    sinceStep: number,
    limit: number
  ): Promise<IStepsPage> {
    const record = asRecord(
      await this._get(['trajectories', trajectoryId, 'steps'], {
        since_step: sinceStep,
        limit
      })
    );
    const list = Array.isArray(record.steps) ? record.steps : [];
    const next = record.next_since_step;
    return {
      steps: list.map(toStep).filter((s): s is LiveStep => s !== null),
      nextSinceStep: typeof next === 'number' ? next : null
    };
  }

  async getHistory(
    trajectoryId: string,
    sinceStep: number,
    limit: number
  ): Promise<IHistoryPage> {
    const record = asRecord(
      await this._get(['trajectories', trajectoryId, 'history'], {
        since_step: sinceStep,
        limit
      })
    );
    const list = Array.isArray(record.steps) ? record.steps : [];
    const next = record.next_since_step;
    return {
      steps: list
        .map(toStepSummary)
        .filter((s): s is StepSummary => s !== null),
      nextSinceStep: typeof next === 'number' ? next : null
    };
  }

  async getPredictions(
    trajectoryId: string,
    sinceStep: number,
    untilStep?: number
  ): Promise<LivePrediction[]> {
    const record = asRecord(
      await this._get(['trajectories', trajectoryId, 'predictions'], {
        since_step: sinceStep,
        until_step: untilStep,
        slim: 'true'
      })
    );
    const list = Array.isArray(record.predictions) ? record.predictions : [];
    return list
      .map(toPrediction)
      .filter((p): p is LivePrediction => p !== null);
  }

  async getPrediction(predictionId: string): Promise<Prediction> {
    return check(
      await this._get(['predictions', predictionId]),
      toFullPrediction
    );
  }

  async requestPrediction(body: IPredictionRequest): Promise<number | null> {
    const reply = await this._post(['predictions'], body);
    const target = asRecord(reply).target_step;
    return typeof target === 'number' ? target : null;
  }

  async speculate(body: ISpeculationRequest): Promise<ISpeculationReply> {
    const reply = asRecord(await this._post(['speculations'], body));
    return {
      accepted: reply.accepted === true,
      reason: typeof reply.reason === 'string' ? reply.reason : null,
      targetStep:
        typeof reply.target_step === 'number' ? reply.target_step : null
    };
  }

  async completeCell(
    body: ICompletionRequest,
    signal?: AbortSignal,
    onText?: (text: string) => void
  ): Promise<ICellCompletion> {
    if (!onText) {
      return toCellCompletion(
        asRecord(await this._post(['completions'], body, signal))
      );
    }
    let answer: ICellCompletion | null = null;
    await apiLines(
      this.serverSettings,
      apiUrl(this.serverSettings, ['completions']),
      jsonInit('POST', { ...body, stream: true }, signal),
      line => {
        const record = asRecord(line);
        if (record.done === true) {
          answer = toCellCompletion(record);
        } else if (answer === null && typeof record.completion === 'string') {
          onText(record.completion);
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

  async getMe(): Promise<IMe> {
    return check(await this._get(['me']), toMe);
  }

  async setConsent(consent: boolean): Promise<IMe> {
    return check(await this._json(['me'], jsonInit('PUT', { consent })), toMe);
  }

  async deleteMyData(): Promise<{ trajectories: number; journals: number }> {
    const reply = asRecord(await this._json(['me'], { method: 'DELETE' }));
    return {
      trajectories: Number(reply.deleted_trajectories ?? 0),
      journals: Number(reply.deleted_journals ?? 0)
    };
  }

  async getClass(query: IClassQuery = {}): Promise<IClassPage> {
    const clean: Query = {};
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined && value !== '') {
        clean[name] = value as string | number;
      }
    }
    return toClassPage(await this._get(['class'], clean));
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

  private _recordingChanged = new Signal<IThemistoClient, IKernelRecording>(
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
 * A reply read by `reader`, or an error when it is malformed.
 */
function check<T>(data: unknown, reader: (value: unknown) => T | null): T {
  const value = reader(data);
  if (value === null) {
    throw new ThemistoApiError(
      200,
      'Unexpected response from the Themisto server: ' +
        String(JSON.stringify(data)).slice(0, 200)
    );
  }
  return value;
}

function readTotal(data: unknown): number {
  const record = asRecord(data);
  if (typeof record.total === 'number') {
    return record.total;
  }
  return Array.isArray(record.trajectories) ? record.trajectories.length : 0;
}
