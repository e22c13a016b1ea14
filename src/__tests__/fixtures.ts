import type {
  LiveEvent,
  LivePrediction,
  LiveStep,
  LocalModelState,
  Step,
  PredictionTask,
  PredictorsInfo,
  Scores,
  Trajectory
} from '../api/records';

export const TRAJECTORY = 't1';
export const KERNEL = 'k1';
export const PATH = 'dir/nb.ipynb';

export function step(n: number, extra: Partial<LiveStep> = {}): LiveStep {
  return {
    trajectory_id: TRAJECTORY,
    kernel_id: KERNEL,
    step: n,
    cell_id: `c${n}`,
    notebook_path: PATH,
    code: `x${n} = ${n}`,
    output: `out ${n}`,
    execution_time: 0.01,
    memory_bytes: 1024,
    runtime_variables: {
      [`x${n}`]: { type: 'int', size: 28, size_exact: true, repr: String(n) }
    },
    error: null,
    ...extra
  };
}

/**
 * A prediction as the stream carries it (no prompt, no raw answer).
 */
export function prediction(
  task: PredictionTask,
  target: number,
  extra: Partial<LivePrediction> = {}
): LivePrediction {
  return {
    id: `${task}-${target}-${extra.predictor ?? 'baseline'}-${
      extra.context ?? 'none'
    }`,
    trajectory_id: TRAJECTORY,
    kernel_id: KERNEL,
    notebook_path: PATH,
    task,
    context: 'none',
    predictor: 'baseline',
    model: 'baseline',
    target_step: target,
    cell_id: task === 'output' ? `c${target}` : null,
    created_at: '2026-01-01T00:00:00Z',
    latency: 0.002,
    prompt_tokens: 10,
    completion_tokens: 2,
    cached_tokens: null,
    prefix_reused: null,
    dropped_steps: 0,
    speculative: false,
    ready_before_start: null,
    abstained: false,
    answer: 'answer',
    error: null,
    reference: null,
    scores: null,
    ...extra
  };
}

export function scores(value: number): Scores {
  return { exact_match: value === 1 ? 1 : 0, rouge_l: value, chrf: value };
}

const scope = {
  seq: 1, // the stores do not read it (live/feed.ts does)
  trajectory_id: TRAJECTORY,
  kernel_id: KERNEL,
  notebook_path: PATH
};

export function stepEvent(n: number, extra: Partial<LiveStep> = {}): LiveEvent {
  return { ...scope, type: 'step', step: step(n, extra) };
}

export function predictingEvent(
  task: PredictionTask,
  target: number,
  predictor = 'baseline',
  context: 'none' | 'full' = 'none'
): LiveEvent {
  return {
    ...scope,
    type: 'predicting',
    task,
    context,
    predictor,
    target_step: target,
    cell_id: task === 'output' ? `c${target}` : null
  };
}

export function writingEvent(
  task: PredictionTask,
  target: number,
  text: string,
  predictor = 'baseline',
  context: 'none' | 'full' = 'none'
): LiveEvent {
  return {
    ...scope,
    type: 'writing',
    task,
    context,
    predictor,
    target_step: target,
    cell_id: task === 'output' ? `c${target}` : null,
    text
  };
}

export function predictionEvent(p: LivePrediction): LiveEvent {
  return { ...scope, type: 'prediction', prediction: p };
}

/**
 * A prediction made for a cell before it runs, for the text `code` hashes.
 */
export function speculatedEvent(
  p: LivePrediction,
  codeHash: string
): LiveEvent {
  return { ...scope, type: 'speculated', code_hash: codeHash, prediction: p };
}

/**
 * The slim `scored` event of a prediction: its id, reference and scores.
 */
export function scoredEvent(
  p: Pick<LivePrediction, 'id' | 'task' | 'target_step'>,
  reference: string,
  value: Scores | null
): LiveEvent {
  return {
    ...scope,
    type: 'scored',
    prediction_id: p.id,
    task: p.task,
    target_step: p.target_step,
    reference,
    scores: value
  };
}

export function recordingEvent(
  recording: boolean,
  trajectoryId: string | null = TRAJECTORY,
  reason: string | null = null
): LiveEvent {
  return {
    type: 'recording',
    seq: 1,
    trajectory_id: trajectoryId,
    kernel_id: KERNEL,
    notebook_path: PATH,
    recording,
    reason
  };
}

/**
 * `GET predictors` as a server with nothing special to say answers it.
 */
export function predictorsInfo(
  extra: Partial<PredictorsInfo> = {}
): PredictorsInfo {
  return {
    predictors: ['baseline'],
    contexts: ['none'],
    live: true,
    speculation: {
      made: 0,
      used: 0,
      cpu_seconds_used: 0,
      cpu_seconds_thrown_away: 0
    },
    local_models: [],
    completer: null,
    ...extra
  };
}

/**
 * An embedded model's process in `local_models`.
 */
export function localModel(
  predictor: string,
  state: LocalModelState['state'],
  reason: string | null = null
): LocalModelState {
  return {
    predictor,
    state,
    reason,
    pid: state === 'running' ? 4242 : null,
    restarts: 0,
    crashes: 0,
    safe_mode: false,
    rss_bytes: null,
    model: null,
    model_bytes: null
  };
}

/**
 * A trajectory as the server lists it.
 */
export function trajectory(extra: Partial<Trajectory> = {}): Trajectory {
  return {
    id: TRAJECTORY,
    kernel_id: KERNEL,
    notebook_path: PATH,
    started_at: '2026-01-02T00:00:00Z',
    ended_at: null,
    end_reason: null,
    restart_of: null,
    steps: 3,
    source: 'kernel',
    user: 'u',
    ...extra
  };
}

/**
 * A whole step, as `GET steps` and a trajectory file have it.
 */
export function fullStep(n: number, extra: Partial<Step> = {}): Step {
  return {
    format_version: 1,
    ...step(n),
    started_at: '2026-01-02T00:00:00Z',
    ended_at: '2026-01-02T00:00:01Z',
    outputs: [
      {
        output_type: 'stream',
        name: 'stdout',
        mime_types: [],
        text: `out ${n}`
      }
    ],
    hash_index: '0123456789abcdef',
    ...extra
  };
}
