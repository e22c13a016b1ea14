/**
 * The panel's two prediction sections, "output" and "next cell", for the
 * live notebook or for one step under review: which target each shows, its
 * cards per predictor × context, and what a card without a prediction says.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { h, type VirtualElement } from '@lumino/virtualdom';

import type { LiveStep, PredictionTask } from '../api/records';
import { noPredictionReason } from '../live/reasons';
import { shownTarget } from '../live/store';
import type { ICombo, IPredictionSlot, IStepDetail } from '../live/types';
import type {
  INotebookLive,
  IPredictionSettings,
  IThemistoLive
} from '../tokens';
import { beforeRunCards, shownSpeculation } from './beforerun';
import type { IPanelActions } from './panel';
import type { PanelView } from './review';
import {
  type ICardActions,
  type Missing,
  nextCellCard,
  outputCard,
  type PromptState,
  textPre
} from './views';

/**
 * Prompts kept once fetched (a few: they are long).
 */
const PROMPTS_KEPT = 16;

/**
 * How long "Copied" shows on a Copy button.
 */
const COPIED_MS = 1500;

/**
 * A titled section of the panel.
 */
export function section(
  cls: string,
  title: string,
  body: h.Child[],
  dataset: Record<string, string> = {}
): VirtualElement {
  return h.section(
    { className: `themisto-Section ${cls}`, dataset },
    h.h3({ className: 'themisto-Section-title' }, title),
    h.div({ className: 'themisto-Section-body' }, ...body)
  );
}

/**
 * What the sections ask of the panel.
 */
export interface ITaskHost {
  request(task: PredictionTask, code?: string): void;
  /**
   * Something the sections show changed (a prompt was read, "Copied").
   */
  changed(): void;
}

/**
 * One target's predictions as the cards show them.
 */
interface ITarget {
  target: number;
  title: string;
  slots: (IPredictionSlot | null)[];
  landed: LiveStep | null;
  /**
   * Under review: the real code of the next cell (`null` if not run).
   */
  actual: string | null;
  review: boolean;
  retryable: boolean;
  missing: Missing;
  note: string | null;
}

export class TaskView {
  constructor(
    private readonly _live: IThemistoLive,
    private readonly _settings: IPredictionSettings,
    private readonly _actions: IPanelActions,
    private readonly _host: ITaskHost,
    private readonly _trans: TranslationBundle
  ) {}

  /**
   * One section: the target a task shows, its cards.
   */
  render(
    task: PredictionTask,
    store: INotebookLive,
    combos: ICombo[],
    view: PanelView,
    detail: IStepDetail | null
  ): VirtualElement {
    const trans = this._trans;
    const cls =
      task === 'output' ? 'themisto-OutputSection' : 'themisto-NextSection';
    const shown =
      view.mode === 'review'
        ? this._reviewed(task, store, combos, view, detail)
        : this._latest(task, store, combos);
    if (task === 'output' && view.mode === 'live') {
      const before = this._beforeRun(cls, store, combos);
      if (before) {
        return before;
      }
    }
    const dataset = { 'target-step': shown ? String(shown.target) : '' };
    if (task === 'next-cell' && view.mode === 'live') {
      this._writtenShown = this._actions.nextCellWritten();
      if (this._writtenShown) {
        return this._written(cls, dataset);
      }
    }
    if (!shown || combos.length === 0) {
      return this._nothing(task, cls, dataset);
    }
    const code =
      task === 'output' && shown.review && shown.landed
        ? h(
            'details',
            { className: 'themisto-StepCode' },
            h.summary(trans.__('Code of step %1', shown.target)),
            textPre(shown.landed.code, 'themisto-Code', trans)
          )
        : null;
    const note = shown.note
      ? h.p({ className: 'themisto-Muted themisto-Note' }, shown.note)
      : null;
    const cards = combos.map((combo, i) =>
      this._card(task, combo, shown, shown.slots[i])
    );
    return section(
      cls,
      shown.title,
      [code, note, h.div({ className: 'themisto-Cards' }, cards)],
      dataset
    );
  }

  /**
   * The output predicted for the active cell before it runs, if any.
   */
  private _beforeRun(
    cls: string,
    store: INotebookLive,
    combos: ICombo[]
  ): VirtualElement | null {
    const found = shownSpeculation(store, this._actions.activeCode());
    this._beforeRunShown = found ? found.targetStep : null;
    if (!found || combos.length === 0) {
      return null;
    }
    return section(
      cls,
      this._trans.__('If you run this cell'),
      [
        beforeRunCards(
          found,
          combos,
          { prompt: id => this._prompt(id) },
          this._trans
        )
      ],
      { 'target-step': String(found.targetStep), 'before-run': 'true' }
    );
  }

