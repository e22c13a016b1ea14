/**
 * Score and column labels, formatting, and running means: the helpers that
 * live/trajectoryscores.ts (one trajectory's scores) and the views share.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type { ScoreName } from '../api/model';
import type { PredictionTask, Scores } from '../api/records';
import type { ICombo, IScoreMeans } from './types';

/**
 * The scores in display order with their short and long labels.
 */
export const SCORE_LABELS: ReadonlyArray<{
  name: ScoreName;
  short: string;
  long: string;
}> = [
  { name: 'exact_match', short: 'EM', long: 'Exact match' },
  { name: 'rouge_l', short: 'ROUGE-L', long: 'ROUGE-L' },
  { name: 'chrf', short: 'ChrF', long: 'ChrF' }
];

/**
 * A score's long name, translated.
 */
export function scoreTitle(name: ScoreName, trans: TranslationBundle): string {
  switch (name) {
    case 'exact_match':
      return trans.__('Exact match');
    case 'rouge_l':
      return trans.__('ROUGE-L');
    case 'chrf':
      return trans.__('ChrF');
  }
}

/**
 * What a score measures, in words, for the footer under a cell: a badge's
 * `RL 0.50` is explained there, not only on hover.
 */
export function scoreMeaning(
  name: ScoreName,
  trans: TranslationBundle
): string {
  switch (name) {
    case 'exact_match':
      return trans.__('exact match');
    case 'rouge_l':
      return trans.__('word overlap (ROUGE-L)');
    case 'chrf':
      return trans.__('character overlap (chrF)');
  }
}

/**
 * Short score names for narrow columns and cell markers.
 */
export const SHORT_SCORE: Record<ScoreName, string> = {
  exact_match: 'EM',
  rouge_l: 'RL',
  chrf: 'ChrF'
};

/**
 * `predictor · context`.
 */
export function comboLabel(combo: ICombo): string {
  return `${combo.predictor} · ${combo.context}`;
}

/**
 * A score in [0, 1] as two decimals; an em dash when unknown.
 */
export function formatScore(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) {
    return '—';
  }
  return Math.min(1, Math.max(0, value)).toFixed(2);
}

/**
 * All three scores on one line, e.g. `EM 1.00 · ROUGE-L 0.93 · ChrF 0.88`.
 */
export function formatScores(scores: Scores | null): string {
  return SCORE_LABELS.map(
    ({ name, short }) => `${short} ${formatScore(scores?.[name])}`
  ).join(' · ');
}

/**
 * Seconds for display: `12 ms`, `1.52 s`, `2 min 5 s`.
 */
export function formatSeconds(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !(seconds >= 0)) {
    return '—';
  }
  if (seconds < 1) {
    return `${Math.round(seconds * 1000)} ms`;
  }
  if (seconds < 60) {
    return `${seconds.toFixed(2)} s`;
  }
  return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
}

/**
 * Bytes for display: `512 B`, `1.5 KiB`, `98.3 MiB`.
 */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !(bytes >= 0)) {
    return '—';
  }
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0
    ? `${value} B`
    : `${value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
}

/**
 * The key of one scoreboard row: a task, a predictor and a context.
 */
export function seriesKey(
  task: PredictionTask,
  predictor: string,
  context: string
): string {
  return `${task}\u0000${predictor}\u0000${context}`;
}

/**
 * Running means of the three scores (constant time per added score).
 */
export class ScoreMeans implements IScoreMeans {
  /**
   * Number of scored predictions.
   */
  get count(): number {
    return this._count;
  }

  add(scores: Scores): void {
    this._count++;
    this._sum.exact_match += scores.exact_match;
    this._sum.rouge_l += scores.rouge_l;
    this._sum.chrf += scores.chrf;
  }

  /**
   * The means; `null` before any score.
   */
  mean(): Scores | null {
    if (this._count === 0) {
      return null;
    }
    return {
      exact_match: this._sum.exact_match / this._count,
      rouge_l: this._sum.rouge_l / this._count,
      chrf: this._sum.chrf / this._count
    };
  }

  private _count = 0;
  private _sum: Scores = { exact_match: 0, rouge_l: 0, chrf: 0 };
}
