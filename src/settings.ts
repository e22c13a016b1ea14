/**
 * The user settings of the prediction features (schema/predictions.json),
 * read into a typed, validated object.
 *
 * This module has no JupyterLab dependency so it can be unit tested.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { ScoreName } from './livemodel';

/**
 * How the panel lays out several predictors × contexts.
 */
export type PanelLayout = 'side-by-side' | 'stacked';

/**
 * The prediction settings.
 */
export interface IPredictionSettings {
  /**
   * Predict as cells run. When off, the panel shows only predictions asked
   * for ("Predict next cell now", Retry).
   */
  autoPredict: boolean;
  /**
   * Predictors to show; empty shows every predictor the server runs.
   */
  predictors: string[];
  /**
   * Contexts to show; empty shows every context the server uses.
   */
  contexts: string[];
  layout: PanelLayout;
  /**
   * The score shown on cell markers.
   */
  markerScore: ScoreName;
  showCellMarkers: boolean;
  /**
   * Offer the next-cell prediction as ghost text when an empty cell is
   * selected.
   */
  ghostText: boolean;
}

export const DEFAULT_SETTINGS: Readonly<IPredictionSettings> = {
  autoPredict: true,
  predictors: [],
  contexts: [],
  layout: 'side-by-side',
  markerScore: 'rouge_l',
  showCellMarkers: true,
  ghostText: true
};

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

/**
 * Read composite settings; anything missing or invalid takes its default.
 */
export function readSettings(composite: unknown): IPredictionSettings {
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
    ghostText: bool(raw.ghostText, d.ghostText)
  };
}

/**
 * One column of the panel: a predictor with a kind of context.
 */
export interface ICombo {
  predictor: string;
  context: string;
}

/**
 * The predictor × context combinations to show, in a stable order: those
 * the server announces, then any others seen in predictions (a predictor
 * configured earlier in the session), filtered by the settings.
 */
export function visibleCombos(
  server: { predictors: string[]; contexts: string[] } | null,
  seen: Iterable<ICombo>,
  settings: Pick<IPredictionSettings, 'predictors' | 'contexts'>
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
export class PredictionSettings {
  get settings(): IPredictionSettings {
    return this._settings;
  }

  get changed(): ISignal<PredictionSettings, IPredictionSettings> {
    return this._changed;
  }

  /**
   * Apply composite settings from the registry.
   */
  update(composite: unknown): void {
    this._settings = readSettings(composite);
    this._changed.emit(this._settings);
  }

  private _settings: IPredictionSettings = readSettings({});
  private _changed = new Signal<PredictionSettings, IPredictionSettings>(this);
}