  /**
   * Not the frontier: the next cell is there to read, not to guess.
   */
  private _written(
    cls: string,
    dataset: Record<string, string>
  ): VirtualElement {
    const trans = this._trans;
    return section(
      cls,
      trans.__('Next cell'),
      [
        h.p(
          { className: 'themisto-Muted themisto-Written' },
          trans.__(
            'The next cell is written already: nothing to predict. Predictions of new code come at the end of the notebook (or in an empty cell below the last cell run).'
          )
        )
      ],
      { ...dataset, frontier: 'false' }
    );
  }

  /**
   * A task with nothing to show yet, and why.
   */
  private _nothing(
    task: PredictionTask,
    cls: string,
    dataset: Record<string, string>
  ): VirtualElement {
    const trans = this._trans;
    const none = this._live.predictors?.predictors.length === 0;
    const title =
      task === 'output'
        ? trans.__('Predicted output')
        : trans.__('Predicted next cell');
    const text = none
      ? trans.__('Nothing is predicted: no predictor is configured.')
      : task === 'output'
        ? trans.__('Run a cell: its predicted output appears here.')
        : trans.__('The predicted next cell appears after a cell runs.');
    return section(
      cls,
      title,
      [h.p({ className: 'themisto-Muted' }, text)],
      dataset
    );
  }

  /**
   * Whether the live output section last drawn no longer fits the active
   * cell: it showed a speculation, or should show one now (another cell was
   * selected, or its text was edited to or away from the text predicted).
   */
  beforeRunStale(store: INotebookLive | null, view: PanelView): boolean {
    if (!store || view.mode !== 'live') {
      return false;
    }
    const found = shownSpeculation(store, this._actions.activeCode());
    return (found ? found.targetStep : null) !== this._beforeRunShown;
  }

  /**
   * Whether the live next-cell section last drawn said the next cell is
   * written already (`null`: not drawn live yet).
   */
  get writtenShown(): boolean | null {
    return this._writtenShown;
  }

  /**
   * A prompt disclosure was opened or closed: the first opening reads the
   * prompt; closing one that could not be read lets the next try again.
   */
  setPromptOpen(predictionId: string, open: boolean): void {
    if (open === this._openPrompts.has(predictionId)) {
      return;
    }
    if (!open) {
      this._openPrompts.delete(predictionId);
      if (this._prompts.get(predictionId)?.kind === 'failed') {
        this._prompts.delete(predictionId);
      }
    } else {
      this._openPrompts.add(predictionId);
      if (!this._prompts.has(predictionId)) {
        this._loadPrompt(predictionId);
      }
    }
    this._host.changed();
  }

  private _card(
    task: PredictionTask,
    combo: ICombo,
    shown: ITarget,
    slot: IPredictionSlot | null
  ): VirtualElement {
    const trans = this._trans;
    const prompt = (id: string) => this._prompt(id);
    if (task === 'output') {
      return outputCard(
        combo,
        shown.target,
        slot,
        shown.landed,
        {
          prompt,
          retry: shown.retryable
            ? s => {
                const code = s?.cellId
                  ? this._actions.cellCode(s.cellId)
                  : null;
                this._host.request('output', code ?? undefined);
              }
            : null
        },
        trans,
        shown.missing
      );
    }
    const actions: ICardActions = {
      prompt,
      insertBelow: text => this._actions.insertBelow(text),
      replaceActive: text => this._actions.replaceActive(text),
      copy: (text, id) => this._copy(text, id),
      copied: id => this._copied === id,
      retry: shown.retryable ? () => this._host.request('next-cell') : null
    };
    return nextCellCard(
      combo,
      shown.target,
      slot,
      actions,
      trans,
      shown.review ? { actual: shown.actual, missing: shown.missing } : null
    );
  }

  private _copy(text: string, predictionId: string): void {
    this._actions.copy(text);
    this._copied = predictionId;
    window.clearTimeout(this._copiedTimer);
    this._copiedTimer = window.setTimeout(() => {
      this._copied = null;
      this._host.changed();
    }, COPIED_MS);
    this._host.changed();
  }

