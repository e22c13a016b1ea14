/**
 * DOM views of the prediction panel's cards and scores.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { h, type VirtualElement } from '@lumino/virtualdom';

import type {
  LivePrediction,
  LiveStep,
  PromptText,
  Scores
} from '../api/records';
import {
  comboLabel,
  formatScore,
  formatSeconds,
  SCORE_LABELS,
  scoreTitle
} from '../live/scoreformat';
import { errorReason, isMissed } from '../live/reasons';
import { isCopy, isReference } from '../live/references';
import type { ICombo, IPredictionSlot } from '../live/types';
import { diffText, type IDiffResult, type IDiffSegment } from './diff';
import { attrs, button } from '../dom';
import { summarizeTraceback } from './traceback';

export { comboLabel, SHORT_SCORE } from '../live/scoreformat';

/**
 * Characters of one text shown in a card; the rest is cut with a note so a
 * huge output cannot slow the page.
 */
export const DISPLAY_CHARS = 20000;

/**
 * A prompt as a card shows it: not asked for, being read, read (`null`
 * when the prediction has none), or not readable.
 */
export type PromptState =
  | { kind: 'closed' }
  | { kind: 'loading' }
  | { kind: 'read'; prompt: PromptText | null }
  | { kind: 'failed'; message: string };

/**
 * The "Show prompt" disclosure of a card: prompts are not on the stream, so
 * one is fetched when it is first opened (the panel tells its `toggle`).
 */
export interface IPromptActions {
  prompt(predictionId: string): PromptState;
}

/**
 * What the cards' buttons do.
 */
export interface ICardActions extends IPromptActions {
  insertBelow(text: string): void;
  replaceActive(text: string): void;
  /**
   * Copy a prediction's text; `copied` says so for a moment after.
   */
  copy(text: string, predictionId: string): void;
  copied(predictionId: string): boolean;
  /**
   * Ask again; `null` when a retry would not predict this target any more.
   */
  retry: ((slot: IPredictionSlot | null) => void) | null;
}

/**
 * What a card shows without a prediction: `predicting…` (live) or why
 * there is none (a step under review).
 */
export type Missing = { kind: 'predicting' } | { kind: 'none'; reason: string };

/**
 * The three scores as labelled chips, with the values in `data-*`.
 */
export function scoresView(
  scores: Scores | null,
  trans: TranslationBundle
): VirtualElement {
  const dataset: Record<string, string> = {};
  for (const { name } of SCORE_LABELS) {
    dataset[name.replace(/_/g, '-')] = scores ? String(scores[name]) : '';
  }
  return h.div(
    { className: 'themisto-Scores', dataset },
    SCORE_LABELS.map(({ name, short }) =>
      h.span(
        {
          className: 'themisto-Score',
          title: scoreTitle(name, trans),
          dataset: { score: name }
        },
        h.span({ className: 'themisto-Score-name' }, short),
        ' ',
        h.span(
          { className: 'themisto-Score-value' },
          formatScore(scores?.[name])
        )
      )
    )
  );
}

const diffCache = new Map<string, IDiffResult>();

/**
 * The diff of a prediction against its reference, memoised (the panel
 * redraws often, the texts rarely change).
 */
export function cachedDiff(key: string, a: string, b: string): IDiffResult {
  const full = `${key}\u0000${a.length}\u0000${b.length}`;
  let result = diffCache.get(full);
  if (!result) {
    result = diffText(a, b);
    diffCache.set(full, result);
    if (diffCache.size > 64) {
      const oldest = diffCache.keys().next();
      if (!oldest.done) {
        diffCache.delete(oldest.value);
      }
    }
  }
  return result;
}

/**
 * One side of a diff as a `<pre>`: equal text plain, this side's changes
 * highlighted (`del` on the prediction, `ins` on the real output).
 */
export function diffPre(
  segments: IDiffSegment[],
  side: 'a' | 'b',
  cls: string,
  trans: TranslationBundle
): VirtualElement {
  const content: (string | VirtualElement)[] = [];
  let budget = DISPLAY_CHARS;
  for (const segment of segments) {
    if (segment.op === (side === 'a' ? 'insert' : 'delete')) {
      continue;
    }
    if (budget <= 0) {
      break;
    }
    const text = segment.text.slice(0, budget);
    budget -= text.length;
    content.push(
      segment.op === 'equal'
        ? text
        : h(
            side === 'a' ? 'del' : 'ins',
            { className: `themisto-Diff-${segment.op}` },
            text
          )
    );
  }
  return h.pre(
    { className: `themisto-Text ${cls}` },
    content,
    budget <= 0 ? cutNote(trans) : null
  );
}

