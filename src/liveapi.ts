import { ServerConnection } from '@jupyterlab/services';

import { ThemistoApiError } from './errors';
import {
  IPrediction,
  IPredictorsInfo,
  IStep,
  PredictionTask,
  toPrediction,
  toPredictorsInfo,
  toStep
} from './livemodel';
import { apiJson, apiRequest, apiUrl, Query } from './request';

/**
 * A trajectory as listed by `GET themisto/api/trajectories`.
 */
export interface ITrajectorySummary {
  id: string;
  kernel_id: string;
  steps: number;
}

/**
 * A page of `GET themisto/api/trajectories/{id}/steps`.
 */
export interface IStepsPage {
  steps: IStep[];
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
 * Client of the live-data routes of the Themisto server API: predictors,
 * trajectories, steps, predictions, export and the event stream.
 */
export class LiveApi {
  constructor(readonly serverSettings: ServerConnection.ISettings) {}

  async getPredictors(): Promise<IPredictorsInfo> {
    const data = await this._get(['predictors']);
    const info = toPredictorsInfo(data);
    if (!info) {
      throw unexpected(data);
    }
    return info;
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
    const list = readTrajectories(page);
    return list[list.length - 1] ?? null;
  }

  /**
   * The trajectories matching a filter, oldest first (at most 1,000).
   */
  async listTrajectories(
    filter: ITrajectoryFilter
  ): Promise<ITrajectorySummary[]> {
    return readTrajectories(
      await this._get(['trajectories'], { ...filter, limit: 1000 })
    );
  }

  async getSteps(
    trajectoryId: string,
    sinceStep: number,
    limit: number
  ): Promise<IStepsPage> {
    const data = await this._get(['trajectories', trajectoryId, 'steps'], {
      since_step: sinceStep,
      limit
    });
    const record = asRecord(data);
    const list = Array.isArray(record.steps) ? record.steps : [];
    const next = record.next_since_step;
    return {
      steps: list.map(toStep).filter((s): s is IStep => s !== null),
      nextSinceStep: typeof next === 'number' ? next : null
    };
  }

  async getPredictions(
    trajectoryId: string,
    sinceStep: number
  ): Promise<IPrediction[]> {
    const data = await this._get(
      ['trajectories', trajectoryId, 'predictions'],
      { since_step: sinceStep }
    );
    const record = asRecord(data);
    const list = Array.isArray(record.predictions) ? record.predictions : [];
    return list.map(toPrediction).filter((p): p is IPrediction => p !== null);
  }

  /**
   * Ask the server for a prediction; the result arrives on the stream.
   * Resolves to the target step the server chose, when it says.
   */
  async requestPrediction(body: IPredictionRequest): Promise<number | null> {
    const reply = await apiJson(
      this.serverSettings,
      apiUrl(this.serverSettings, ['predictions']),
      {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'Content-Type': 'application/json' }
      }
    );
    const target = asRecord(reply).target_step;
    return typeof target === 'number' ? target : null;
  }

  /**
   * The URL downloading a notebook's trajectories as JSONL. A plain link is
   * used so the browser streams the file to disk; the token is added when
   * the page has one (a link cannot send the Authorization header).
   */
  exportUrl(
    what: { trajectories: string[] } | { notebook: string },
    filename: string
  ): string {
    const token = this.serverSettings.token;
    return apiUrl(this.serverSettings, ['export'], {
      ...('trajectories' in what
        ? { trajectory: what.trajectories }
        : { notebook: what.notebook }),
      filename,
      token: token ? token : undefined
    });
  }

  /**
   * Open the event stream; the caller reads `response.body`.
   */
  openEvents(
    filter: ITrajectoryFilter,
    signal: AbortSignal
  ): Promise<Response> {
    return apiRequest(
      this.serverSettings,
      apiUrl(this.serverSettings, ['events'], { ...filter }),
      { method: 'GET', signal, headers: { Accept: 'text/event-stream' } }
    );
  }

  private _get(path: string[], query: Query = {}): Promise<unknown> {
    return apiJson(
      this.serverSettings,
      apiUrl(this.serverSettings, path, query)
    );
  }
}

/**
 * A file name for a notebook's export: its base name with `.jsonl`, reduced
 * to characters the server accepts in a plain file name.
 */
export function exportFilename(notebookPath: string): string {
  const base = notebookPath.split('/').pop() ?? '';
  const stem = base.replace(/\.ipynb$/i, '').replace(/[^\w.-]+/g, '_');
  const safe = stem.replace(/^[._]+/, '') || 'trajectory';
  return `${safe}.jsonl`;
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function unexpected(data: unknown): ThemistoApiError {
  return new ThemistoApiError(
    200,
    'Unexpected response from the Themisto server: ' +
      JSON.stringify(data).slice(0, 200)
  );
}

function readTotal(data: unknown): number {
  const record = asRecord(data);
  if (typeof record.total === 'number') {
    return record.total;
  }
  return Array.isArray(record.trajectories) ? record.trajectories.length : 0;
}

function readTrajectories(data: unknown): ITrajectorySummary[] {
  const list = asRecord(data).trajectories;
  const out: ITrajectorySummary[] = [];
  for (const entry of Array.isArray(list) ? list : []) {
    const item = asRecord(entry);
    if (typeof item.id === 'string') {
      out.push({
        id: item.id,
        kernel_id: typeof item.kernel_id === 'string' ? item.kernel_id : '',
        steps: typeof item.steps === 'number' ? item.steps : 0
      });
    }
  }
  return out;
}
