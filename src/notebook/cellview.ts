/**
 * What an executed cell shows of its latest step: the badge (a score, or
 * why there is none) and the footer line (time, memory, score or reason).
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type { ScoreName } from '../api/model';
import type { PredictionSummary, StepSummary } from '../api/records';
import { latestByCombo } from '../live/history';
import { errorReason, isMissed } from '../live/reasons';
import { isCopy } from '../live/references';
import {
  comboLabel,
  formatBytes,
  formatScore,
  formatScores,
  formatSeconds,
  scoreMeaning,
  SHORT_SCORE
} from '../live/scoreformat';
import type { ICombo } from '../live/types';

/**
 * The state of a cell's output prediction.
 */
export type CellState =
  | 'scored'
  | 'predicting'
  | 'scoring'
  | 'copy'
  | 'abstained'
  | 'missed'
  | 'error'
  | 'none';

export interface ICellView {
  step: number;
  state: CellState;
  /**
   * The badge's text: a score, `…` while predicting or scoring, `—` without
   * one.
   */
  badge: string;
  /**
   * Whether the step is of an earlier kernel session than the one followed
   * (the cell has not run since a restart).
   */
  earlier: boolean;
  /**
   * The badge's tooltip: every shown predictor × context, or the reason.
   */
  title: string;
  /**
   * The score shown, for its colour.
   */
  value: number | null;
  /**
   * The footer line.
   */
  footer: string;
}

export interface ICellViewOptions {
  /**
   * The predictor × context columns shown, in order.
   */
  combos: readonly ICombo[];
  score: ScoreName;
  /**
   * Whether an output prediction of this step is under way.
   */
  predicting: boolean;
  /**
   * Why there is no prediction when none was recorded.
   */
  noPrediction: string;
  /**
   * The step is of an earlier kernel session (see `ICellView.earlier`).
   */
  earlier?: boolean;
}

function shown(
  predictions: readonly PredictionSummary[],
  task: PredictionSummary['task'],
  combos: readonly ICombo[]
): PredictionSummary[] {
  const latest = latestByCombo(predictions, task);
  const out: PredictionSummary[] = [];
  for (const combo of combos) {
    const found = latest.find(
      p => p.predictor === combo.predictor && p.context === combo.context
    );
    if (found) {
      out.push(found);
    }
  }
  return out;
}

/**
 * The badge and footer of a cell whose latest step is `summary`.
 */
export function cellView(
  summary: StepSummary,
  options: ICellViewOptions,
  trans: TranslationBundle
): ICellView {
  const judged = judge(summary, options, trans);
  const { state, first } = judged;
  const value = first ? first[options.score] : null;
  const badge =
    state === 'scored'
      ? `${SHORT_SCORE[options.score]} ${formatScore(value)}`
      : state === 'predicting' || state === 'scoring'
        ? '…'
        : '—';
  const earlier = options.earlier === true;
  const said = tooltip(summary, judged, trans);
  const title = earlier
    ? trans.__(
        'From an earlier kernel session: this cell has not run since the kernel restarted.'
      ) +
      '\n' +
      said
    : said;
  return {
    step: summary.step,
    state,
    badge,
    earlier,
    title,
    value,
    footer: footer(summary, options, judged, value, trans).join(' · ')
  };
}

/**
 * What became of a cell's output predictions.
 */
interface IJudged {
  state: CellState;
  /**
   * Why there is no prediction (`none`, `missed`, `error`).
   */
  reason: string;
  /**
   * The first shown prediction's scores.
   */
  first: PredictionSummary['scores'];
  /**
   * A line per shown prediction: its scores, error or "scoring…".
   */
  lines: string[];
}

