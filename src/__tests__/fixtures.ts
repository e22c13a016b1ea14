import { IPrediction, IScores, IStep, LiveEvent } from '../livemodel';

export const TRAJECTORY = 't1';
export const KERNEL = 'k1';
export const PATH = 'dir/nb.ipynb';

export function step(n: number, extra: Partial<IStep> = {}): IStep {
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

export function prediction(
  task: IPrediction['task'],
  target: number,
  extra: Partial<IPrediction> = {}
): IPrediction {
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
    prompt: { system: 's', user: 'u' },
    raw: 'answer',
    answer: 'answer',
    error: null,
    reference: null,
    scores: null,
    ...extra
  };
}

export function scores(value: number): IScores {
  return { exact_match: value === 1 ? 1 : 0, rouge_l: value, chrf: value };
}

const scope = {
  trajectory_id: TRAJECTORY,
  kernel_id: KERNEL,
  notebook_path: PATH
};

export function stepEvent(n: number, extra: Partial<IStep> = {}): LiveEvent {
  return { ...scope, type: 'step', step: step(n, extra) };
}

export function predictingEvent(
  task: IPrediction['task'],
  target: number,
  predictor = 'baseline',
  context = 'none'
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

export function predictionEvent(
  p: IPrediction,
  type: 'prediction' | 'scored' = 'prediction'
): LiveEvent {
  return { ...scope, type, prediction: p };
}
