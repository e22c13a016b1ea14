/**
 * Data model of the Themisto live stream and prediction API.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit
 * tested. Payloads come from the server as JSON: every value is checked before
 * it is trusted, and unknown extra fields are tolerated (the server may grow).
 */

/**
 * What a prediction is about: the output of the cell being run, or the code
 * of the cell after the last one.
 */
export type PredictionTask = 'output' | 'next-cell';

/**
 * One runtime variable of a step's snapshot.
 */
export interface IRuntimeVariable {
  type: string;
  size: number | null;
  size_exact: boolean;
  repr: string;
  shape?: number[];
  length?: number;
}

/**
 * One executed cell, in the trajectory format (docs/format.md).
 */
export interface IStep {
  trajectory_id: string;
  kernel_id: string;
  step: number;
  cell_id: string | null;
  notebook_path: string | null;
  code: string;
  output: string;
  execution_time: number;
  memory_bytes: number | null;
  runtime_variables: Record<string, IRuntimeVariable>;
  error: { ename: string; evalue: string } | null;
}

/**
 * Scores of a prediction against the reference, each in [0, 1].
 */
export interface IScores {
  exact_match: number;
  rouge_l: number;
  chrf: number;
}

/**
 * The score names, in display order.
 */
export type ScoreName = keyof IScores;

/**
 * One prediction made by a predictor with one kind of context.
 */
export interface IPrediction {
  id: string;
  trajectory_id: string;
  kernel_id: string;
  notebook_path: string | null;
  task: PredictionTask;
  context: string;
  predictor: string;
  model: string;
  target_step: number;
  cell_id: string | null;
  created_at: string;
  latency: number;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cached_tokens: number | null;
  prefix_reused: boolean | null;
  prompt: { system: string; user: string } | null;
  raw: string;
  answer: string;
  error: { type: string; message: string } | null;
  reference: string | null;
  scores: IScores | null;
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
}

/**
 * Fields every event about a trajectory carries.
 */
interface ITrajectoryScoped {
  trajectory_id: string;
  kernel_id: string;
  notebook_path: string | null;
}

/**
 * A typed event of the live stream.
 */
export type LiveEvent =
  | { type: 'hello' }
  | (ITrajectoryScoped & { type: 'trajectory' })
  | (ITrajectoryScoped & { type: 'step'; step: IStep })
  | (ITrajectoryScoped & {
      type: 'predicting';
      task: PredictionTask;
      context: string;
      predictor: string;
      target_step: number;
      cell_id: string | null;
    })
  | (ITrajectoryScoped & { type: 'prediction'; prediction: IPrediction })
  | (ITrajectoryScoped & { type: 'scored'; prediction: IPrediction });

/**
 * A `predicting` event.
 */
export type PredictingEvent = Extract<LiveEvent, { type: 'predicting' }>;

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown, fallback = ''): string {
  return typeof value === 'string' ? value : fallback;
}

function strOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function num(value: unknown, fallback = 0): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function numOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function isTask(value: unknown): value is PredictionTask {
  return value === 'output' || value === 'next-cell';
}

function unit(value: unknown): number {
  return Math.min(1, Math.max(0, num(value)));
}

/**
 * Read a step; `null` when it lacks what the front end needs (its number).
 */
export function toStep(value: unknown): IStep | null {
  if (!isRecord(value) || typeof value.step !== 'number') {
    return null;
  }
  const variables: Record<string, IRuntimeVariable> = {};
  const raw = isRecord(value.runtime_variables) ? value.runtime_variables : {};
  for (const [name, entry] of Object.entries(raw)) {
    if (isRecord(entry)) {
      variables[name] = {
        type: str(entry.type, '?'),
        size: numOrNull(entry.size),
        size_exact: entry.size_exact !== false,
        repr: str(entry.repr),
        ...(Array.isArray(entry.shape)
          ? { shape: entry.shape.filter(n => typeof n === 'number') }
          : {}),
        ...(typeof entry.length === 'number' ? { length: entry.length } : {})
      };
    }
  }
  const error = isRecord(value.error)
    ? { ename: str(value.error.ename), evalue: str(value.error.evalue) }
    : null;
  return {
    trajectory_id: str(value.trajectory_id),
    kernel_id: str(value.kernel_id),
    step: value.step,
    cell_id: strOrNull(value.cell_id),
    notebook_path: strOrNull(value.notebook_path),
    code: str(value.code),
    output: str(value.output),
    execution_time: num(value.execution_time),
    memory_bytes: numOrNull(value.memory_bytes),
    runtime_variables: variables,
    error
  };
}

