/**
 * The prediction panel: follows the active notebook's live store, or shows
 * one step under review (badge, scoreboard row or plot point clicked; the
 * review commands step back and forth).
 *
 * A model (the store followed, what is shown) emits on every change; the
 * widget asks for an update, which Lumino runs at most once a frame, and
 * renders the whole panel with Lumino's virtual DOM: nodes that stay the
 * same stay in place, so a redraw never replaces a button under the
 * pointer.
 */
import { Notification, VDomModel } from '@jupyterlab/apputils';
import {
  type ITranslator,
  nullTranslator,
  type TranslationBundle
} from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import { type ISignal, Signal } from '@lumino/signaling';
import { h, VirtualDOM, type VirtualElement } from '@lumino/virtualdom';
import { Widget } from '@lumino/widgets';

import type { ScoreName } from '../api/model';
import type { Prediction, PredictionTask } from '../api/records';
import type { ICombo, IStepDetail, LiveChange } from '../live/types';
import { visibleCombos } from '../settings';
import type {
  INotebookLive,
  IPredictionSettings,
  IThemistoLive
} from '../tokens';
import type { IActiveCode } from './beforerun';
import { headerView } from './header';
import { plotView } from './plotsection';
import { nextView, type PanelView, previousStep, reviewBar } from './review';
import { scoreboard } from './scoretable';
import { section, TaskView } from './tasks';
import { type ISort, nextSort, type SortKey, variablesView } from './variables';
import { comboLabel } from './views';

export const PANEL_CLASS = 'themisto-PredictionPanel';

/**
 * What the panel asks of the notebook it follows.
 */
export interface IPanelActions {
  /**
   * Put a predicted cell after the last cell run.
   */
  insertBelow(text: string): void;
  replaceActive(text: string): void;
  copy(text: string): void;
  /**
   * The current source of a cell of the active notebook.
   */
  cellCode(cellId: string): string | null;
  /**
   * The active notebook's active cell when it is a code cell (its text now).
   */
  activeCode(): IActiveCode | null;
  /**
   * Whether the code cell after the last cell run is written already: the
   * notebook's next cell is then no prediction's business (see
   * `notebook/cells.ts` `isFrontier`).
   */
  nextCellWritten(): boolean;
  /**
   * Switch recording of the active notebook's kernel.
   */
  toggleRecording(): Promise<void>;
  /**
   * Read a whole prediction, with its prompt (not carried by the stream).
   */
  getPrediction(predictionId: string): Promise<Prediction>;
  /**
   * Give the keyboard focus back to the notebook (after every action: no
   * panel button keeps it).
   */
  returnFocus(): void;
}

/**
 * Elements that act when clicked: they must not take the keyboard focus
 * from the notebook.
 */
const ACTIONABLE = 'button, summary, [data-step]';

/**
 * What the panel shows: the active notebook's store, live or at one step,
 * and the panel's own choices (plot, sort order).
 */
export class PanelModel extends VDomModel {
  constructor(
    private readonly _live: IThemistoLive,
    settings: IPredictionSettings
  ) {
    super();
    _live.currentChanged.connect(this._onCurrentChanged, this);
    _live.predictorsChanged.connect(this._changed, this);
    settings.changed.connect(this._changed, this);
    this._onCurrentChanged();
  }

  get store(): INotebookLive | null {
    return this._store;
  }

  get view(): PanelView {
    return this._view;
  }

  /**
   * The step under review as read from the server (`null` until read).
   */
  get detail(): IStepDetail | null {
    return this._view.mode === 'review' ? this._detail : null;
  }

  /**
   * Emitted when the panel starts or stops reviewing a step.
   */
  get viewChanged(): ISignal<this, PanelView> {
    return this._viewChanged;
  }

  plotTask: PredictionTask = 'output';
  plotScore: ScoreName = 'rouge_l';
  sort: ISort = { key: 'name', ascending: true };

