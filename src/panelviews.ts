/**
 * DOM views of the prediction panel's cards, scores and scoreboard.
 */
import { button, h } from './dom';
import { diffText, IDiffResult, IDiffSegment } from './diff';
import { IScores, IStep, ScoreName } from './livemodel';
import { IPredictionSlot, IScoreRow } from './livestore';
import { formatScore, formatSeconds, SCORE_LABELS } from './scores';
import { ICombo } from './settings';

/**
 * Characters of one text shown in a card; the rest is cut with a note so a
 * huge output cannot slow the page.
 */
export const DISPLAY_CHARS = 20000;

/**
 * What the cards' buttons do.
 */
export interface ICardActions {
  insertBelow(text: string): void;
  replaceActive(text: string): void;
  copy(text: string): void;
  /**
   * Ask again; `null` when a retry would not predict this target any more.
   */
  retry: ((slot: IPredictionSlot | null) => void) | null;
}

/**
 * `predictor · context`.
 */
export function comboLabel(combo: ICombo): string {
  return `${combo.predictor} · ${combo.context}`;
}

/**
 * The three scores as labelled chips, with the values in `data-*`.
 */
export function scoresView(scores: IScores | null): HTMLElement {
  const node = h('div', { class: 'themisto-Scores' });
  for (const { name, short, long } of SCORE_LABELS) {
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
  cls: string
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
    pre.append(h('span', { class: 'themisto-Cut' }, '\n[… cut for display]'));
  }
  return pre;
}

/**
 * A plain text `<pre>`, cut for display.
 */
export function textPre(text: string, cls: string): HTMLPreElement {
  const cut = text.length > DISPLAY_CHARS;
  return h(
    'pre',
    { class: `themisto-Text ${cls}` },
    cut ? text.slice(0, DISPLAY_CHARS) : text,
    cut && h('span', { class: 'themisto-Cut' }, '\n[… cut for display]')
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
  retry: ICardActions['retry']
): HTMLElement {
  const error = slot.prediction?.error;
  return h(
    'div',
    { class: 'themisto-Error', role: 'alert' },
    h(
      'div',
      { class: 'themisto-Error-message' },
      error ? `${error.type}: ${error.message}` : 'The prediction failed.'
    ),
    retry && button('Retry', () => retry(slot), { class: 'themisto-Retry' })
  );
}

function predicting(): HTMLElement {
  return h(
    'div',
    { class: 'themisto-Predicting', 'aria-live': 'polite' },
    'predicting…'
  );
}

function meta(slot: IPredictionSlot): HTMLElement | null {
  const p = slot.prediction;
  if (!p) {
    return null;
  }
  const parts = [p.model || p.predictor, formatSeconds(p.latency)];
  if (p.prompt_tokens !== null) {
    parts.push(`${p.prompt_tokens} prompt tokens`);
  }
  if (p.cached_tokens) {
    parts.push(`${p.cached_tokens} cached`);
  }
  return h('div', { class: 'themisto-Card-meta' }, parts.join(' · '));
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
  step: IStep | null,
  actions: Pick<ICardActions, 'retry'>
): HTMLElement {
  const state = slot?.state ?? 'predicting';
  const card = cardShell(combo, 'output', target, state);
  card.dataset.landed = step ? 'true' : 'false';
  if (!slot || slot.state === 'predicting') {
    card.append(predicting());
  } else if (slot.state === 'error') {
    card.append(errorView(slot, actions.retry));
  } else if (slot.prediction) {
    const answer = slot.prediction.answer;
    if (step) {
      const diff = cachedDiff(slot.prediction.id, answer, step.output);
      card.append(
        h('div', { class: 'themisto-Label' }, 'Predicted'),
        diffPre(diff.segments, 'a', 'themisto-Predicted'),
        h('div', { class: 'themisto-Label' }, 'Actual'),
        diffPre(diff.segments, 'b', 'themisto-Actual'),
        slot.prediction.scores
          ? scoresView(slot.prediction.scores)
          : h('div', { class: 'themisto-Muted' }, 'scoring…')
      );
    } else {
      card.append(
        h('div', { class: 'themisto-Label' }, 'Predicted'),
        textPre(answer, 'themisto-Predicted'),
        h('div', { class: 'themisto-Muted' }, 'waiting for the cell to finish…')
      );
    }
    card.append(meta(slot) ?? '');
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
  actions: ICardActions
): HTMLElement {
  const state = slot?.state ?? 'predicting';
  const card = cardShell(combo, 'next-cell', target, state);
  if (!slot || slot.state === 'predicting') {
    card.append(predicting());
  } else if (slot.state === 'error') {
    card.append(errorView(slot, actions.retry));
  } else if (slot.prediction) {
    const code = slot.prediction.answer;
    card.append(
      textPre(code, 'themisto-NextCode'),
      h(
        'div',
        { class: 'themisto-Actions' },
        button('Insert below', () => actions.insertBelow(code), {
          class: 'themisto-Insert',
          title: 'Insert the predicted cell below the active cell'
        }),
        button('Replace active cell', () => actions.replaceActive(code), {
          class: 'themisto-Replace',
          title: "Replace the active cell's source with the prediction"
        }),
        button('Copy', () => actions.copy(code), {
          class: 'themisto-Copy',
          title: 'Copy the predicted cell'
        })
      ),
      slot.prediction.scores ? scoresView(slot.prediction.scores) : '',
      meta(slot) ?? ''
    );
  }
  return card;
}

/**
 * The session scoreboard: running means per predictor × context, grouped
 * by task (one column of labels keeps it readable in a narrow side bar).
 */
export function scoreboard(rows: IScoreRow[]): HTMLElement {
  if (rows.length === 0) {
    return h(
      'p',
      { class: 'themisto-Muted' },
      'No scored prediction yet: scores appear when a predicted cell finishes.'
    );
  }
  const head = h(
    'tr',
    {},
    h('th', { scope: 'col' }, 'Predictor · context'),
    h(
      'th',
      {
        scope: 'col',
        class: 'themisto-Num themisto-Col-n',
        title: 'Scored predictions'
      },
      'n'
    ),
    ...SCORE_LABELS.map(({ name, long }) =>
      h(
        'th',
        { scope: 'col', class: 'themisto-Num themisto-Col-score', title: long },
        SHORT_SCORE[name]
      )
    )
  );
  const body = h('tbody');
  for (const task of ['output', 'next-cell'] as const) {
    const group = rows.filter(row => row.task === task);
    if (group.length === 0) {
      continue;
    }
    body.append(
      h(
        'tr',
        { class: 'themisto-Group' },
        h(
          'th',
          { scope: 'rowgroup', colspan: 5 },
          task === 'output' ? 'Output' : 'Next cell'
        )
      )
    );
    for (const row of group) {
      const mean = row.means.mean();
      const label = comboLabel(row);
      body.append(
        h(
          'tr',
          {
            'data-task': row.task,
            'data-predictor': row.predictor,
            'data-context': row.context
          },
          h('th', { scope: 'row', title: label }, label),
          h('td', { class: 'themisto-Num' }, String(row.means.count)),
          ...SCORE_LABELS.map(({ name }) =>
            h('td', { class: 'themisto-Num' }, formatScore(mean?.[name]))
          )
        )
      );
    }
  }
  return h(
    'table',
    { class: 'themisto-Table themisto-Scoreboard' },
    h('thead', {}, head),
    body
  );
}

/**
 * Short score names for narrow columns.
 */
export const SHORT_SCORE: Record<ScoreName, string> = {
  exact_match: 'EM',
  rouge_l: 'RL',
  chrf: 'ChrF'
};
