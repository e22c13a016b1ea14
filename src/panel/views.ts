/**
 * DOM views of the prediction panel's cards and scores.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type { LiveStep, PromptText, Scores } from '../api/records';
import {
  comboLabel,
  formatScore,
  formatSeconds,
  SCORE_LABELS,
  scoreTitle
} from '../live/scoreformat';
import { errorReason, isMissed } from '../live/reasons';
import type { ICombo, IPredictionSlot } from '../live/types';
import { diffText, type IDiffResult, type IDiffSegment } from './diff';
import { button, h } from './dom';
import { summarizeTraceback } from './traceback';

export { comboLabel, SHORT_SCORE } from '../live/scoreformat';

/**
 * Characters of one text shown in a card; the rest is cut with a note so a
 * huge output cannot slow the page.
 */
export const DISPLAY_CHARS = 20000;

/**
 * The "Show prompt" disclosure of a card: prompts are not on the stream, so
 * one is fetched when it is first opened.
 */
export interface IPromptActions {
  /**
   * The prompt of a prediction (`null` when it has none).
   */
  loadPrompt(predictionId: string): Promise<PromptText | null>;
  /**
   * Whether a prediction's prompt is shown (kept across redraws).
   */
  isPromptOpen(predictionId: string): boolean;
  setPromptOpen(predictionId: string, open: boolean): void;
}

/**
 * What the cards' buttons do.
 */
export interface ICardActions extends IPromptActions {
  insertBelow(text: string): void;
  replaceActive(text: string): void;
  copy(text: string): void;
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
): HTMLElement {
  const node = h('div', { class: 'themisto-Scores' });
  for (const { name, short } of SCORE_LABELS) {
    const long = scoreTitle(name, trans);
    node.dataset[name.replace(/_(\w)/g, (_, c: string) => c.toUpperCase())] =
      scores ? String(scores[name]) : '';
    node.append(
      h(
        'span',
        { class: 'themisto-Score', title: long, 'data-score': name },
        h('span', { class: 'themisto-Score-name' }, short),
        ' ',
        h(
          'span',
          { class: 'themisto-Score-value' },
          formatScore(scores?.[name])
        )
      )
    );
  }
  return node;
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
): HTMLPreElement {
  const pre = h('pre', { class: `themisto-Text ${cls}` });
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
    if (segment.op === 'equal') {
      pre.append(text);
    } else {
      pre.append(
        h(
          side === 'a' ? 'del' : 'ins',
          { class: `themisto-Diff-${segment.op}` },
          text
        )
      );
    }
  }
  if (budget <= 0) {
    pre.append(cutNote(trans));
  }
  return pre;
}