  /**
   * Change the panel's own choices.
   */
  set(choice: {
    plotTask?: PredictionTask;
    plotScore?: ScoreName;
    sort?: ISort;
  }): void {
    Object.assign(this, choice);
    this._changed();
  }

  /**
   * The last step of the trajectory shown.
   */
  lastStep(): number {
    const store = this._store;
    const view = this._view;
    if (!store) {
      return 0;
    }
    if (view.mode === 'review' && !view.current && view.trajectory) {
      return store.historyOf(view.trajectory)?.last ?? view.step;
    }
    return store.lastStep;
  }

  showStep(step: number, trajectory?: string | null): void {
    const store = this._store;
    if (!store || step < 1) {
      return;
    }
    const id =
      trajectory ??
      (this._view.mode === 'review' ? this._view.trajectory : null) ??
      store.trajectoryId;
    const current = id === store.trajectoryId;
    this._setView({ mode: 'review', step, trajectory: id, current });
    const showing = (): boolean =>
      store === this._store &&
      this._view.mode === 'review' &&
      this._view.step === step;
    this._live.loadStep(store, step, id).then(
      detail => {
        if (showing()) {
          this._detail = detail;
          this._changed();
        }
      },
      (error: unknown) => {
        if (showing()) {
          this._detail = {
            trajectoryId: id,
            step,
            whole: null,
            next: null,
            predictions: []
          };
          this._changed();
          console.warn('themisto: could not read step', step, error);
        }
      }
    );
  }

  showLive(): void {
    if (this._store?.replayOf) {
      // A replay has no live side: its last step, reviewed (no cell to insert).
      this.showStep(this.lastStep());
      return;
    }
    this._setView({ mode: 'live' });
  }

  showPrevious(): void {
    const step = previousStep(this._view, this.lastStep());
    if (step !== null) {
      this.showStep(step);
    }
  }

  showNext(): void {
    const next = nextView(this._view, this.lastStep());
    if (next?.mode === 'review') {
      this.showStep(next.step, next.trajectory);
    } else if (next) {
      this.showLive();
    }
  }

  private _setView(view: PanelView): void {
    this._view = view;
    this._detail = null;
    this._changed();
    this._viewChanged.emit(view);
  }

  private _onCurrentChanged(): void {
    this._store?.changed.disconnect(this._onStoreChanged, this);
    this._store = this._live.current;
    this._store?.changed.connect(this._onStoreChanged, this);
    if (this._store?.replayOf) {
      this.showStep(1);
    } else if (this._view.mode !== 'live') {
      this._setView({ mode: 'live' });
    }
    this._changed();
  }

  private _onStoreChanged(store: INotebookLive, change: LiveChange): void {
    if (
      change === 'trajectory' &&
      this._view.mode === 'review' &&
      this._view.trajectory !== store.trajectoryId
    ) {
      // A kernel restart: the step shown is of an earlier kernel now.
      this._view = { ...this._view, current: false };
    }
    this._changed();
  }

  private _changed(): void {
    this.stateChanged.emit();
  }

  private _store: INotebookLive | null = null;
  private _view: PanelView = { mode: 'live' };
  private _detail: IStepDetail | null = null;
  private _viewChanged = new Signal<this, PanelView>(this);
}

/**
 * The prediction panel: follows the active notebook and shows the
 * predictions of its running cell and next cell, scores and runtime state,
 * or those of one step under review.
 */
export class PredictionPanel extends Widget {
  constructor(options: PredictionPanel.IOptions) {
    super();
    this._live = options.live;
    this._settings = options.settings;
    this._actions = options.actions;
    this._trans = (options.translator ?? nullTranslator).load('themisto_ext');
    this.model = new PanelModel(this._live, this._settings);
    this._tasks = new TaskView(
      this._live,
      this._settings,
      this._actions,
      {
        request: (task, code) => this._request(task, code),
        changed: () => this.update()
      },
      this._trans
    );
    this.addClass(PANEL_CLASS);
    this.node.tabIndex = -1;
    this.node.addEventListener('mousedown', this._onMouseDown);
    this.node.addEventListener('click', this._onClick);
    this.node.addEventListener('change', this._onClick);
    // `toggle` does not bubble: a prompt opened or closed is heard on the
    // way down.
    this.node.addEventListener('toggle', this._onToggle, true);
    this.model.stateChanged.connect(this._onModelChanged, this);
  }