function cutNote(trans: TranslationBundle): VirtualElement {
  return h.span(
    { className: 'themisto-Cut' },
    '\n' + trans.__('[… cut for display]')
  );
}

/**
 * A plain text `<pre>`, cut for display.
 */
export function textPre(
  text: string,
  cls: string,
  trans: TranslationBundle
): VirtualElement {
  const cut = text.length > DISPLAY_CHARS;
  return h.pre(
    { className: `themisto-Text ${cls}` },
    cut ? text.slice(0, DISPLAY_CHARS) : text,
    cut ? cutNote(trans) : null
  );
}

function card(
  combo: ICombo,
  data: Record<string, string>,
  content: h.Child[],
  trans: TranslationBundle
): VirtualElement {
  return h.section(
    {
      className: 'themisto-Card',
      dataset: {
        predictor: combo.predictor,
        context: combo.context,
        ...data
      }
    },
    h.header(
      { className: 'themisto-Card-title' },
      comboLabel(combo),
      isReference(combo.predictor)
        ? h.span(
            { className: 'themisto-Reference' },
            ` · ${trans.__('reference')}`
          )
        : null
    ),
    ...content
  );
}

function errorView(
  slot: IPredictionSlot,
  retry: ICardActions['retry'],
  trans: TranslationBundle
): VirtualElement {
  const error = slot.prediction?.error;
  const missed = isMissed(error);
  return h.div(
    {
      className: missed ? 'themisto-Missed' : 'themisto-Error',
      role: missed ? 'status' : 'alert'
    },
    h.div(
      { className: 'themisto-Error-message' },
      error
        ? trans.__('No prediction: %1', errorReason(error, trans))
        : trans.__('The prediction failed.')
    ),
    !missed && retry
      ? button(trans.__('Retry'), () => retry(slot), {
          className: 'themisto-Retry'
        })
      : null
  );
}

function missingView(
  missing: Missing,
  trans: TranslationBundle
): VirtualElement {
  return missing.kind === 'predicting'
    ? predicting(trans)
    : h.div(
        { className: 'themisto-Missed', role: 'status' },
        trans.__('No prediction: %1', missing.reason)
      );
}

/**
 * The error line and the frame it was raised in, above the whole output
 * (IPython prints them last, where a narrow box hides them).
 */
export function tracebackView(
  step: LiveStep,
  trans: TranslationBundle
): VirtualElement | null {
  if (!step.error) {
    return null;
  }
  const summary = summarizeTraceback(step.output, step.error.ename);
  const error =
    summary?.error ??
    `${step.error.ename}${step.error.evalue ? `: ${step.error.evalue}` : ''}`;
  return h.div(
    { className: 'themisto-Traceback', 'aria-label': trans.__('Error') },
    h.pre({ className: 'themisto-Text themisto-Traceback-error' }, error),
    summary?.frame
      ? h.pre(
          { className: 'themisto-Text themisto-Traceback-frame' },
          summary.frame
        )
      : null
  );
}

function predicting(trans: TranslationBundle): VirtualElement {
  return h.div(
    { className: 'themisto-Predicting', 'aria-live': 'polite' },
    trans.__('predicting…')
  );
}

/**
 * A prediction being written: the model's answer so far (streamed).
 */
function writing(
  slot: IPredictionSlot,
  trans: TranslationBundle
): VirtualElement {
  if (!slot.partial) {
    return predicting(trans);
  }
  return h.div(
    { className: 'themisto-Writing', 'aria-live': 'polite' },
    h.div({ className: 'themisto-Label' }, trans.__('Predicting…')),
    textPre(slot.partial, 'themisto-Partial', trans)
  );
}

function meta(slot: IPredictionSlot, trans: TranslationBundle): VirtualElement {
  const p = slot.prediction;
  if (!p) {
    return h.div({ className: 'themisto-Card-meta' });
  }
  const parts = [p.model || p.predictor, formatSeconds(p.latency)];
  if (p.prompt_tokens !== null) {
    parts.push(trans.__('%1 prompt tokens', p.prompt_tokens));
  }
  if (p.cached_tokens) {
    parts.push(trans.__('%1 cached', p.cached_tokens));
  }
  if (p.speculative) {
    const ahead = p.ready_before_start ?? 0;
    parts.push(
      ahead > 0
        ? trans.__('ready %1 before the run', formatSeconds(ahead))
        : trans.__('predicted before the run')
    );
  }
  return h.div({ className: 'themisto-Card-meta' }, parts.join(' · '));
}

