/**
 * The prediction panel: follows the active notebook's live store.
 */
import { Notification } from '@jupyterlab/apputils';
import {
  type ITranslator,
  nullTranslator,
  type TranslationBundle
} from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import type { ScoreName } from '../api/model';
import type { Prediction, PredictionTask, PromptText } from '../api/records';
import { shownTarget } from '../live/store';
import type { ICombo, LiveChange } from '../live/types';
import { visibleCombos } from '../settings';
import type {
  INotebookLive,
  IPredictionSettings,
  IThemistoLive
} from '../tokens';
import { h } from './dom';
import { headerKey, headerView, type IHeaderState } from './header';
import { plotView } from './plotview';
import { VariablesView } from './variables';
import {
  comboLabel,
  type ICardActions,
  type IPromptActions,
  nextCellCard,
  outputCard,
  scoreboard
} from './views';

export const PANEL_CLASS = 'themisto-PredictionPanel';

/**
 * What the panel asks of the notebook it follows.
 */
export interface IPanelActions {
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
}

/**
 * Prompts kept once fetched (a few: they are long).
 */
const PROMPTS_KEPT = 16;

type Section = 'header' | 'output' | 'next' | 'scores' | 'plot' | 'runtime';

const ALL: readonly Section[] = [
  'header',
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
  steps: ['header', 'output', 'next', 'runtime'],
  predictions: ['output', 'next'],
  scores: ['output', 'next', 'scores', 'plot'],
  connection: ['header'],
  recording: ['header']
};

/**
 * The prediction panel: follows the active notebook and shows the
 * predictions of its running cell and next cell, scores and runtime state.
 */