/**
 * Read scores; `null` unless all three are numbers.
 */
export function toScores(value: unknown): IScores | null {
  if (
    !isRecord(value) ||
    typeof value.exact_match !== 'number' ||
    typeof value.rouge_l !== 'number' ||
    typeof value.chrf !== 'number'
  ) {
    return null;
  }
  return {
    exact_match: unit(value.exact_match),
    rouge_l: unit(value.rouge_l),
    chrf: unit(value.chrf)
  };
}

/**
 * Read a prediction; `null` when it lacks its identity.
 */
export function toPrediction(value: unknown): IPrediction | null {
  if (
    !isRecord(value) ||
    typeof value.id !== 'string' ||
    !isTask(value.task) ||
    typeof value.target_step !== 'number'
  ) {
    return null;
  }
  const prompt = isRecord(value.prompt)
    ? { system: str(value.prompt.system), user: str(value.prompt.user) }
    : null;
  const error = isRecord(value.error)
    ? {
        type: str(value.error.type, 'error'),
        message: str(value.error.message)
      }
    : null;
  return {
    id: value.id,
    trajectory_id: str(value.trajectory_id),
    kernel_id: str(value.kernel_id),
    notebook_path: strOrNull(value.notebook_path),
    task: value.task,
    context: str(value.context, 'none'),
    predictor: str(value.predictor, '?'),
    model: str(value.model),
    target_step: value.target_step,
    cell_id: strOrNull(value.cell_id),
    created_at: str(value.created_at),
    latency: num(value.latency),
    prompt_tokens: numOrNull(value.prompt_tokens),
    completion_tokens: numOrNull(value.completion_tokens),
    cached_tokens: numOrNull(value.cached_tokens),
    prefix_reused:
      typeof value.prefix_reused === 'boolean' ? value.prefix_reused : null,
    prompt,
    raw: str(value.raw),
    answer: str(value.answer),
    error,
    reference: strOrNull(value.reference),
    scores: toScores(value.scores)
  };
}

/**
 * Read `GET themisto/api/predictors`; `null` when malformed.
 */
export function toPredictorsInfo(value: unknown): IPredictorsInfo | null {
  if (!isRecord(value) || !Array.isArray(value.predictors)) {
    return null;
  }
  const strings = (list: unknown): string[] =>
    Array.isArray(list)
      ? list.filter((item): item is string => typeof item === 'string')
      : [];
  return {
    predictors: strings(value.predictors),
    contexts: strings(value.contexts),
    live: value.live !== false
  };
}

/**
 * Parse one stream message (`event:` name and `data:` text) into a typed
 * event; `null` for unknown or malformed events, which are skipped.
 */
export function parseLiveEvent(name: string, data: string): LiveEvent | null {
  let payload: unknown;
  try {
    payload = JSON.parse(data);
  } catch {
    return null;
  }
  if (!isRecord(payload)) {
    return null;
  }
  const type = typeof payload.type === 'string' ? payload.type : name;
  if (type === 'hello') {
    return { type };
  }
  const scope: ITrajectoryScoped = {
    trajectory_id: str(payload.trajectory_id),
    kernel_id: str(payload.kernel_id),
    notebook_path: strOrNull(payload.notebook_path)
  };
  switch (type) {
    case 'trajectory':
      return scope.trajectory_id ? { ...scope, type } : null;
    case 'step': {
      const step = toStep(payload.step);
      if (!step) {
        return null;
      }
      // The envelope knows the trajectory even when the step omits it.
      step.trajectory_id ||= scope.trajectory_id;
      step.kernel_id ||= scope.kernel_id;
      return { ...scope, type, step };
    }
    case 'predicting':
      if (!isTask(payload.task) || typeof payload.target_step !== 'number') {
        return null;
      }
      return {
        ...scope,
        type,
        task: payload.task,
        context: str(payload.context, 'none'),
        predictor: str(payload.predictor, '?'),
        target_step: payload.target_step,
        cell_id: strOrNull(payload.cell_id)
      };
    case 'prediction':
    case 'scored': {
      const prediction = toPrediction(payload.prediction);
      return prediction ? { ...scope, type, prediction } : null;
    }
    default:
      return null;
  }
}
