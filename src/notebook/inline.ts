/**
 * The next-cell prediction offered as inline (ghost text) completion below
 * the last cell run; in any code cell, and where the typed text leaves the
 * prediction, what goes at the cursor as the server's completer writes it
 * from the text before and after the cursor (a model the server names for
 * that: `completer`), shown at the model's first words and streamed on.
 */
import type {
  CompletionHandler,
  IInlineCompletionContext,
  IInlineCompletionItem,
  IInlineCompletionList,
  IInlineCompletionProvider
} from '@jupyterlab/completer';
import { NotebookPanel } from '@jupyterlab/notebook';
import { PromiseDelegate } from '@lumino/coreutils';
import { Debouncer } from '@lumino/polling';
import {
  nullTranslator,
  type TranslationBundle
} from '@jupyterlab/translation';

import { themistoIcon } from '../icon';
import { lastRunIndex } from './cells';
import { shownTarget } from '../live/store';
import { visibleCombos } from '../settings';
import type {
  INotebookLive,
  IPredictionSettings,
  IThemistoLive
} from '../tokens';

/**
 * The latest next-cell prediction to offer for a notebook: that of the
 * first shown predictor × context that answered, for the step after the
 * latest one (an older prediction is about a cell already run).
 */
export function latestNextCell(
  store: INotebookLive | null,
  live: Pick<IThemistoLive, 'predictors'>,
  settings: IPredictionSettings
): string | null {
  if (!store) {
    return null;
  }
  const options = settings.settings;
  const target = shownTarget(store, 'next-cell', !options.autoPredict);
  if (target === null || target !== store.lastStep + 1) {
    return null;
  }
  const slots = store.slots('next-cell', target);
  for (const combo of visibleCombos(
    live.predictors,
    store.seenCombos,
    options
  )) {
    const slot = slots.find(
      s => s.predictor === combo.predictor && s.context === combo.context
    );
    const answer = slot?.state === 'done' ? slot.prediction?.answer : null;
    if (answer && answer.trim()) {
      return answer;
    }
  }
  return null;
}

/**
 * Whether the active cell may show the next-cell prediction: the code cell
 * right below the last code cell run (the one that next cell is about), not
 * any empty cell of the notebook.
 */
export function isNextCell(
  panel: Pick<NotebookPanel, 'content'>,
  store: Pick<INotebookLive, 'lastRunCell'> | null
): boolean {
  const notebook = panel.content;
  const last = lastRunIndex(notebook, store?.lastRunCell ?? null);
  return (
    last !== null &&
    notebook.activeCellIndex === last + 1 &&
    notebook.activeCell?.model.type === 'code'
  );
}

/**
 * What to insert at the cursor for a cell's text: the whole prediction in
 * an empty cell, the rest of it while the user types its beginning.
 */
export function ghostText(
  prediction: string,
  text: string,
  offset: number
): string | null {
  if (text.trim() === '') {
    return prediction;
  }
  if (
    offset === text.length &&
    text.length < prediction.length &&
    prediction.startsWith(text)
  ) {
    return prediction.slice(text.length);
  }
  return null;
}

/**
 * Asks the server what goes at the cursor of a cell (`before` and `after`
 * it): the text to insert, or `null`. `signal` aborts the request, which
 * stops the model on the server too; `onText` takes the text so far as the
 * model writes it.
 */
export type CellCompleter = (
  kernelId: string,
  before: string,
  after: string,
  signal: AbortSignal,
  onText: (text: string) => void
) => Promise<string | null>;

/**
 * Milliseconds typing must pause before the completer is asked: every
 * keystroke fetches, and a model call per keystroke would cost for nothing.
 */
export const COMPLETION_PAUSE_MS = 400;

/**
 * The completer asked once typing pauses: a newer keystroke makes the older
 * request answer nothing without asking, and aborts one already sent (the
 * server stops its model at the next token).
 */
export class PausedCompleter {
  constructor(
    private readonly _complete: CellCompleter,
    pause: number = COMPLETION_PAUSE_MS
  ) {
    // Every keystroke's request waits on the one pause, which starts again at
    // each; the requests then see whether a newer one came meanwhile.
    this._pause = new Debouncer<void>(() => undefined, pause);
  }

  /**
   * What goes at `offset` of the typed cell `text`; `null` when nothing is
   * typed before the cursor, a newer keystroke came, the completer has none
   * or failed, or the cell would be `ran`, the cell just run. `onText` takes
   * that text so far as the model writes it, while no newer keystroke came.
   */
  async rest(
    kernelId: string,
    text: string,
    offset: number,
    ran: string | null,
    onText: (rest: string) => void = () => undefined
  ): Promise<string | null> {
    const asked = ++this._asked;
    this._sent?.abort();
    this._sent = null;
    const before = text.slice(0, offset);
    const after = text.slice(offset);
    if (!before.trim()) {
      return null;
    }
    try {
      await this._pause.invoke();
    } catch {
      return null; // disposed
    }
    if (asked !== this._asked) {
      return null;
    }
    const sent = new AbortController();
    this._sent = sent;
    const allowed = (rest: string | null): rest is string =>
      asked === this._asked &&
      !!rest &&
      (before + rest + after).trim() !== ran?.trim();
    try {
      const rest = await this._complete(
        kernelId,
        before,
        after,
        sent.signal,
        partial => {
          if (allowed(partial)) {
            onText(partial);
          }
        }
      );
      return allowed(rest) ? rest : null;
    } catch {
      return null; // a failed or aborted completion shows nothing
    } finally {
      if (this._sent === sent) {
        this._sent = null;
      }
    }
  }

