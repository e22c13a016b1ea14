/**
 * The user settings of the prediction features (schema/predictions.json),
 * read into a typed, validated object.
 *
 * This module has no JupyterLab dependency so it can be unit tested.
 */
import { type ISignal, Signal } from '@lumino/signaling';

import type { ICombo } from './live/types';
import type { IPredictionOptions, IPredictionSettings } from './tokens';

export const DEFAULT_SETTINGS: Readonly<IPredictionOptions> = {
  autoPredict: true,
  predictors: [],
  contexts: [],
  layout: 'side-by-side',
  markerScore: 'rouge_l',
  showCellMarkers: true,
  showCellFooter: true,
  ghostText: true,
  speculate: true,
  speculationPause: 1500
};

/**
 * The bounds of `speculationPause` (ms), as in schema/predictions.json.
 */
export const SPECULATION_PAUSE = { min: 200, max: 10000 };

function strings(value: unknown): string[] | null {
  if (!Array.isArray(value)) {
    return null;
  }
  const list = value.filter(
    (item): item is string => typeof item === 'string' && item.length > 0
  );
  return [...new Set(list)];
}

function bool(value: unknown, fallback: boolean): boolean {
  return typeof value === 'boolean' ? value : fallback;
}

function pause(value: unknown, fallback: number): number {
  return typeof value === 'number' &&
    Number.isInteger(value) &&
    value >= SPECULATION_PAUSE.min &&
    value <= SPECULATION_PAUSE.max
    ? value
    : fallback;
}

/**
 * Read composite settings; anything missing or invalid takes its default.
 */
export function readSettings(composite: unknown): IPredictionOptions {
  const raw: Record<string, unknown> =
    typeof composite === 'object' && composite !== null
      ? (composite as Record<string, unknown>)
      : {};
  const d = DEFAULT_SETTINGS;
  const score = raw.markerScore;
  return {
    autoPredict: bool(raw.autoPredict, d.autoPredict),
    predictors: strings(raw.predictors) ?? [...d.predictors],
    contexts: strings(raw.contexts) ?? [...d.contexts],
    layout:
      raw.layout === 'stacked' || raw.layout === 'side-by-side'
        ? raw.layout
        : d.layout,
    markerScore:
      score === 'exact_match' || score === 'rouge_l' || score === 'chrf'
        ? score
        : d.markerScore,
    showCellMarkers: bool(raw.showCellMarkers, d.showCellMarkers),
    showCellFooter: bool(raw.showCellFooter, d.showCellFooter),
    ghostText: bool(raw.ghostText, d.ghostText),
    speculate: bool(raw.speculate, d.speculate),
    speculationPause: pause(raw.speculationPause, d.speculationPause)
  };
}

/**
 * The predictor × context combinations to show, in a stable order: those
 * the server announces, then any others seen in predictions (a predictor
 * configured earlier in the session), filtered by the settings.
 */
export function visibleCombos(
  server: { predictors: string[]; contexts: string[] } | null,
  seen: Iterable<ICombo>,
  settings: Pick<IPredictionOptions, 'predictors' | 'contexts'>
): ICombo[] {
  const combos: ICombo[] = [];
  const keys = new Set<string>();
  const add = (combo: ICombo): void => {
    const key = `${combo.predictor}\u0000${combo.context}`;
    const wantedPredictor =
      settings.predictors.length === 0 ||
      settings.predictors.includes(combo.predictor);
    const wantedContext =
      settings.contexts.length === 0 ||
      settings.contexts.includes(combo.context);
    if (!keys.has(key) && wantedPredictor && wantedContext) {
      keys.add(key);
      combos.push(combo);
    }
  };
  if (server) {
    for (const predictor of server.predictors) {
      for (const context of server.contexts) {
        add({ predictor, context });
      }
    }
  }
  for (const combo of seen) {
    add({ predictor: combo.predictor, context: combo.context });
  }
  return combos;
}

/**
 * The settings shared by the prediction plugins, with a change signal.
 */
export class PredictionSettings implements IPredictionSettings {
  get settings(): IPredictionOptions {
    return this._settings;
  }

  get changed(): ISignal<IPredictionSettings, IPredictionOptions> {
    return this._changed;
  }

  /**
   * Apply composite settings from the registry.
   */
  update(composite: unknown): void {
    this._settings = readSettings(composite);
    this._changed.emit(this._settings);
  }

  private _settings: IPredictionOptions = readSettings({});
  private _changed = new Signal<IPredictionSettings, IPredictionOptions>(this);
}
