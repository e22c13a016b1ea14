/**
 * Readers of the server's JSON payloads into the record types generated from
 * the JSON Schemas (records.ts), and of the other REST replies (model.ts).
 *
 * Every value is checked before it is trusted: a record missing what the
 * front end needs is refused (`null`), other missing or malformed fields take
 * a neutral default, and fields the schema does not name are dropped (the
 * server may grow). The return types are the generated ones, so the compiler
 * checks that a reader builds exactly what its schema says.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type {
  ICellCompletion,
  IClassPage,
  IKernelRecording,
  IMe,
  IPredictorsInfo,
  ITrajectorySummary
} from './model';
import type {
  EventScope,
  LiveEvent,
  LivePrediction,
  LiveStep,
  NotebookRow,
  Prediction,
  PredictionContext,
  PredictionError,
  PredictionErrorCode,
  PredictionSummary,
  PredictionTask,
  RuntimeVariable,
  RuntimeVariables,
  Scores,
  StepError,
  StepSummary,
  Trajectory
} from './records';

type Json = Record<string, unknown>;

/**
 * Whether a value is a JSON object (not an array, not null).
 */
export function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A JSON object, or an empty one for anything else.
 */
export function asRecord(value: unknown): Json {
  return isRecord(value) ? value : {};
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

function isContext(value: unknown): value is PredictionContext {
  return value === 'none' || value === 'full' || value === 'curated';
}

/**
 * The closed codes of prediction.schema.json's error_code.
 */
const ERROR_CODES: ReadonlySet<unknown> = new Set<PredictionErrorCode>([
  'superseded',
  'prompt-too-long',
  'local-model',
  'provider'
]);

function isErrorCode(value: unknown): value is PredictionErrorCode {
  return ERROR_CODES.has(value);
}

function unit(value: unknown): number {
  return Math.min(1, Math.max(0, num(value)));
}

function strings(list: unknown): string[] {
  return Array.isArray(list)
    ? list.filter((item): item is string => typeof item === 'string')
    : [];
}

/**
 * Read `GET|PUT themisto/api/kernels/{id}`; `null` when malformed.
 */
export function toKernelRecording(value: unknown): IKernelRecording | null {
  if (!isRecord(value)) {
    return null;
  }
  const { kernel_id, recording, trajectory_id, steps, reason } = value;
  if (
    typeof kernel_id !== 'string' ||
    typeof recording !== 'boolean' ||
    !(trajectory_id === null || typeof trajectory_id === 'string') ||
    typeof steps !== 'number' ||
    !Number.isInteger(steps) ||
    steps < 0
  ) {
    return null;
  }
  // A server from before `reason` existed sends none: nothing to warn about.
  const why = typeof reason === 'string' && reason ? reason : null;
  return { kernel_id, recording, reason: why, trajectory_id, steps };
}

/**
 * Read `GET themisto/api/predictors`; `null` when malformed.
 */
export function toPredictorsInfo(value: unknown): IPredictorsInfo | null {
  if (!isRecord(value) || !Array.isArray(value.predictors)) {
    return null;
  }
  const models = Array.isArray(value.local_models) ? value.local_models : [];
  return {
    predictors: strings(value.predictors),
    contexts: strings(value.contexts),
    live: value.live !== false,
    localModels: models.filter(isRecord).map(model => ({
      predictor: typeof model.predictor === 'string' ? model.predictor : '',
      state: typeof model.state === 'string' ? model.state : '',
      reason: typeof model.reason === 'string' ? model.reason : null
    })),
    ...(typeof value.completer === 'string'
      ? { completer: value.completer }
      : {})
  };
}

/**
 * Read the entries of `GET themisto/api/trajectories` that have an id.
 */
export function toTrajectorySummaries(value: unknown): ITrajectorySummary[] {
  const list = asRecord(value).trajectories;
  const out: ITrajectorySummary[] = [];
  for (const entry of Array.isArray(list) ? list : []) {
    const item = asRecord(entry);
    if (typeof item.id === 'string') {
      out.push({
        id: item.id,
        kernel_id: str(item.kernel_id),
        steps: num(item.steps),
        started_at: str(item.started_at),
        // whose and which notebook, when the listing says (the class view's)
        ...(typeof item.user === 'string' ? { user: item.user } : {}),
        ...(typeof item.notebook_path === 'string'
          ? { notebook_path: item.notebook_path }
          : {})
      });
    }
  }
  return out;
}

/**
 * Read a trajectory; `fallback` gives what the record lacks (the event
 * envelope knows the trajectory and its kernel).
 */
export function toTrajectory(
  value: unknown,
  fallback: { id: string; kernel_id: string; notebook_path: string | null }
): Trajectory {
  const record = asRecord(value);
  return {
    id: str(record.id, fallback.id),
    kernel_id: str(record.kernel_id, fallback.kernel_id),
    notebook_path:
      record.notebook_path === undefined
        ? fallback.notebook_path
        : strOrNull(record.notebook_path),
    started_at: str(record.started_at),
    ended_at: strOrNull(record.ended_at),
    end_reason: strOrNull(record.end_reason),
    restart_of: strOrNull(record.restart_of),
    steps: num(record.steps),
    source: str(record.source),
    user: str(record.user)
  };
}

function toRuntimeVariables(value: unknown): RuntimeVariables {
  const variables: RuntimeVariables = {};
  for (const [name, entry] of Object.entries(asRecord(value))) {
    if (!isRecord(entry)) {
      continue;
    }
    const variable: RuntimeVariable = {
      type: str(entry.type, '?'),
      size: numOrNull(entry.size),
      size_exact: entry.size_exact !== false,
      repr: str(entry.repr)
    };
    if (Array.isArray(entry.shape)) {
      variable.shape = entry.shape.filter(
        (n): n is number => typeof n === 'number'
      );
    }
    if (typeof entry.length === 'number') {
      variable.length = entry.length;
    }
    variables[name] = variable;
  }
  return variables;
}

/**
 * Read a step (a whole one from the REST API or a slim one from the
 * stream) as the live stream carries it; `null` when it lacks what the front
 * end needs (its number).
 */
export function toStep(value: unknown): LiveStep | null {
  if (!isRecord(value) || typeof value.step !== 'number') {
    return null;
  }
  let error: StepError | null = null;
  if (isRecord(value.error)) {
    error = { ename: str(value.error.ename), evalue: str(value.error.evalue) };
    if (typeof value.error.traceback === 'string') {
      error.traceback = value.error.traceback;
    }
  }
  return {
    trajectory_id: str(value.trajectory_id),
    kernel_id: str(value.kernel_id),
    notebook_path: strOrNull(value.notebook_path),
    step: value.step,
    cell_id: strOrNull(value.cell_id),
    code: str(value.code),
    output: str(value.output),
    execution_time: num(value.execution_time),
    memory_bytes: numOrNull(value.memory_bytes),
    runtime_variables: toRuntimeVariables(value.runtime_variables),
    error
  };
}

/**
 * Read scores; `null` unless all three are numbers. Each is clamped to [0, 1].
 */
export function toScores(value: unknown): Scores | null {
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
 * Read a prediction without its prompt and raw answer (what the stream
 * carries, and all the panel keeps); `null` when it lacks its identity or
 * its column (task, target step, a known context).
 */
export function toPrediction(value: unknown): LivePrediction | null {
  if (
    !isRecord(value) ||
    typeof value.id !== 'string' ||
    !isTask(value.task) ||
    typeof value.target_step !== 'number' ||
    !isContext(value.context ?? 'none')
  ) {
    return null;
  }
  const error = toPredictionError(value.error);
  return {
    id: value.id,
    trajectory_id: str(value.trajectory_id),
    kernel_id: strOrNull(value.kernel_id),
    notebook_path: strOrNull(value.notebook_path),
    cell_id: strOrNull(value.cell_id),
    task: value.task,
    context: isContext(value.context) ? value.context : 'none',
    predictor: str(value.predictor, '?'),
    model: strOrNull(value.model),
    target_step: value.target_step,
    created_at: str(value.created_at),
    latency: numOrNull(value.latency),
    prompt_tokens: numOrNull(value.prompt_tokens),
    completion_tokens: numOrNull(value.completion_tokens),
    cached_tokens: numOrNull(value.cached_tokens),
    prefix_reused:
      typeof value.prefix_reused === 'boolean' ? value.prefix_reused : null,
    dropped_steps: num(value.dropped_steps),
    speculative: value.speculative === true,
    ready_before_start: numOrNull(value.ready_before_start),
    abstained: value.abstained === true,
    answer: str(value.answer),
    error,
    reference: strOrNull(value.reference),
    scores: toScores(value.scores)
  };
}

function toPredictionError(value: unknown): PredictionError | null {
  if (!isRecord(value)) {
    return null;
  }
  const error: PredictionError = {
    type: str(value.type, 'error'),
    message: str(value.message)
  };
  // Records stored before codes existed have none: reasons.ts reads type then.
  if (isErrorCode(value.code)) {
    error.code = value.code;
  }
  return error;
}

/**
 * Read a prediction in brief; `null` without its identity or column.
 */
export function toPredictionSummary(value: unknown): PredictionSummary | null {
  if (
    !isRecord(value) ||
    typeof value.id !== 'string' ||
    !isTask(value.task) ||
    !isContext(value.context)
  ) {
    return null;
  }
  return {
    id: value.id,
    task: value.task,
    predictor: str(value.predictor, '?'),
    model: strOrNull(value.model),
    context: value.context,
    scores: toScores(value.scores),
    error: toPredictionError(value.error),
    abstained: value.abstained === true
  };
}

/**
 * Read a step in brief (`GET themisto/api/trajectories/{id}/history`);
 * `null` without its number.
 */
export function toStepSummary(value: unknown): StepSummary | null {
  if (!isRecord(value) || typeof value.step !== 'number') {
    return null;
  }
  const predictions = Array.isArray(value.predictions)
    ? value.predictions
        .map(toPredictionSummary)
        .filter((p): p is PredictionSummary => p !== null)
    : [];
  return {
    step: value.step,
    cell_id: strOrNull(value.cell_id),
    code_hash: str(value.code_hash),
    execution_time: num(value.execution_time),
    memory_bytes: numOrNull(value.memory_bytes),
    error: strOrNull(value.error),
    predictions
  };
}

/**
 * Read a whole prediction (`GET themisto/api/predictions/{id}`), with its
 * prompt and raw answer when it has them.
 */
export function toFullPrediction(value: unknown): Prediction | null {
  const base = toPrediction(value);
  if (!base || !isRecord(value)) {
    return null;
  }
  const full: Prediction = { ...base };
  if (isRecord(value.prompt)) {
    full.prompt = {
      system: str(value.prompt.system),
      user: str(value.prompt.user)
    };
  }
  if (typeof value.raw === 'string') {
    full.raw = value.raw;
  }
  return full;
}

/**
 * Read the live event an event bus message under the live schema carries
 * (`LiveBusMessage`: the event as JSON text); `null` for a malformed message
 * or event, which is skipped.
 */
export function parseBusMessage(message: unknown): LiveEvent | null {
  if (!isRecord(message) || typeof message.event !== 'string') {
    return null;
  }
  let payload: unknown;
  try {
    payload = JSON.parse(message.event);
  } catch {
    return null;
  }
  return parseLiveEvent(payload);
}

/**
 * Read one live event (what a `LiveBusMessage` carries); `null` for unknown
 * or malformed events, which are skipped.
 */
export function parseLiveEvent(payload: unknown): LiveEvent | null {
  if (!isRecord(payload) || typeof payload.type !== 'string') {
    return null;
  }
  const { type, seq } = payload;
  if (typeof seq !== 'number' || !Number.isInteger(seq) || seq < 1) {
    return null; // numbered by the server: without it, what was missed is unknown
  }
  if (type === 'heartbeat') {
    const every = typeof payload.every === 'number' ? payload.every : 0;
    return every > 0 ? { type, seq, every } : null;
  }
  if (type === 'recording') {
    if (
      typeof payload.kernel_id !== 'string' ||
      typeof payload.recording !== 'boolean'
    ) {
      return null;
    }
    return {
      type,
      seq,
      trajectory_id: strOrNull(payload.trajectory_id),
      kernel_id: payload.kernel_id,
      notebook_path: strOrNull(payload.notebook_path),
      recording: payload.recording,
      reason: strOrNull(payload.reason)
    };
  }
  const scope: EventScope = {
    seq,
    trajectory_id: str(payload.trajectory_id),
    kernel_id: strOrNull(payload.kernel_id),
    notebook_path: strOrNull(payload.notebook_path)
  };
  switch (type) {
    case 'trajectory':
      if (!scope.trajectory_id) {
        return null;
      }
      return {
        ...scope,
        type,
        trajectory: toTrajectory(payload.trajectory, {
          id: scope.trajectory_id,
          kernel_id: scope.kernel_id ?? '',
          notebook_path: scope.notebook_path
        })
      };
    case 'step': {
      const step = toStep(payload.step);
      if (!step) {
        return null;
      }
      // The envelope knows the trajectory even when the step omits it.
      step.trajectory_id ||= scope.trajectory_id;
      step.kernel_id ||= scope.kernel_id ?? '';
      return { ...scope, type, step };
    }
    case 'predicting': {
      const head = predictionHead(payload);
      return head ? { ...scope, type, ...head } : null;
    }
    case 'writing': {
      const head = predictionHead(payload);
      return head ? { ...scope, type, ...head, text: str(payload.text) } : null;
    }
    case 'prediction': {
      const prediction = toPrediction(payload.prediction);
      return prediction ? { ...scope, type, prediction } : null;
    }
    case 'speculated': {
      const prediction = toPrediction(payload.prediction);
      return prediction && typeof payload.code_hash === 'string'
        ? { ...scope, type, code_hash: payload.code_hash, prediction }
        : null;
    }
    case 'scored':
      if (
        typeof payload.prediction_id !== 'string' ||
        !isTask(payload.task) ||
        typeof payload.target_step !== 'number'
      ) {
        return null;
      }
      return {
        ...scope,
        type,
        prediction_id: payload.prediction_id,
        task: payload.task,
        target_step: payload.target_step,
        reference: str(payload.reference),
        scores: toScores(payload.scores)
      };
    default:
      return null;
  }
}

/**
 * What `predicting` and `writing` events share: the prediction under way.
 */
function predictionHead(payload: Json): {
  task: PredictionTask;
  context: PredictionContext;
  predictor: string;
  target_step: number;
  cell_id: string | null;
} | null {
  if (
    !isTask(payload.task) ||
    typeof payload.target_step !== 'number' ||
    !isContext(payload.context ?? 'none')
  ) {
    return null;
  }
  return {
    task: payload.task,
    context: isContext(payload.context) ? payload.context : 'none',
    predictor: str(payload.predictor, '?'),
    target_step: payload.target_step,
    cell_id: strOrNull(payload.cell_id)
  };
}

/**
 * `POST themisto/api/completions`' answer (the last line when streamed).
 */
export function toCellCompletion(record: Json): ICellCompletion {
  return {
    completion: strOrNull(record.completion),
    reason: strOrNull(record.reason)
  };
}

/**
 * `GET/PUT themisto/api/me`.
 */
export function toMe(value: unknown): IMe | null {
  const item = asRecord(value);
  if (typeof item.user !== 'string' || typeof item.consent !== 'boolean') {
    return null;
  }
  return {
    user: item.user,
    consent: item.consent,
    captureLevel: str(item.capture_level),
    readAll: item.read_all === true
  };
}

/**
 * A page of `GET themisto/api/class`: rows as the roster schema has them
 * (those that are not are dropped).
 */
export function toClassPage(value: unknown): IClassPage {
  const item = asRecord(value);
  const rows: NotebookRow[] = [];
  for (const entry of Array.isArray(item.rows) ? item.rows : []) {
    const row = asRecord(entry);
    if (typeof row.user !== 'string') {
      continue;
    }
    rows.push({
      user: row.user,
      notebook_path: strOrNull(row.notebook_path),
      trajectories: num(row.trajectories),
      cells: num(row.cells),
      errors: num(row.errors),
      active_seconds: num(row.active_seconds),
      first_at: str(row.first_at),
      last_at: str(row.last_at),
      scores: (Array.isArray(row.scores) ? row.scores : [])
        .map(asRecord)
        .filter(s => typeof s.predictor === 'string')
        .map(s => ({
          predictor: str(s.predictor),
          context: str(s.context),
          task: s.task === 'next-cell' ? 'next-cell' : 'output',
          n: num(s.n),
          exact_match: num(s.exact_match),
          chrf: num(s.chrf)
        }))
    });
  }
  return {
    rows,
    total: num(item.total),
    users: num(item.users),
    optedOut: strings(item.opted_out)
  };
}