export class PredictionPanel extends Widget {
  constructor(options: PredictionPanel.IOptions) {
    super();
    this._live = options.live;
    this._settings = options.settings;
    this._actions = options.actions;
    this._trans = (options.translator ?? nullTranslator).load('themisto_ext');
    this._variables = new VariablesView(this._trans);
    this._output = section(
      this._trans.__('Predicted output'),
      'themisto-OutputSection'
    );
    this._next = section(
      this._trans.__('Predicted next cell'),
      'themisto-NextSection'
    );
    this._scores = section(
      this._trans.__('Scoreboard'),
      'themisto-ScoreSection'
    );
    this._plot = section(
      this._trans.__('Scores over steps'),
      'themisto-PlotSection'
    );
    this._runtime = section(
      this._trans.__('Runtime'),
      'themisto-RuntimeSection'
    );
    this.addClass(PANEL_CLASS);
    this.node.tabIndex = -1;
    this.node.append(
      this._header,
      this._output.node,
      this._next.node,
      this._scores.node,
      this._plot.node,
      this._runtime.node
    );
    this._runtime.body.append(this._variables.node);
    this._live.currentChanged.connect(this._onCurrentChanged, this);
    this._live.predictorsChanged.connect(this._onSettings, this);
    this._settings.changed.connect(this._onSettings, this);
    this._onCurrentChanged(this._live, this._live.current);
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

  private _onCurrentChanged(
    live: IThemistoLive,
    store: INotebookLive | null
  ): void {
    this._store?.changed.disconnect(this._onStoreChanged, this);
    this._store = store;
    store?.changed.connect(this._onStoreChanged, this);
    this._markDirty(ALL);
  }

  private _onStoreChanged(store: INotebookLive, change: LiveChange): void {
    this._markDirty(AFFECTS[change]);
  }

  private _onSettings(): void {
    this._markDirty(ALL.filter(s => s !== 'runtime'));
  }

  private _markDirty(sections: readonly Section[]): void {
    for (const section of sections) {
      this._dirty.add(section);
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
    this.node.dataset.layout = settings.layout;
    this.node.dataset.state = store ? 'notebook' : 'no-notebook';
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
    for (const section of [
      this._output,
      this._next,
      this._scores,
      this._plot,
      this._runtime
    ]) {
      section.node.hidden = !store;
    }
    if (!store) {
      return;
    }
    if (dirty.has('output')) {
      this._renderTask('output', store, combos);
    }
    if (dirty.has('next')) {
      this._renderTask('next-cell', store, combos);
    }
    const keys = new Set(combos.map(key));
    const rows = store.scoreRows.filter(row => keys.has(key(row)));
    const counts = rows.map(r => `${key(r)}:${r.task}:${r.means.count}`);
    if (dirty.has('scores') && this._fresh('scores', counts.join())) {
      this._scores.body.replaceChildren(scoreboard(rows, this._trans));
    }
    const plotKey = [this._plotTask, this._plotScore, ...counts].join();
    if (dirty.has('plot') && this._fresh('plot', plotKey)) {
      this._renderPlot(store, combos);
    }
    const latest = store.latestStep;
    if (
      dirty.has('runtime') &&
      this._fresh('runtime', `${store.trajectoryId}:${latest?.step}`)
    ) {
      this._variables.render(store.latestStep);
      const step = store.latestStep;
      this._runtime.title.textContent = step
        ? this._trans.__('Runtime after step %1', step.step)
        : this._trans.__('Runtime');
    }
  }

  /**
   * Whether a section's content changed since it was drawn. Redrawing the
   * same content would replace buttons under the pointer and lose clicks,
   * and close an open select.
   */
  private _fresh(section: Section, signature: string): boolean {
    if (this._signatures.get(section) === signature) {
      return false;
    }
    this._signatures.set(section, signature);
    return true;
  }

  private _headerState(): IHeaderState {
    return {
      predictors: this._live.predictors,
      predictorsError: this._live.predictorsError,
      autoPredict: this._settings.settings.autoPredict
    };
  }

  private _renderTask(
    task: PredictionTask,
    store: INotebookLive,
    combos: ICombo[]
  ): void {
    const section = task === 'output' ? this._output : this._next;
    const target = shownTarget(
      store,
      task,
      !this._settings.settings.autoPredict
    );
    section.node.dataset.targetStep = target === null ? '' : String(target);
    const sectionKey: Section = task === 'output' ? 'output' : 'next';
    if (target === null || combos.length === 0) {
      if (
        !this._fresh(
          sectionKey,
          `empty:${this._live.predictors?.predictors.length}`
        )
      ) {
        return;
      }
      const trans = this._trans;
      section.title.textContent =
        task === 'output'
          ? trans.__('Predicted output')
          : trans.__('Predicted next cell');
      section.body.replaceChildren(
        h(
          'p',
          { class: 'themisto-Muted' },
          this._live.predictors?.predictors.length === 0
            ? trans.__('Nothing is predicted: no predictor is configured.')
            : task === 'output'
              ? trans.__('Run a cell: its predicted output appears here.')
              : trans.__('The predicted next cell appears after a cell runs.')
        )
      );
      return;
    }
    section.title.textContent =
      task === 'output'
        ? this._trans.__('Output of step %1', target)
        : this._trans.__('Next cell (step %1)', target);
    // A retry asks for the step after the latest: only a target not yet
    // run can be predicted again.
    const retryable = target === store.lastStep + 1;
    const slots = combos.map(
      combo =>
        store
          .slots(task, target)
          .find(
            s => s.predictor === combo.predictor && s.context === combo.context
          ) ?? null
    );
    const landed = task === 'output' ? store.getStep(target) : null;
    const signature = JSON.stringify([
      target,
      retryable,
      landed?.step,
      combos.map((combo, i) => {
        const p = slots[i]?.prediction;
        return [key(combo), slots[i]?.state, p?.id, p?.answer, p?.scores];
      })
    ]);
    if (!this._fresh(sectionKey, signature)) {
      return;
    }
    const grid = h('div', { class: 'themisto-Cards' });
    combos.forEach((combo, i) => {
      const slot = slots[i];
      if (task === 'output') {
        grid.append(
          outputCard(
            combo,
            target,
            slot,
            landed,
            {
              ...this._promptActions,
              retry: retryable
                ? s => {
                    const code = s?.cellId
                      ? this._actions.cellCode(s.cellId)
                      : null;
                    this._request('output', code ?? undefined);
                  }
                : null
            },
            this._trans
          )
        );
      } else {
        const actions: ICardActions = {
          ...this._promptActions,
          insertBelow: text => this._actions.insertBelow(text),
          replaceActive: text => this._actions.replaceActive(text),
          copy: text => this._actions.copy(text),
          retry: retryable ? () => this._request('next-cell') : null
        };
        grid.append(nextCellCard(combo, target, slot, actions, this._trans));
      }
    });
    section.body.replaceChildren(grid);
  }

  private _renderPlot(store: INotebookLive, combos: ICombo[]): void {
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
          onTask: task => {
            this._plotTask = task;
            this._markDirty(['plot']);
          },
          onScore: score => {
            this._plotScore = score;
            this._markDirty(['plot']);
          }
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

  /**
   * The prompt of a prediction, fetched once (the stream does not carry
   * prompts); a failed read is tried again next time.
   */
  private _loadPrompt(predictionId: string): Promise<PromptText | null> {
    let prompt = this._prompts.get(predictionId);
    if (!prompt) {
      prompt = this._actions
        .getPrediction(predictionId)
        .then(prediction => prediction.prompt ?? null);
      prompt.catch(() => this._prompts.delete(predictionId));
      this._prompts.set(predictionId, prompt);
      if (this._prompts.size > PROMPTS_KEPT) {
        const oldest = this._prompts.keys().next();
        if (!oldest.done) {
          this._prompts.delete(oldest.value);
        }
      }
    }
    return prompt;
  }

  private _promptActions: IPromptActions = {
    loadPrompt: id => this._loadPrompt(id),
    isPromptOpen: id => this._openPrompts.has(id),
    setPromptOpen: (id, open) => {
      if (open) {
        this._openPrompts.add(id);
      } else {
        this._openPrompts.delete(id);
      }
    }
  };

  private _live: IThemistoLive;
  private _settings: IPredictionSettings;
  private _actions: IPanelActions;
  private _trans: TranslationBundle;
  private _prompts = new Map<string, Promise<PromptText | null>>();
  private _openPrompts = new Set<string>();
  private _store: INotebookLive | null = null;
  private _dirty = new Set<Section>(ALL);
  private _signatures = new Map<Section, string>();
  private _frame: number | null = null;
  private _plotTask: PredictionTask = 'output';
  private _plotScore: ScoreName = 'rouge_l';
  private _header = h('div', { class: 'themisto-Header' });
  private _output: ISection;
  private _next: ISection;
  private _scores: ISection;
  private _plot: ISection;
  private _runtime: ISection;
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

function key(combo: ICombo): string {
  return `${combo.predictor}\u0000${combo.context}`;
}

interface ISection {
  node: HTMLElement;
  title: HTMLElement;
  body: HTMLElement;
}

function section(title: string, cls: string): ISection {
  const heading = h('h3', { class: 'themisto-Section-title' }, title);
  const body = h('div', { class: 'themisto-Section-body' });
  return {
    node: h('section', { class: `themisto-Section ${cls}` }, heading, body),
    title: heading,
    body
  };
}