/**
 * The "Show prompt" disclosure of a prediction: the system and user prompt
 * texts, fetched when first opened.
 */
export function promptView(
  predictionId: string,
  state: PromptState,
  trans: TranslationBundle
): VirtualElement {
  const label = (text: string) => h.div({ className: 'themisto-Label' }, text);
  const muted = (text: string) => h.div({ className: 'themisto-Muted' }, text);
  const body =
    state.kind === 'loading'
      ? [muted(trans.__('loading…'))]
      : state.kind === 'failed'
        ? [
            h.div(
              { className: 'themisto-Error', role: 'alert' },
              trans.__('The prompt could not be read: %1', state.message)
            )
          ]
        : state.kind === 'closed'
          ? []
          : state.prompt
            ? [
                label(trans.__('System')),
                textPre(state.prompt.system, 'themisto-PromptSystem', trans),
                label(trans.__('User')),
                textPre(state.prompt.user, 'themisto-PromptUser', trans)
              ]
            : [muted(trans.__('This prediction has no prompt.'))];
  return h(
    'details',
    {
      ...attrs({ open: state.kind !== 'closed' }),
      className: 'themisto-Prompt',
      dataset: { prediction: predictionId }
    },
    h.summary(
      { className: 'themisto-Prompt-summary' },
      trans.__('Show prompt')
    ),
    h.div({ className: 'themisto-Prompt-body' }, body)
  );
}

/**
 * A card's footer: the model, latency and tokens, and the prompt.
 */
function footer(
  slot: IPredictionSlot,
  actions: IPromptActions,
  trans: TranslationBundle
): VirtualElement[] {
  const p = slot.prediction;
  return p
    ? [meta(slot, trans), promptView(p.id, actions.prompt(p.id), trans)]
    : [meta(slot, trans)];
}

/**
 * What a card says of a predictor that chose not to answer.
 */
function abstainedText(trans: TranslationBundle): string {
  return trans.__(
    'No confident prediction: the predictor abstained rather than guess'
  );
}

/**
 * The card of one predictor × context's output prediction for the running
 * (or last run) cell: predicted output, then the real one with a diff and
 * scores once the cell finished.
 */
export function outputCard(
  combo: ICombo,
  target: number,
  slot: IPredictionSlot | null,
  step: LiveStep | null,
  actions: Pick<ICardActions, 'retry'> & IPromptActions,
  trans: TranslationBundle,
  missing: Missing = { kind: 'predicting' },
  beforeRun = false
): VirtualElement {
  const state =
    slot?.state ?? (missing.kind === 'none' ? 'none' : 'predicting');
  const data = {
    task: 'output',
    // Predicted for a cell that has not run (beforerun.ts).
    'before-run': beforeRun ? 'true' : 'false',
    'target-step': `${target}`,
    state,
    landed: step ? 'true' : 'false',
    // Made from the cell's text before it ran, and taken when it started.
    speculative: slot?.prediction?.speculative ? 'true' : 'false',
    // The previous output repeated: shown as the reference it is.
    copy: slot?.prediction && isCopy(slot.prediction) ? 'true' : 'false',
    // The predictor chose not to answer: there is nothing to compare.
    abstained: slot?.prediction?.abstained ? 'true' : 'false'
  };
  const label = (text: string) => h.div({ className: 'themisto-Label' }, text);
  const muted = (text: string) => h.div({ className: 'themisto-Muted' }, text);
  let content: h.Child[];
  if (!slot) {
    content = [missingView(missing, trans)];
  } else if (slot.state === 'predicting') {
    content = [writing(slot, trans)];
  } else if (slot.state === 'error') {
    content = [errorView(slot, actions.retry, trans)];
  } else if (slot.prediction?.abstained) {
    content = [
      muted(abstainedText(trans)),
      ...(step
        ? [
            label(trans.__('Actual')),
            textPre(step.output, 'themisto-Actual', trans)
          ]
        : []),
      ...footer(slot, actions, trans)
    ];
  } else if (slot.prediction) {
    content = [
      ...answeredOutput(slot.prediction, step, beforeRun, trans),
      ...footer(slot, actions, trans)
    ];
  } else {
    content = [];
  }
  return card(combo, data, content, trans);
}

/**
 * An output predicted: alone until the cell finished, then beside the real
 * output with their diff and scores.
 */