function cutNote(trans: TranslationBundle): HTMLElement {
  return h(
    'span',
    { class: 'themisto-Cut' },
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
): HTMLPreElement {
  const cut = text.length > DISPLAY_CHARS;
  return h(
    'pre',
    { class: `themisto-Text ${cls}` },
    cut ? text.slice(0, DISPLAY_CHARS) : text,
    cut && cutNote(trans)
  );
}

function cardShell(
  combo: ICombo,
  task: string,
  target: number,
  state: string
): HTMLElement {
  return h(
    'section',
    {
      class: 'themisto-Card',
      'data-task': task,
      'data-predictor': combo.predictor,
      'data-context': combo.context,
      'data-target-step': target,
      'data-state': state
    },
    h('header', { class: 'themisto-Card-title' }, comboLabel(combo))
  );
}

function errorView(
  slot: IPredictionSlot,
  retry: ICardActions['retry'],
  trans: TranslationBundle
): HTMLElement {
  const error = slot.prediction?.error;
  const missed = isMissed(error);
  return h(
    'div',
    {
      class: missed ? 'themisto-Missed' : 'themisto-Error',
      role: missed ? 'status' : 'alert'
    },
    h(
      'div',
      { class: 'themisto-Error-message' },
      error
        ? trans.__('No prediction: %1', errorReason(error, trans))
        : trans.__('The prediction failed.')
    ),
    !missed &&
      retry &&
      button(trans.__('Retry'), () => retry(slot), { class: 'themisto-Retry' })
  );
}

function missingView(missing: Missing, trans: TranslationBundle): HTMLElement {
  return missing.kind === 'predicting'
    ? predicting(trans)
    : h(
        'div',
        { class: 'themisto-Missed', role: 'status' },
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
): HTMLElement | null {
  if (!step.error) {
    return null;
  }
  const summary = summarizeTraceback(step.output, step.error.ename);
  const error =
    summary?.error ??
    `${step.error.ename}${step.error.evalue ? `: ${step.error.evalue}` : ''}`;
  return h(
    'div',
    { class: 'themisto-Traceback', 'aria-label': trans.__('Error') },
    h('pre', { class: 'themisto-Text themisto-Traceback-error' }, error),
    summary?.frame
      ? h(
          'pre',
          { class: 'themisto-Text themisto-Traceback-frame' },
          summary.frame
        )
      : null
  );
}

/**
 * A button that says it did its work for a moment (Copy: nothing else
 * shows that the clipboard changed).
 */
export function flashButton(node: HTMLButtonElement, text: string): void {
  const label = node.dataset.label ?? node.textContent ?? '';
  node.dataset.label = label;
  node.textContent = text;
  node.classList.add('themisto-mod-done');
  window.setTimeout(() => {
    node.textContent = label;
    node.classList.remove('themisto-mod-done');
  }, 1500);
}

function predicting(trans: TranslationBundle): HTMLElement {
  return h(
    'div',
    { class: 'themisto-Predicting', 'aria-live': 'polite' },
    trans.__('predicting…')
  );
}

/**
 * A prediction being written: the model's answer so far (streamed).
 */
function writing(slot: IPredictionSlot, trans: TranslationBundle): HTMLElement {
  if (!slot.partial) {
    return predicting(trans);
  }
  return h(
    'div',
    { class: 'themisto-Writing', 'aria-live': 'polite' },
    h('div', { class: 'themisto-Label' }, trans.__('Predicting…')),
    textPre(slot.partial, 'themisto-Partial', trans)
  );
}

function meta(slot: IPredictionSlot, trans: TranslationBundle): HTMLElement {
  const p = slot.prediction;
  if (!p) {
    return h('div', { class: 'themisto-Card-meta' });
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
  return h('div', { class: 'themisto-Card-meta' }, parts.join(' · '));
}

/**
 * The "Show prompt" disclosure of a prediction: the system and user prompt
 * texts, fetched when first opened.
 */
export function promptView(
  predictionId: string,
  actions: IPromptActions,
  trans: TranslationBundle
): HTMLDetailsElement {
  const body = h('div', { class: 'themisto-Prompt-body' });
  const details = h(
    'details',
    { class: 'themisto-Prompt' },
    h('summary', { class: 'themisto-Prompt-summary' }, trans.__('Show prompt')),
    body
  );
  let requested = false;
  const load = (): void => {
    if (requested) {
      return;
    }
    requested = true;
    body.replaceChildren(
      h('div', { class: 'themisto-Muted' }, trans.__('loading…'))
    );
    actions.loadPrompt(predictionId).then(
      prompt => {
        body.replaceChildren(
          ...(prompt
            ? [
                h('div', { class: 'themisto-Label' }, trans.__('System')),
                textPre(prompt.system, 'themisto-PromptSystem', trans),
                h('div', { class: 'themisto-Label' }, trans.__('User')),
                textPre(prompt.user, 'themisto-PromptUser', trans)
              ]
            : [
                h(
                  'div',
                  { class: 'themisto-Muted' },
                  trans.__('This prediction has no prompt.')
                )
              ])
        );
      },
      (error: unknown) => {
        // Closing and opening again tries again.
        requested = false;
        body.replaceChildren(
          h(
            'div',
            { class: 'themisto-Error', role: 'alert' },
            trans.__(
              'The prompt could not be read: %1',
              error instanceof Error ? error.message : String(error)
            )
          )
        );
      }
    );
  };
  details.addEventListener('toggle', () => {
    actions.setPromptOpen(predictionId, details.open);
    if (details.open) {
      load();
    }
  });
  if (actions.isPromptOpen(predictionId)) {
    details.open = true;
    load();
  }
  return details;
}

/**
 * A card's footer: the model, latency and tokens, and the prompt.
 */
function footer(
  slot: IPredictionSlot,
  actions: IPromptActions,
  trans: TranslationBundle
): HTMLElement[] {
  const p = slot.prediction;
  return p
    ? [meta(slot, trans), promptView(p.id, actions, trans)]
    : [meta(slot, trans)];
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
  missing: Missing = { kind: 'predicting' }
): HTMLElement {
  const state =
    slot?.state ?? (missing.kind === 'none' ? 'none' : 'predicting');
  const card = cardShell(combo, 'output', target, state);
  card.dataset.landed = step ? 'true' : 'false';
  // Made from the cell's text before it ran, and taken when it started.
  card.dataset.speculative = slot?.prediction?.speculative ? 'true' : 'false';
  if (!slot) {
    card.append(missingView(missing, trans));
  } else if (slot.state === 'predicting') {
    card.append(writing(slot, trans));
  } else if (slot.state === 'error') {
    card.append(errorView(slot, actions.retry, trans));
  } else if (slot.prediction) {
    const answer = slot.prediction.answer;
    if (step) {
      const diff = cachedDiff(slot.prediction.id, answer, step.output);
      card.append(
        tracebackView(step, trans) ?? '',
        h('div', { class: 'themisto-Label' }, trans.__('Predicted')),
        answer.trim() === ''
          ? h('div', { class: 'themisto-Muted' }, trans.__('(no output)'))
          : '',
        diffPre(diff.segments, 'a', 'themisto-Predicted', trans),
        h('div', { class: 'themisto-Label' }, trans.__('Actual')),
        diffPre(diff.segments, 'b', 'themisto-Actual', trans),
        slot.prediction.scores
          ? scoresView(slot.prediction.scores, trans)
          : h('div', { class: 'themisto-Muted' }, trans.__('scoring…'))
      );
    } else {
      card.append(
        h('div', { class: 'themisto-Label' }, trans.__('Predicted')),
        textPre(answer, 'themisto-Predicted', trans),
        h(
          'div',
          { class: 'themisto-Muted' },
          trans.__('waiting for the cell to finish…')
        )
      );
    }
    card.append(...footer(slot, actions, trans));
  }
  return card;
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
): HTMLElement {
  const missing = review?.missing ?? { kind: 'predicting' };
  const state =
    slot?.state ?? (missing.kind === 'none' ? 'none' : 'predicting');
  const card = cardShell(combo, 'next-cell', target, state);
  if (!slot) {
    card.append(missingView(missing, trans));
  } else if (slot.state === 'predicting') {
    card.append(writing(slot, trans));
  } else if (slot.state === 'error') {
    card.append(errorView(slot, actions.retry, trans));
  } else if (slot.prediction) {
    const code = slot.prediction.answer;
    const copy: HTMLButtonElement = button(
      trans.__('Copy'),
      () => {
        actions.copy(code);
        flashButton(copy, trans.__('Copied'));
      },
      { class: 'themisto-Copy', title: trans.__('Copy the predicted cell') }
    );
    const actual = review?.actual ?? null;
    if (actual !== null) {
      const diff = cachedDiff(`${slot.prediction.id}:code`, code, actual);
      card.append(
        h('div', { class: 'themisto-Label' }, trans.__('Predicted')),
        diffPre(diff.segments, 'a', 'themisto-NextCode', trans),
        h('div', { class: 'themisto-Label' }, trans.__('Actual')),
        diffPre(diff.segments, 'b', 'themisto-ActualCode', trans)
      );
    } else {
      card.append(textPre(code, 'themisto-NextCode', trans));
    }
    card.append(
      h(
        'div',
        { class: 'themisto-Actions' },
        !review &&
          button(trans.__('Insert below'), () => actions.insertBelow(code), {
            class: 'themisto-Insert',
            title: trans.__('Insert the predicted cell after the last cell run')
          }),
        !review &&
          button(
            trans.__('Replace active cell'),
            () => actions.replaceActive(code),
            {
              class: 'themisto-Replace',
              title: trans.__(
                "Replace the active cell's source with the prediction"
              )
            }
          ),
        copy
      ),
      slot.prediction.scores ? scoresView(slot.prediction.scores, trans) : '',
      ...footer(slot, actions, trans)
    );
  }
  return card;
}
