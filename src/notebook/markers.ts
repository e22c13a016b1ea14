/**
 * Score badges on the executed cells of a notebook.
 */
import type { Cell } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { IDisposable } from '@lumino/disposable';

import type { ScoreName } from '../api/model';
import {
  comboLabel,
  formatScore,
  formatScores,
  SHORT_SCORE
} from '../live/scores';
import type { IPredictionSlot, LiveChange } from '../live/types';
import { visibleCombos } from '../settings';
import type {
  INotebookLive,
  IPredictionSettings,
  IThemistoLive
} from '../tokens';

export const MARKER_CLASS = 'themisto-CellMarker';
const MARKED_CLASS = 'themisto-mod-marked';

/**
 * The badge text and tooltip of a cell's output scores; `null` when none of
 * the shown predictors × contexts scored it.
 */
export function markerContent(
  slots: readonly IPredictionSlot[],
  score: ScoreName
): { text: string; title: string; value: number } | null {
  const scored = slots.filter(s => s.prediction?.scores);
  const first = scored[0]?.prediction?.scores;
  if (!first) {
    return null;
  }
  const lines = scored.map(
    s =>
      `${comboLabel(s)} (step ${s.targetStep}): ${formatScores(
        s.prediction?.scores ?? null
      )}`
  );
  return {
    text: `${SHORT_SCORE[score]} ${formatScore(first[score])}`,
    title: `Predicted output vs real output\n${lines.join('\n')}`,
    value: first[score]
  };
}

/**
 * Score badges on the executed cells of one notebook, matched by cell id.
 */
export class CellMarkers implements IDisposable {
  constructor(
    private readonly _panel: NotebookPanel,
    private readonly _live: IThemistoLive,
    private readonly _settings: IPredictionSettings
  ) {
    this._live.currentChanged.connect(this._attach, this);
    this._settings.changed.connect(this._schedule, this);
    this._live.predictorsChanged.connect(this._schedule, this);
    this._panel.content.model?.cells.changed.connect(this._schedule, this);
    this._attach();
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._store?.changed.disconnect(this._onChanged, this);
    this._live.currentChanged.disconnect(this._attach, this);
    this._settings.changed.disconnect(this._schedule, this);
    this._live.predictorsChanged.disconnect(this._schedule, this);
    this._panel.content.model?.cells.changed.disconnect(this._schedule, this);
    if (this._frame !== null) {
      cancelAnimationFrame(this._frame);
    }
  }

  /**
   * Draw every badge now.
   */
  update(): void {
    const store = this._store;
    const settings = this._settings.settings;
    const combos = visibleCombos(
      this._live.predictors,
      store ? store.seenCombos : [],
      settings
    );
    const shown = new Set(combos.map(c => `${c.predictor}\u0000${c.context}`));
    for (const cell of this._panel.content.widgets) {
      const slots =
        store && settings.showCellMarkers
          ? store
              .cellScores(cell.model.id)
              .filter(s => shown.has(`${s.predictor}\u0000${s.context}`))
          : [];
      const content = markerContent(slots, settings.markerScore);
      let marker = this._markers.get(cell);
      if (!content) {
        if (marker) {
          marker.remove();
          this._markers.delete(cell);
          cell.removeClass(MARKED_CLASS);
        }
        continue;
      }
      if (!marker) {
        marker = document.createElement('div');
        marker.className = MARKER_CLASS;
        cell.node.appendChild(marker);
        cell.addClass(MARKED_CLASS);
        this._markers.set(cell, marker);
      }
      marker.textContent = content.text;
      marker.title = content.title;
      marker.dataset.score = String(content.value);
      marker.dataset.level =
        content.value >= 0.8 ? 'high' : content.value >= 0.5 ? 'mid' : 'low';
    }
  }

  /**
   * Follow this notebook's store once the live service has one.
   */
  private _attach(): void {
    const store = this._live.store(this._panel.context.path);
    if (store !== this._store) {
      this._store?.changed.disconnect(this._onChanged, this);
      this._store = store;
      store?.changed.connect(this._onChanged, this);
      this._schedule();
    }
  }

  private _onChanged(store: INotebookLive, change: LiveChange): void {
    if (change === 'scores' || change === 'trajectory') {
      this._schedule();
    }
  }

  /**
   * Update at most once a frame.
   */
  private _schedule(): void {
    if (this._frame === null && !this._disposed) {
      this._frame = requestAnimationFrame(() => {
        this._frame = null;
        this.update();
      });
    }
  }

  private _store: INotebookLive | null = null;
  private _markers = new WeakMap<Cell, HTMLElement>();
  private _frame: number | null = null;
  private _disposed = false;
}
