/**
 * Each executed cell's badge (its output-prediction score; click to review
 * the step) and footer (recorded time, memory, score, or why there is no
 * prediction), drawn from the notebook's steps in brief, so they come back
 * after a reload and follow the live stream.
 */
import type { Cell } from '@jupyterlab/cells';
import {
  type Notebook,
  NotebookActions,
  type NotebookPanel
} from '@jupyterlab/notebook';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { IDisposable } from '@lumino/disposable';
import {
  type IMessageHandler,
  type Message,
  MessageLoop
} from '@lumino/messaging';
import { type PanelLayout, Widget } from '@lumino/widgets';

import { noPredictionReason } from '../live/reasons';
import type { LiveChange } from '../live/types';
import { visibleCombos } from '../settings';
import type {
  INotebookLive,
  IPredictionSettings,
  IThemistoLive
} from '../tokens';
import { codeCells } from './cells';
import { cellView, type ICellView, scoreLevel } from './cellview';

export const MARKER_CLASS = 'themisto-CellMarker';
export const FOOTER_CLASS = 'themisto-CellFooter';
const MARKED_CLASS = 'themisto-mod-marked';

/**
 * Seconds after a cell ran before its badge comes back if no step landed
 * (recording off, or the kernel recorded nothing).
 */
const RUN_GRACE_MS = 10000;

interface IDecoration {
  badge: Widget | null;
  footer: Widget | null;
  signature: string;
}

/**
 * Badges and footers of one notebook's executed cells, matched by cell id.
 */
export class CellMarkers implements IDisposable, IMessageHandler {
  constructor(
    private readonly _panel: NotebookPanel,
    private readonly _live: IThemistoLive,
    private readonly _settings: IPredictionSettings,
    private readonly _trans: TranslationBundle,
    private readonly _review: (step: number, trajectory: string | null) => void
  ) {
    this._live.currentChanged.connect(this._attach, this);
    this._live.storeAdded.connect(this._attach, this);
    this._settings.changed.connect(this._schedule, this);
    this._live.predictorsChanged.connect(this._schedule, this);
    this._panel.content.model?.cells.changed.connect(this._schedule, this);
    NotebookActions.executionScheduled.connect(this._onScheduled, this);
    NotebookActions.executed.connect(this._onExecuted, this);
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
    this._live.storeAdded.disconnect(this._attach, this);
    this._settings.changed.disconnect(this._schedule, this);
    this._live.predictorsChanged.disconnect(this._schedule, this);
    this._panel.content.model?.cells.changed.disconnect(this._schedule, this);
    NotebookActions.executionScheduled.disconnect(this._onScheduled, this);
    NotebookActions.executed.disconnect(this._onExecuted, this);
    MessageLoop.clearData(this);
  }

  /**
   * Update on Lumino's update requests.
   */
  processMessage(msg: Message): void {
    if (msg.type === 'update-request' && !this._disposed) {
      this.update();
    }
  }

  /**
   * Draw every badge and footer now.
   */
  update(): void {
    const store = this._store;
    const settings = this._settings.settings;
    const combos = visibleCombos(
      this._live.predictors,
      store ? store.seenCombos : [],
      settings
    );
    const noPrediction = noPredictionReason(
      this._live.predictors,
      settings.autoPredict,
      this._trans
    );
    store?.recognize(codeCells(this._panel.content));
    for (const cell of this._panel.content.widgets) {
      const id = cell.model.id;
      const found = store?.cellStep(id) ?? null;
      const since = this._running.get(id);
      if (since !== undefined && found?.current && found.summary.step > since) {
        this._running.delete(id);
      }
      if (!found || this._running.has(id)) {
        this._clear(cell);
        continue;
      }
      const summary = found.summary;
      const view = cellView(
        summary,
        {
          combos,
          score: settings.markerScore,
          earlier: !found.current,
          predicting:
            found.current &&
            !!store
              ?.slots('output', summary.step)
              .some(s => s.state === 'predicting'),
          noPrediction
        },
        this._trans
      );
      this._decorate(cell, view, found.trajectoryId, settings);
    }
  }

  /**
   * Draw a cell's badge and footer, unless they already show `view`.
   */
  private _decorate(
    cell: Cell,
    view: ICellView,
    trajectoryId: string | null,
    settings: IPredictionSettings['settings']
  ): void {
    const signature = JSON.stringify([
      view,
      trajectoryId,
      settings.showCellMarkers,
      settings.showCellFooter
    ]);
    const held = this._decorations.get(cell);
    if (held?.signature === signature) {
      return;
    }
    const decoration = held ?? { badge: null, footer: null, signature };
    decoration.signature = signature;
    this._decorations.set(cell, decoration);
    decoration.badge = settings.showCellMarkers
      ? this._badge(cell, decoration.badge)
      : remove(decoration.badge);
    if (decoration.badge) {
      const badge = decoration.badge.node;
      describe(badge, view, view.badge);
      badge.title = view.title;
      badge.dataset.themistoTrajectory = trajectoryId ?? '';
      badge.dataset.score = view.value === null ? '' : String(view.value);
      badge.dataset.level = scoreLevel(view.value);
      badge.setAttribute(
        'aria-label',
        this._trans.__('Review step %1: %2', view.step, view.badge)
      );
    }
    cell.toggleClass(MARKED_CLASS, !!decoration.badge);
    decoration.footer = settings.showCellFooter
      ? this._footer(cell, decoration.footer)
      : remove(decoration.footer);
    if (decoration.footer) {
      describe(decoration.footer.node, view, view.footer);
    }
  }