  readonly model: PanelModel;

  /**
   * What the panel shows.
   */
  get view(): PanelView {
    return this.model.view;
  }

  /**
   * Emitted when the panel starts or stops reviewing a step.
   */
  get viewChanged(): ISignal<PanelModel, PanelView> {
    return this.model.viewChanged;
  }

  /**
   * Show one step of the active notebook: its predicted vs real output, the
   * next cell predicted after it, and the runtime after it.
   */
  showStep(step: number, trajectory?: string | null): void {
    this.model.showStep(step, trajectory);
  }

  /**
   * Follow the notebook live again.
   */
  showLive(): void {
    this.model.showLive();
  }

  /**
   * Review the step before (from live: the latest step).
   */
  showPrevious(): void {
    this.model.showPrevious();
  }

  /**
   * Review the step after (after the latest: live).
   */
  showNext(): void {
    this.model.showNext();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.model.dispose();
    super.dispose();
  }

  /**
   * Render now (tests; the panel renders on its update requests).
   */
  flush(): void {
    const store = this.model.store;
    const view = this.model.view;
    this.node.dataset.layout = this._settings.settings.layout;
    this.node.dataset.state = store ? 'notebook' : 'no-notebook';
    this.node.dataset.view = view.mode;
    VirtualDOM.render(this._render(store, view), this.node);
  }

  /**
   * The notebook's cells were edited: redraw if the next cell is written now
   * and was not (or the reverse) when last drawn.
   */
  notebookEdited(): void {
    const shown = this._tasks.writtenShown;
    if (
      (shown !== null && shown !== this._actions.nextCellWritten()) ||
      this._tasks.beforeRunStale(this.model.store, this.model.view)
    ) {
      this.update();
    }
  }

  /**
   * Not while hidden: showing the panel asks for an update.
   */
  protected onUpdateRequest(msg: Message): void {
    if (this.isVisible) {
      this.flush();
    }
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this.update();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.update();
  }

  private _onModelChanged(): void {
    this.update();
  }

  private _render(
    store: INotebookLive | null,
    view: PanelView
  ): VirtualElement[] {
    const header = h.div({ className: 'themisto-Header' }, this._header(store));
    if (!store) {
      return [header];
    }
    const combos = visibleCombos(
      this._live.predictors,
      store.seenCombos,
      this._settings.settings
    );
    return [
      header,
      h.div(
        { className: 'themisto-ReviewBar' },
        reviewBar(
          view,
          this.model.lastStep(),
          {
            previous: () => this.showPrevious(),
            next: () => this.showNext(),
            live: () => this.showLive()
          },
          this._trans
        )
      ),
      this._stepView(store, view, combos),
      ...this._summaries(store, view, combos)
    ];
  }

  /**
   * The notebook's recording and predictors, and what can be asked of them.
   */
  private _header(store: INotebookLive | null): VirtualElement[] {
    return headerView(
      store,
      {
        predictors: this._live.predictors,
        predictorsError: this._live.predictorsError,
        autoPredict: this._settings.settings.autoPredict
      },
      {
        predictNow: () => this._request('next-cell'),
        toggleRecording: () => void this._actions.toggleRecording(),
        refreshPredictors: () => void this._live.refreshPredictors()
      },
      this._trans
    );
  }