  /**
   * The live target of a task: the running (or last run) cell's output, the
   * cell after the last one run.
   */
  private _latest(
    task: PredictionTask,
    store: INotebookLive,
    combos: ICombo[]
  ): ITarget | null {
    const trans = this._trans;
    const target = shownTarget(
      store,
      task,
      !this._settings.settings.autoPredict
    );
    if (target === null) {
      return null;
    }
    const running = store.latestTarget('output');
    const slots = pick(store.slots(task, target), combos);
    let title: string;
    let note: string | null = null;
    let shownTarget_ = target;
    if (task === 'output') {
      title = trans.__('Output of step %1', target);
    } else if (
      running !== null &&
      running > store.lastStep &&
      running >= target
    ) {
      // The cell this prediction is about is running: the next one is
      // predicted once it finishes.
      shownTarget_ = running + 1;
      title = trans.__('Next cell (step %1)', shownTarget_);
      note = trans.__('Predicted when step %1 finishes.', running);
      return {
        target: shownTarget_,
        title,
        slots: combos.map(() => null),
        landed: null,
        actual: null,
        review: false,
        retryable: false,
        missing: { kind: 'predicting' },
        note
      };
    } else {
      title = trans.__('Next cell (step %1)', target);
    }
    return {
      target: shownTarget_,
      title,
      slots,
      landed: task === 'output' ? store.getStep(target) : null,
      actual: null,
      review: false,
      // A retry asks for the step after the latest: only a target not yet
      // run can be predicted again.
      retryable: target === store.lastStep + 1,
      missing: { kind: 'predicting' },
      note
    };
  }

  /**
   * A step under review: its output, and its successor's code predicted
   * after it.
   */
  private _reviewed(
    task: PredictionTask,
    store: INotebookLive,
    combos: ICombo[],
    view: Extract<PanelView, { mode: 'review' }>,
    detail: IStepDetail | null
  ): ITarget {
    const trans = this._trans;
    const step = view.step;
    const target = task === 'output' ? step : step + 1;
    // The live store holds the current trajectory's latest predictions
    // (a retry, a prediction still coming): they are newer than a read.
    const live = view.current ? store.slots(task, target) : [];
    const kept = (n: number): LiveStep | null =>
      view.current ? store.getStep(n) : null;
    const slots = live.length
      ? live
      : (detail?.predictions ?? [])
          .filter(p => p.task === task && p.target_step === target)
          .map((p): IPredictionSlot => ({
            task,
            targetStep: target,
            predictor: p.predictor,
            context: p.context,
            cellId: p.cell_id,
            state: p.error ? 'error' : 'done',
            prediction: p
          }));
    const reason = noPredictionReason(
      this._live.predictors,
      this._settings.settings.autoPredict,
      trans
    );
    return {
      target,
      title:
        task === 'output'
          ? trans.__('Output of step %1', step)
          : trans.__(
              'Next cell (step %1), predicted after step %2',
              target,
              step
            ),
      slots: pick(slots, combos),
      landed: task === 'output' ? (detail?.whole ?? kept(step)) : null,
      actual:
        task === 'next-cell'
          ? (detail?.next?.code ?? kept(target)?.code ?? null)
          : null,
      review: true,
      retryable: false,
      missing: detail ? { kind: 'none', reason } : { kind: 'predicting' },
      note: detail ? null : trans.__('loading…')
    };
  }

  private _prompt(predictionId: string): PromptState {
    if (!this._openPrompts.has(predictionId)) {
      return { kind: 'closed' };
    }
    return this._prompts.get(predictionId) ?? { kind: 'loading' };
  }

  /**
   * Read a prompt (the stream does not carry prompts); a few are kept.
   */
  private _loadPrompt(predictionId: string): void {
    this._prompts.set(predictionId, { kind: 'loading' });
    if (this._prompts.size > PROMPTS_KEPT) {
      const oldest = this._prompts.keys().next();
      if (!oldest.done) {
        this._prompts.delete(oldest.value);
      }
    }
    this._actions.getPrediction(predictionId).then(
      prediction => {
        const prompt = prediction.prompt ?? null;
        this._prompts.set(predictionId, { kind: 'read', prompt });
        this._host.changed();
      },
      (error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        this._prompts.set(predictionId, { kind: 'failed', message });
        this._host.changed();
      }
    );
  }

  private _prompts = new Map<string, PromptState>();
  private _openPrompts = new Set<string>();
  private _writtenShown: boolean | null = null;
  /**
   * The target of the speculation the live output section last showed.
   */
  private _beforeRunShown: number | null = null;
  private _copied: string | null = null;
  private _copiedTimer = 0;
}

/**
 * The slot of each combo, in the combos' order.
 */
function pick(
  slots: IPredictionSlot[],
  combos: ICombo[]
): (IPredictionSlot | null)[] {
  return combos.map(
    combo =>
      slots.find(
        s => s.predictor === combo.predictor && s.context === combo.context
      ) ?? null
  );
}