function answeredOutput(
  prediction: LivePrediction,
  step: LiveStep | null,
  beforeRun: boolean,
  trans: TranslationBundle
): h.Child[] {
  const label = (text: string) => h.div({ className: 'themisto-Label' }, text);
  const muted = (text: string) => h.div({ className: 'themisto-Muted' }, text);
  const answer = prediction.answer;
  const predicted = label(
    isCopy(prediction)
      ? trans.__('The previous output, copied (a reference, not a prediction)')
      : trans.__('Predicted')
  );
  if (!step) {
    return [
      predicted,
      textPre(answer, 'themisto-Predicted', trans),
      muted(
        beforeRun
          ? trans.__('if the cell runs with this text')
          : trans.__('waiting for the cell to finish…')
      )
    ];
  }
  const diff = cachedDiff(prediction.id, answer, step.output);
  return [
    tracebackView(step, trans),
    predicted,
    answer.trim() === '' ? muted(trans.__('(no output)')) : null,
    diffPre(diff.segments, 'a', 'themisto-Predicted', trans),
    label(trans.__('Actual')),
    diffPre(diff.segments, 'b', 'themisto-Actual', trans),
    prediction.scores
      ? scoresView(prediction.scores, trans)
      : muted(trans.__('scoring…'))
  ];
}

/**
 * The card of one predictor × context's next-cell prediction, with its
 * actions.
 */
export function nextCellCard(
  combo: ICombo,
  target: number,
  slot: IPredictionSlot | null,
  actions: ICardActions,
  trans: TranslationBundle,
  review: { actual: string | null; missing: Missing } | null = null
): VirtualElement {
  const missing = review?.missing ?? { kind: 'predicting' };
  const state =
    slot?.state ?? (missing.kind === 'none' ? 'none' : 'predicting');
  const data = {
    task: 'next-cell',
    'target-step': `${target}`,
    state,
    abstained: slot?.prediction?.abstained ? 'true' : 'false'
  };
  const label = (text: string) => h.div({ className: 'themisto-Label' }, text);
  if (!slot) {
    return card(combo, data, [missingView(missing, trans)], trans);
  } else if (slot.state === 'predicting') {
    return card(combo, data, [writing(slot, trans)], trans);
  } else if (slot.state === 'error') {
    return card(combo, data, [errorView(slot, actions.retry, trans)], trans);
  } else if (!slot.prediction) {
    return card(combo, data, [], trans);
  } else if (slot.prediction.abstained) {
    const muted = h.div({ className: 'themisto-Muted' }, abstainedText(trans));
    return card(combo, data, [muted, footer(slot, actions, trans)], trans);
  }
  const prediction = slot.prediction;
  const code = prediction.answer;
  const actual = review?.actual ?? null;
  const diff =
    actual !== null
      ? cachedDiff(`${prediction.id}:code`, code, actual).segments
      : null;
  return card(
    combo,
    data,
    [
      diff
        ? [
            label(trans.__('Predicted')),
            diffPre(diff, 'a', 'themisto-NextCode', trans),
            label(trans.__('Actual')),
            diffPre(diff, 'b', 'themisto-ActualCode', trans)
          ]
        : textPre(code, 'themisto-NextCode', trans),
      nextCellActions(code, prediction.id, !review, actions, trans),
      prediction.scores ? scoresView(prediction.scores, trans) : null,
      footer(slot, actions, trans)
    ],
    trans
  );
}

/**
 * What can be done with a predicted cell: insert or put it in the notebook
 * (live only), copy it.
 */
function nextCellActions(
  code: string,
  id: string,
  live: boolean,
  actions: ICardActions,
  trans: TranslationBundle
): VirtualElement {
  const copied = actions.copied(id);
  return h.div(
    { className: 'themisto-Actions' },
    live
      ? button(trans.__('Insert below'), () => actions.insertBelow(code), {
          className: 'themisto-Insert',
          title: trans.__('Insert the predicted cell after the last cell run')
        })
      : null,
    live
      ? button(
          trans.__('Replace active cell'),
          () => actions.replaceActive(code),
          {
            className: 'themisto-Replace',
            title: trans.__(
              "Replace the active cell's source with the prediction"
            )
          }
        )
      : null,
    // Copy says it did its work for a moment: nothing else shows that the
    // clipboard changed.
    button(
      copied ? trans.__('Copied') : trans.__('Copy'),
      () => actions.copy(code, id),
      {
        className: `themisto-Copy${copied ? ' themisto-mod-done' : ''}`,
        title: trans.__('Copy the predicted cell')
      }
    )
  );
}