  /**
   * The step shown (live: the latest; review: the one chosen): its output
   * and next-cell predictions and the runtime after it.
   */
  private _stepView(
    store: INotebookLive,
    view: PanelView,
    combos: ICombo[]
  ): VirtualElement {
    const { model, _trans: trans } = this;
    const detail = model.detail;
    const step =
      view.mode === 'review'
        ? (detail?.whole ?? (view.current ? store.getStep(view.step) : null))
        : store.latestStep;
    const loading = view.mode === 'review' && !step && !detail;
    return h.div(
      {
        className: 'themisto-StepView',
        dataset:
          view.mode === 'review'
            ? { 'themisto-view-step': String(view.step) }
            : {}
      },
      this._tasks.render('output', store, combos, view, detail),
      this._tasks.render('next-cell', store, combos, view, detail),
      section(
        'themisto-RuntimeSection',
        step
          ? trans.__('Runtime after step %1', step.step)
          : trans.__('Runtime'),
        [
          variablesView(
            loading ? 'loading' : step,
            model.sort,
            (by: SortKey) => model.set({ sort: nextSort(model.sort, by) }),
            trans
          )
        ]
      )
    );
  }

  /**
   * The session's scoreboard and its scores over steps.
   */
  private _summaries(
    store: INotebookLive,
    view: PanelView,
    combos: ICombo[]
  ): VirtualElement[] {
    const { model, _trans: trans } = this;
    const show = (step: number) => this.showStep(step, store.trajectoryId);
    const keys = new Set(combos.map(key));
    const rows = store.scoreRows.filter(row => keys.has(key(row)));
    const latest = (row: (typeof rows)[number]): number | null => {
      const points = store.series(row.task, row);
      return points.length ? points[points.length - 1].step : null;
    };
    const series = combos.map(combo => ({
      label: comboLabel(combo),
      points: store.series(model.plotTask, combo)
    }));
    return [
      section('themisto-ScoreSection', trans.__('Scoreboard'), [
        scoreboard(rows, trans, latest, show)
      ]),
      section(
        'themisto-PlotSection',
        trans.__('Scores over steps'),
        plotView(
          series,
          {
            task: model.plotTask,
            score: model.plotScore,
            shown: view.mode === 'review' && view.current ? view.step : null,
            source: `${store.path}\u0000${store.trajectoryId}`,
            onTask: plotTask => model.set({ plotTask }),
            onScore: plotScore => model.set({ plotScore }),
            onStep: show
          },
          trans
        )
      )
    ];
  }

  /**
   * A click on a button (or a plot point, a scoreboard row) never leaves
   * the focus in the panel: the notebook keeps it.
   */
  private _onMouseDown = (event: MouseEvent): void => {
    const target = event.target as Element | null;
    if (target?.closest?.(ACTIONABLE)) {
      event.preventDefault();
    }
  };

  private _onClick = (event: Event): void => {
    const target = event.target as Element | null;
    if (event.type === 'change' || target?.closest?.(ACTIONABLE)) {
      this._actions.returnFocus();
    }
  };

  private _onToggle = (event: Event): void => {
    const target = event.target as HTMLDetailsElement;
    const id = target.dataset?.prediction;
    if (id && target.classList.contains('themisto-Prompt')) {
      this._tasks.setPromptOpen(id, target.open);
    }
  };

  private _request(task: PredictionTask, code?: string): void {
    this._live
      .requestPrediction(task, code !== undefined ? { code } : {})
      .catch((error: unknown) => {
        Notification.error(
          this._trans.__(
            'Themisto could not ask for a prediction: %1',
            error instanceof Error ? error.message : String(error)
          ),
          { autoClose: 5000 }
        );
      });
  }

  private _live: IThemistoLive;
  private _settings: IPredictionSettings;
  private _actions: IPanelActions;
  private _trans: TranslationBundle;
  private _tasks: TaskView;
}

export namespace PredictionPanel {
  export interface IOptions {
    live: IThemistoLive;
    settings: IPredictionSettings;
    actions: IPanelActions;
    translator?: ITranslator;
  }
}

function key(combo: { predictor: string; context: string }): string {
  return `${combo.predictor}\u0000${combo.context}`;
}