  private readonly _pause: Debouncer<void>;
  private _asked = 0;
  private _sent: AbortController | null = null;
}

/**
 * Offers the predicted next cell as ghost text, and the completer's rest of
 * the cell where the typed text is not the prediction's beginning.
 */
export class NextCellInlineProvider implements IInlineCompletionProvider {
  constructor(
    private readonly _live: IThemistoLive,
    private readonly _settings: IPredictionSettings,
    trans: TranslationBundle = nullTranslator.load('themisto_ext'),
    complete: CellCompleter | null = null
  ) {
    this.name = trans.__('Themisto next cell');
    this._completer = complete ? new PausedCompleter(complete) : null;
  }

  private readonly _completer: PausedCompleter | null;

  readonly identifier = 'themisto-ext:next-cell';
  readonly name: string;
  readonly icon = themistoIcon;

  async fetch(
    request: CompletionHandler.IRequest,
    context: IInlineCompletionContext
  ): Promise<IInlineCompletionList> {
    const widget = context.widget;
    if (
      !(widget instanceof NotebookPanel) ||
      widget.content.activeCell?.model.type !== 'code'
    ) {
      return { items: [] };
    }
    const store = this._live.store(widget.context.path);
    // The cell just run is never offered, whoever predicted it.
    const last = lastRunIndex(widget.content, store?.lastRunCell ?? null);
    const ran =
      last === null
        ? null
        : widget.content.widgets[last].model.sharedModel.getSource();
    if (isNextCell(widget, store)) {
      const prediction = latestNextCell(store, this._live, this._settings);
      const insertText =
        prediction && prediction.trim() !== ran?.trim()
          ? ghostText(prediction, request.text, request.offset)
          : null;
      if (insertText) {
        return { items: [{ insertText }] };
      }
    }
    // any code cell, or typing that leaves the prediction: the completer
    const kernelId = store?.kernelId;
    if (!this._completer || !kernelId || !this._live.predictors?.completer) {
      return { items: [] };
    }
    const completer = this._completer;
    return this._suggestions.offer(onText =>
      completer.rest(kernelId, request.text, request.offset, ran, onText)
    );
  }

  stream(token: string): AsyncGenerator<{ response: IInlineCompletionItem }> {
    return this._suggestions.stream(token);
  }

  private readonly _suggestions = new StreamedSuggestions();
}

/**
 * Suggestions shown at a model's first words and streamed on (JupyterLab's
 * inline completer calls `stream` with the token of an incomplete item).
 */
export class StreamedSuggestions {
  /**
   * The list for `fetch`: once `ask` hands over its first text, that text as
   * an incomplete item; when it answers first, the answer (none: empty).
   */
  async offer(
    ask: (onText: (text: string) => void) => Promise<string | null>
  ): Promise<IInlineCompletionList> {
    this._streams.clear(); // an older suggestion's stream is nobody's now
    const written = new Written();
    const changed = written.changed; // (before asking: it may write at once)
    const answer = ask(text => written.set(text));
    const first = await Promise.race([answer, changed]);
    if (first === undefined && written.text) {
      const token = String(++this._tokens);
      this._streams.set(token, { written, answer });
      return {
        items: [{ insertText: written.text, isIncomplete: true, token }]
      };
    }
    const rest = await answer;
    return { items: rest ? [{ insertText: rest }] : [] };
  }

  /**
   * The rest of a suggestion `offer` showed at its first words: its text so
   * far each time it grows, then the answer (empty: withdrawn).
   */
  async *stream(
    token: string
  ): AsyncGenerator<{ response: IInlineCompletionItem }> {
    const streamed = this._streams.get(token);
    this._streams.delete(token);
    if (!streamed) {
      return;
    }
    const { written, answer } = streamed;
    let shown = written.text;
    for (;;) {
      // (it may have grown while the last update was being shown)
      if (written.text !== shown) {
        shown = written.text;
        yield { response: { insertText: shown, isIncomplete: true } };
        continue;
      }
      const ended = await Promise.race([
        answer.then(rest => ({ rest })),
        written.changed.then(() => null)
      ]);
      if (ended) {
        if ((ended.rest ?? '') !== shown) {
          yield {
            response: { insertText: ended.rest ?? '', isIncomplete: false }
          };
        }
        return;
      }
    }
  }

  private readonly _streams = new Map<
    string,
    { written: Written; answer: Promise<string | null> }
  >();
  private _tokens = 0;
}

/**
 * A streamed suggestion's text so far; `changed` settles at its next change.
 */
class Written {
  text = '';

  get changed(): Promise<undefined> {
    return this._next.promise;
  }

  set(text: string): void {
    this.text = text;
    const next = this._next;
    this._next = new PromiseDelegate<undefined>();
    next.resolve(undefined);
  }

  private _next = new PromiseDelegate<undefined>();
}
