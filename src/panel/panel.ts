/**
 * The prediction panel: follows the active notebook's live store, or shows
 * one step under review (badge, scoreboard row or plot point clicked; the
 * review commands step back and forth).
 */
import { Notification } from '@jupyterlab/apputils';
import {
  type ITranslator,
  nullTranslator,
  type TranslationBundle
} from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import { type ISignal, Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import type { ScoreName } from '../api/model';
import type { Prediction, PredictionTask } from '../api/records';
import type { IStepDetail, LiveChange } from '../live/types';
import { visibleCombos } from '../settings';
import type {
  INotebookLive,
  IPredictionSettings,
  IThemistoLive
} from '../tokens';
import { h } from './dom';
import { headerKey, headerView, type IHeaderState } from './header';
import { plotView } from './plotsection';
import { nextView, type PanelView, previousStep, reviewBar } from './review';
import { scoreboard } from './scoretable';
import { type ISection, section, TaskView } from './tasks';
import { VariablesView } from './variables';
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

type Section =
  'header' | 'review' | 'output' | 'next' | 'scores' | 'plot' | 'runtime';

const ALL: readonly Section[] = [
  'header',
  'review',
  'output',
  'next',
  'scores',
  'plot',
  'runtime'
];

/**
 * Sections to redraw after each kind of change.
 */
const AFFECTS: Record<LiveChange, readonly Section[]> = {
  trajectory: ALL,
  history: ['header', 'review', 'scores', 'plot'],
  steps: ['header', 'review', 'output', 'next', 'runtime'],
  predictions: ['output', 'next'],
  scores: ['output', 'next', 'scores', 'plot'],
  connection: ['header'],
  recording: ['header']
};

/**
 * Elements that act when clicked: they must not take the keyboard focus
 * from the notebook.
 */
const ACTIONABLE = 'button, summary, [data-step]';

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
    const trans = this._trans;
    this._variables = new VariablesView(trans);
    this._output = section(
      trans.__('Predicted output'),
      'themisto-OutputSection'
    );
    this._next = section(
      trans.__('Predicted next cell'),
      'themisto-NextSection'
    );
    this._scores = section(trans.__('Scoreboard'), 'themisto-ScoreSection');
    this._plot = section(trans.__('Scores over steps'), 'themisto-PlotSection');
    this._runtime = section(trans.__('Runtime'), 'themisto-RuntimeSection');
    this._tasks = new TaskView(
      this._live,
      this._settings,
      this._actions,
      {
        request: (task, code) => this._request(task, code),
        show: step => this.showStep(step)
      },
      trans
    );
    this.addClass(PANEL_CLASS);
    this.node.tabIndex = -1;
    this._stepView.append(
      this._output.node,
      this._next.node,
      this._runtime.node
    );
    this.node.append(
      this._header,
      this._reviewBar,
      this._stepView,
      this._scores.node,
      this._plot.node
    );
    this._runtime.body.append(this._variables.node);
    this.node.addEventListener('mousedown', this._onMouseDown);
    this.node.addEventListener('click', this._onClick);
    this.node.addEventListener('change', this._onClick);
    this._live.currentChanged.connect(this._onCurrentChanged, this);
    this._live.predictorsChanged.connect(this._onSettings, this);
    this._settings.changed.connect(this._onSettings, this);
    this._onCurrentChanged(this._live, this._live.current);
  }

  /**
   * What the panel shows.
   */
  get view(): PanelView {
    return this._view;
  }

  /**
   * Emitted when the panel starts or stops reviewing a step.
   */
  get viewChanged(): ISignal<this, PanelView> {
    return this._viewChanged;
  }

  /**
   * Show one step of the active notebook: its predicted vs real output, the
   * next cell predicted after it, and the runtime after it.
   */
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
    this._detail = null;
    this._live.loadStep(store, step, id).then(
      detail => {
        if (this._isShowing(store, step)) {
          this._detail = detail;
          this._markDirty(['output', 'next', 'runtime']);
        }
      },
      (error: unknown) => {
        if (this._isShowing(store, step)) {
          this._detail = {
            trajectoryId: id,
            step,
            whole: null,
            next: null,
            predictions: []
          };
          this._markDirty(['output', 'next', 'runtime']);
          console.warn('themisto: could not read step', step, error);
        }
      }
    );
  }

  /**
   * Follow the notebook live again.
   */
  showLive(): void {
    this._setView({ mode: 'live' });
  }

  /**
   * Review the step before (from live: the latest step).
   */
  showPrevious(): void {
    const step = previousStep(this._view, this._lastStep());
    if (step !== null) {
      this.showStep(step);
    }
  }

  /**
   * Review the step after (after the latest: live).
   */
  showNext(): void {
    const next = nextView(this._view, this._lastStep());
    if (next?.mode === 'review') {
      this.showStep(next.step, next.trajectory);
    } else if (next) {
      this.showLive();
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._store?.changed.disconnect(this._onStoreChanged, this);
    this._live.currentChanged.disconnect(this._onCurrentChanged, this);
    this._live.predictorsChanged.disconnect(this._onSettings, this);
    this._settings.changed.disconnect(this._onSettings, this);
    if (this._frame !== null) {
      cancelAnimationFrame(this._frame);
    }
    super.dispose();
  }

  /**
   * Redraw every dirty section now (tests; the panel redraws by itself).
   */
  flush(): void {
    if (this._frame !== null) {
      cancelAnimationFrame(this._frame);
      this._frame = null;
    }
    this._render();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._schedule();
  }

  /**
   * The last step of the trajectory shown.
   */
  private _lastStep(): number {
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

  private _isShowing(store: INotebookLive, step: number): boolean {
    return (
      store === this._store &&
      this._view.mode === 'review' &&
      this._view.step === step
    );
  }

  private _setView(view: PanelView): void {
    this._view = view;
    if (view.mode === 'live') {
      this._detail = null;
    }
    this._markDirty(['review', 'output', 'next', 'runtime', 'plot']);
    this._viewChanged.emit(view);
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

  private _onCurrentChanged(
    live: IThemistoLive,
    store: INotebookLive | null
  ): void {
    this._store?.changed.disconnect(this._onStoreChanged, this);
    this._store = store;
    store?.changed.connect(this._onStoreChanged, this);
    if (this._view.mode !== 'live') {
      this._setView({ mode: 'live' });
    }
    this._markDirty(ALL);
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
    this._markDirty(AFFECTS[change]);
  }

  private _onSettings(): void {
    this._markDirty(ALL.filter(s => s !== 'runtime'));
  }

  private _markDirty(sections: readonly Section[]): void {
    for (const name of sections) {
      this._dirty.add(name);
    }
    this._schedule();
  }

  /**
   * Redraw at most once a frame, and not while hidden: a burst of events
   * (history of a long trajectory) costs one redraw.
   */
  private _schedule(): void {
    if (this._frame !== null || !this.isVisible) {
      return;
    }
    this._frame = requestAnimationFrame(() => {
      this._frame = null;
      this._render();
    });
  }

  private _render(): void {
    const dirty = this._dirty;
    this._dirty = new Set();
    const store = this._store;
    const settings = this._settings.settings;
    const view = this._view;
    this.node.dataset.layout = settings.layout;
    this.node.dataset.state = store ? 'notebook' : 'no-notebook';
    this.node.dataset.view = view.mode;
    if (view.mode === 'review') {
      this._stepView.dataset.themistoViewStep = String(view.step);
    } else {
      delete this._stepView.dataset.themistoViewStep;
    }
    const combos = visibleCombos(
      this._live.predictors,
      store ? store.seenCombos : [],
      settings
    );
    const header = this._headerState();
    if (
      dirty.has('header') &&
      this._fresh('header', headerKey(store, header))
    ) {
      this._header.replaceChildren(
        ...headerView(
          store,
          header,
          {
            predictNow: () => this._request('next-cell'),
            toggleRecording: () => void this._actions.toggleRecording(),
            refreshPredictors: () => void this._live.refreshPredictors()
          },
          this._trans
        )
      );
    }
    for (const node of [
      this._reviewBar,
      this._stepView,
      this._scores.node,
      this._plot.node
    ]) {
      node.hidden = !store;
    }
    if (!store) {
      return;
    }
    const lastStep = this._lastStep();
    if (
      dirty.has('review') &&
      this._fresh('review', JSON.stringify([view, lastStep]))
    ) {
      this._reviewBar.replaceChildren(
        ...reviewBar(
          view,
          lastStep,
          {
            previous: () => this.showPrevious(),
            next: () => this.showNext(),
            live: () => this.showLive()
          },
          this._trans
        )
      );
    }
    const detail = view.mode === 'review' ? this._detail : null;
    if (dirty.has('output')) {
      this._tasks.render(this._output, 'output', store, combos, view, detail);
    }
    if (dirty.has('next')) {
      this._tasks.render(this._next, 'next-cell', store, combos, view, detail);
    }
    const keys = new Set(combos.map(key));
    const rows = store.scoreRows.filter(row => keys.has(key(row)));
    const counts = rows.map(r => `${key(r)}:${r.task}:${r.means.count}`);
    if (dirty.has('scores') && this._fresh('scores', counts.join())) {
      this._scores.body.replaceChildren(
        scoreboard(
          rows,
          this._trans,
          row => {
            const points = store.series(row.task, row);
            return points.length ? points[points.length - 1].step : null;
          },
          step => this.showStep(step, store.trajectoryId)
        )
      );
    }
    const shown = view.mode === 'review' && view.current ? view.step : null;
    const plotKey = [this._plotTask, this._plotScore, shown, ...counts].join();
    if (dirty.has('plot') && this._fresh('plot', plotKey)) {
      this._renderPlot(store, combos, shown);
    }
    this._renderRuntime(dirty, store, detail);
  }

  private _renderRuntime(
    dirty: Set<Section>,
    store: INotebookLive,
    detail: IStepDetail | null
  ): void {
    const view = this._view;
    const step =
      view.mode === 'review'
        ? (detail?.whole ?? (view.current ? store.getStep(view.step) : null))
        : store.latestStep;
    const signature = `${store.trajectoryId}:${view.mode}:${step?.step}:${!!detail}`;
    if (!dirty.has('runtime') || !this._fresh('runtime', signature)) {
      return;
    }
    if (view.mode === 'review' && !step && !detail) {
      this._variables.loading();
    } else {
      this._variables.render(step);
    }
    this._runtime.title.textContent = step
      ? this._trans.__('Runtime after step %1', step.step)
      : this._trans.__('Runtime');
  }

  /**
   * Whether a section's content changed since it was drawn. Redrawing the
   * same content would replace buttons under the pointer and lose clicks,
   * and close an open select.
   */
  private _fresh(name: Section, signature: string): boolean {
    if (this._signatures.get(name) === signature) {
      return false;
    }
    this._signatures.set(name, signature);
    return true;
  }

  private _headerState(): IHeaderState {
    return {
      predictors: this._live.predictors,
      predictorsError: this._live.predictorsError,
      autoPredict: this._settings.settings.autoPredict
    };
  }

  private _renderPlot(
    store: INotebookLive,
    combos: ReturnType<typeof visibleCombos>,
    shown: number | null
  ): void {
    const series = combos.map(combo => ({
      label: comboLabel(combo),
      points: store.series(this._plotTask, combo)
    }));
    this._plot.body.replaceChildren(
      ...plotView(
        series,
        {
          task: this._plotTask,
          score: this._plotScore,
          shown,
          onTask: task => {
            this._plotTask = task;
            this._markDirty(['plot']);
          },
          onScore: score => {
            this._plotScore = score;
            this._markDirty(['plot']);
          },
          onStep: step => this.showStep(step, store.trajectoryId)
        },
        this._trans
      )
    );
  }

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
  private _store: INotebookLive | null = null;
  private _view: PanelView = { mode: 'live' };
  private _detail: IStepDetail | null = null;
  private _viewChanged = new Signal<this, PanelView>(this);
  private _dirty = new Set<Section>(ALL);
  private _signatures = new Map<Section, string>();
  private _frame: number | null = null;
  private _plotTask: PredictionTask = 'output';
  private _plotScore: ScoreName = 'rouge_l';
  private _header = h('div', { class: 'themisto-Header' });
  private _reviewBar = h('div', { class: 'themisto-ReviewBar' });
  private _stepView = h('div', { class: 'themisto-StepView' });
  private _output: ISection;
  private _next: ISection;
  private _scores: ISection;
  private _plot: ISection;
  private _runtime: ISection;
  private _tasks: TaskView;
  private _variables: VariablesView;
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