  private _badge(cell: Cell, held: Widget | null): Widget {
    if (held) {
      return held;
    }
    const badge = new Widget();
    badge.addClass(MARKER_CLASS);
    badge.node.setAttribute('role', 'button');
    // A press on the badge must not select the cell: the active cell's
    // badge sits higher (its toolbar takes the corner), so it would move
    // away before the click lands; the focus stays where it was.
    badge.node.addEventListener('mousedown', event => {
      event.stopPropagation();
      event.preventDefault();
    });
    badge.node.addEventListener('click', event => {
      event.stopPropagation();
      const step = Number(badge.node.dataset.themistoStep);
      if (step > 0) {
        this._review(step, badge.node.dataset.themistoTrajectory || null);
      }
    });
    // A child of the cell's own layout, placed by CSS at its corner.
    whenBuilt(cell, badge, layout => layout.addWidget(badge));
    return badge;
  }

  private _footer(cell: Cell, held: Widget | null): Widget {
    if (held) {
      return held;
    }
    const footer = new Widget();
    footer.addClass(FOOTER_CLASS);
    // After the outputs, before JupyterLab's own (empty) footer.
    whenBuilt(cell, footer, layout =>
      layout.insertWidget(ownFooter(layout), footer)
    );
    return footer;
  }

  private _clear(cell: Cell): void {
    const held = this._decorations.get(cell);
    if (held) {
      remove(held.badge);
      remove(held.footer);
      this._decorations.delete(cell);
      cell.removeClass(MARKED_CLASS);
    }
  }

  /**
   * A cell runs again: its old badge and footer go until its new step lands.
   */
  private _onScheduled(
    _: unknown,
    args: { notebook: Notebook; cell: Cell }
  ): void {
    if (
      args.notebook !== this._panel.content ||
      args.cell.model.type !== 'code'
    ) {
      return;
    }
    const id = args.cell.model.id;
    this._running.set(id, this._store?.history.latestOfCell(id)?.step ?? 0);
    this._schedule();
  }

  private _onExecuted(
    _: unknown,
    args: { notebook: Notebook; cell: Cell }
  ): void {
    if (args.notebook !== this._panel.content) {
      return;
    }
    const id = args.cell.model.id;
    const since = this._running.get(id);
    if (since === undefined) {
      return;
    }
    const clear = (): void => {
      if (this._running.get(id) === since) {
        this._running.delete(id);
        this._schedule();
      }
    };
    if (this._store?.recording === false) {
      clear();
    } else {
      setTimeout(clear, RUN_GRACE_MS);
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
    if (change !== 'connection' && change !== 'recording') {
      this._schedule();
    }
  }

  /**
   * Update at most once a frame: update requests are conflated by Lumino's
   * message loop, as a widget's are.
   */
  private _schedule(): void {
    if (!this._disposed) {
      MessageLoop.postMessage(this, Widget.Msg.UpdateRequest);
    }
  }

  private _store: INotebookLive | null = null;
  private _decorations = new WeakMap<Cell, IDecoration>();
  private _running = new Map<string, number>();
  private _disposed = false;
}

/**
 * Where JupyterLab's own footer is in a cell's layout; -1 until the cell's
 * parts are built (on first showing it: the footer comes last).
 */
function ownFooter(layout: PanelLayout): number {
  return layout.widgets.findIndex(w => w.hasClass('jp-CellFooter'));
}

/**
 * `add` our `widget` to `cell`'s layout now if JupyterLab has built the
 * cell's parts, else once it has (unless either is gone by then).
 */
function whenBuilt(
  cell: Cell,
  widget: Widget,
  add: (layout: PanelLayout) => void
): void {
  const layout = cell.layout as PanelLayout;
  if (ownFooter(layout) >= 0) {
    add(layout);
    return;
  }
  void cell.ready.then(() => {
    if (!widget.isDisposed && !cell.isDisposed && ownFooter(layout) >= 0) {
      add(layout);
    }
  });
}

/**
 * What a cell's badge and footer both say: `text`, and the step, state and
 * age of `view` in the `data-` attributes tests and styles read.
 */
function describe(node: HTMLElement, view: ICellView, text: string): void {
  node.textContent = text;
  node.dataset.themistoStep = String(view.step);
  node.dataset.state = view.state;
  node.dataset.earlier = String(view.earlier);
}

function remove(widget: Widget | null): null {
  widget?.dispose(); // out of the cell's layout, and its node out of the page
  return null;
}