function judge(
  summary: StepSummary,
  options: ICellViewOptions,
  trans: TranslationBundle
): IJudged {
  const answered = shown(summary.predictions, 'output', options.combos);
  // A copy of the previous output repeats what the user saw: a reference
  // (reviewed in the panel), not a prediction to badge the cell with; an
  // abstention is no answer at all. (One that failed still says why.)
  const quiet = (p: PredictionSummary): boolean =>
    (isCopy(p) || p.abstained) && !p.error;
  const outputs = answered.filter(p => !quiet(p));
  const copied = answered.some(p => quiet(p) && isCopy(p));
  const abstained = answered.some(p => quiet(p) && !isCopy(p));
  const first = outputs.filter(p => p.scores)[0]?.scores ?? null;
  const lines = outputs.map(p =>
    p.scores
      ? trans.__(
          '%1 (step %2): %3',
          comboLabel(p),
          summary.step,
          formatScores(p.scores)
        )
      : p.error
        ? `${comboLabel(p)}: ${errorReason(p.error, trans)}`
        : trans.__('%1: scoring…', comboLabel(p))
  );
  const judged = (state: CellState, reason = ''): IJudged => ({
    state,
    reason,
    first,
    lines
  });
  if (first) {
    return judged('scored');
  }
  if (
    (copied || abstained) &&
    !options.predicting &&
    outputs.every(p => p.error)
  ) {
    return judged(copied ? 'copy' : 'abstained');
  }
  if (options.predicting && !options.earlier) {
    return judged('predicting');
  }
  if (outputs.some(p => !p.error)) {
    // Answered; its score comes once the step is scored (not "predicting…":
    // the prediction has ended).
    return judged('scoring');
  }
  if (outputs.length > 0) {
    const failed = outputs.find(p => p.error);
    return judged(
      isMissed(failed?.error) ? 'missed' : 'error',
      failed?.error ? errorReason(failed.error, trans) : ''
    );
  }
  return judged('none', options.noPrediction);
}

/**
 * The badge's tooltip: the predictions' scores, or why there is none.
 */
function tooltip(
  summary: StepSummary,
  { state, reason, lines }: IJudged,
  trans: TranslationBundle
): string {
  switch (state) {
    case 'none':
      return trans.__('No output prediction: %1', reason);
    case 'copy':
      return trans.__(
        'No output prediction: only a copy of the previous output, a reference (click to review step %1)',
        summary.step
      );
    case 'abstained':
      return trans.__(
        'No output prediction: the predictor abstained, having no confident answer (click to review step %1)',
        summary.step
      );
    default:
      return (
        [trans.__('Predicted output vs real output'), ...lines].join('\n') +
        '\n' +
        trans.__('Click to review step %1', summary.step)
      );
  }
}

/**
 * The footer's parts: the step, its time and memory, its output prediction
 * in words (or why it has none), and a next cell that failed.
 */
function footer(
  summary: StepSummary,
  options: ICellViewOptions,
  { state, reason }: IJudged,
  value: number | null,
  trans: TranslationBundle
): string[] {
  const parts = [
    ...(options.earlier ? [trans.__('earlier kernel')] : []),
    trans.__('step %1', summary.step),
    summary.error
      ? trans.__(
          '%1 in %2',
          summary.error,
          formatSeconds(summary.execution_time)
        )
      : formatSeconds(summary.execution_time),
    formatBytes(summary.memory_bytes)
  ];
  if (state === 'scored') {
    // The badge's abbreviation, said in words with its scale.
    parts.push(
      trans.__(
        'output prediction: %1 %2 of 1',
        scoreMeaning(options.score, trans),
        formatScore(value)
      )
    );
  } else if (state === 'predicting') {
    parts.push(trans.__('predicting…'));
  } else if (state === 'scoring') {
    parts.push(trans.__('output predicted, scoring…'));
  } else if (state === 'copy') {
    parts.push(trans.__('no output prediction (the previous output copied)'));
  } else if (state === 'abstained') {
    parts.push(trans.__('no confident output prediction'));
  } else {
    // Missed too (the next cell started first, as in Run All): the footer
    // says why a cell has no prediction, not only its tooltip.
    parts.push(trans.__('no output prediction: %1', reason));
  }
  // A next cell superseded by the next cell starting (Run All, cells run in a
  // row) was pointless: that cell was written already. Only a failure is said.
  const code = shown(summary.predictions, 'next-cell', options.combos);
  const missedCode = code.find(
    p => p.error && !isMissed(p.error) && !code.some(q => !q.error)
  );
  if (missedCode?.error) {
    parts.push(
      trans.__('code not predicted: %1', errorReason(missedCode.error, trans))
    );
  }
  return parts;
}

/**
 * The badge's colour class for a score.
 */
export function scoreLevel(value: number | null): 'high' | 'mid' | 'low' | '' {
  if (value === null) {
    return '';
  }
  return value >= 0.8 ? 'high' : value >= 0.5 ? 'mid' : 'low';
}
