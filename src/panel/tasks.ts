/**
 * The panel's two prediction sections, "output" and "next cell", for the
 * live notebook or for one step under review: which target each shows, its
 * cards per predictor × context, and what a card without a prediction says.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type { LiveStep, PredictionTask, PromptText } from '../api/records';
import { noPredictionReason } from '../live/reasons';
import { shownTarget } from '../live/store';
import type { ICombo, IPredictionSlot, IStepDetail } from '../live/types';
import type {
  INotebookLive,
  IPredictionSettings,
  IThemistoLive
} from '../tokens';
import { h } from './dom';
import type { IPanelActions } from './panel';
import type { PanelView } from './review';
import {
  type ICardActions,
  type IPromptActions,
  type Missing,
  nextCellCard,
  outputCard,
  textPre
} from './views';

/**
 * Prompts kept once fetched (a few: they are long).
 */
const PROMPTS_KEPT = 16;

export interface ISection {
  node: HTMLElement;
  title: HTMLElement;
  body: HTMLElement;
}

export function section(title: string, cls: string): ISection {
  const heading = h('h3', { class: 'themisto-Section-title' }, title);
  const body = h('div', { class: 'themisto-Section-body' });
  return {
    node: h('section', { class: `themisto-Section ${cls}` }, heading, body),
    title: heading,
    body
  };
}

/**
 * What the sections ask of the panel.
 */
export interface ITaskHost {
  request(task: PredictionTask, code?: string): void;
  show(step: number): void;
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
   * Draw one section (unless what it shows did not change).
   */
  render(
    target: ISection,
    task: PredictionTask,
    store: INotebookLive,
    combos: ICombo[],
    view: PanelView,
    detail: IStepDetail | null
  ): void {
    const shown =
      view.mode === 'review'
        ? this._reviewed(task, store, combos, view, detail)
        : this._latest(task, store, combos);
    target.node.dataset.targetStep = shown ? String(shown.target) : '';
    if (!shown || combos.length === 0) {
      this._empty(target, task);
      return;
    }
    const signature = JSON.stringify([
      shown.target,
      shown.review,
      shown.retryable,
      shown.landed?.step,
      shown.actual,
      shown.missing,
      shown.note,
      combos.map((combo, i) => {
        const p = shown.slots[i]?.prediction;
        return [
          combo.predictor,
          combo.context,
          shown.slots[i]?.state,
          shown.slots[i]?.partial,
          p?.id,
          p?.answer,
          p?.scores,
          p?.error
        ];
      })
    ]);
    if (target.node.dataset.signature === signature) {
      return;
    }
    target.node.dataset.signature = signature;
    target.title.textContent = shown.title;
    const grid = h('div', { class: 'themisto-Cards' });
    combos.forEach((combo, i) => {
      grid.append(this._card(task, combo, shown, shown.slots[i]));
    });
    const code =
      task === 'output' && shown.review && shown.landed
        ? h(
            'details',
            { class: 'themisto-StepCode' },
            h('summary', {}, this._trans.__('Code of step %1', shown.target)),
            textPre(shown.landed.code, 'themisto-Code', this._trans)
          )
        : null;
    const note = shown.note
      ? h('p', { class: 'themisto-Muted themisto-Note' }, shown.note)
      : null;
    target.body.replaceChildren(...[code, note, grid].filter(n => n !== null));
  }

  private _card(
    task: PredictionTask,
    combo: ICombo,
    shown: ITarget,
    slot: IPredictionSlot | null
  ): HTMLElement {
    const trans = this._trans;
    if (task === 'output') {
      return outputCard(
        combo,
        shown.target,
        slot,
        shown.landed,
        {
          ...this._promptActions,
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
      ...this._promptActions,
      insertBelow: text => this._actions.insertBelow(text),
      replaceActive: text => this._actions.replaceActive(text),
      copy: text => this._actions.copy(text),
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

  private _empty(target: ISection, task: PredictionTask): void {
    const trans = this._trans;
    const none = this._live.predictors?.predictors.length === 0;
    const signature = `empty:${none}`;
    if (target.node.dataset.signature === signature) {
      return;
    }
    target.node.dataset.signature = signature;
    target.title.textContent =
      task === 'output'
        ? trans.__('Predicted output')
        : trans.__('Predicted next cell');
    target.body.replaceChildren(
      h(
        'p',
        { class: 'themisto-Muted' },
        none
          ? trans.__('Nothing is predicted: no predictor is configured.')
          : task === 'output'
            ? trans.__('Run a cell: its predicted output appears here.')
            : trans.__('The predicted next cell appears after a cell runs.')
      )
    );
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

  private _prompts = new Map<string, Promise<PromptText | null>>();
  private _openPrompts = new Set<string>();
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
