/**
 * The class view: a roster of every user's notebooks (cells run, errors,
 * time active, last activity, prediction scores), sortable and filterable by
 * notebook path and time range, with a drill-down that replays one student's
 * notebook read-only in the prediction panel and an export of the selection
 * in the benchmark format. Its data is `GET themisto/api/class`.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { Debouncer } from '@lumino/polling';
import { h, VirtualDOM, type VirtualElement } from '@lumino/virtualdom';
import { Widget } from '@lumino/widgets';

import type { ClassPage, NotebookRow } from '../api/records';
import { attrs, button } from '../dom';
import type { IThemistoClient } from '../tokens';
import {
  duration,
  INITIAL_STATE,
  type IRosterState,
  outputScore,
  PAGE_ROWS,
  rosterQuery,
  type RosterColumn,
  rowKey,
  scoredPredictors,
  sortBy
} from './roster';

export interface IClassActions {
  /** Replay a user's notebook in the prediction panel. */
  open(row: NotebookRow): Promise<void>;
  /** Export these rows' trajectories; resolves to where it was saved. */
  exportRows(rows: NotebookRow[]): Promise<string>;
}

export class ClassView extends Widget {
  constructor(
    private readonly _client: IThemistoClient,
    private readonly _actions: IClassActions,
    private readonly _trans: TranslationBundle
  ) {
    super();
    this.addClass('themisto-ClassView');
    this._refetch = new Debouncer(() => this.refresh(), 300);
  }

  /**
   * Read the page the state asks for, then draw it.
   */
  async refresh(): Promise<void> {
    const asked = ++this._asked;
    this._status = 'loading';
    this.update();
    try {
      const page = await this._client.getClass(rosterQuery(this._state));
      if (asked === this._asked) {
        this._page = page;
        this._status = 'ready';
        this._error = '';
      }
    } catch (error) {
      if (asked === this._asked) {
        this._status = 'error';
        this._error = error instanceof Error ? error.message : String(error);
      }
    }
    this.update();
  }

  dispose(): void {
    this._refetch.dispose();
    super.dispose();
  }

  protected onUpdateRequest(): void {
    this.node.dataset.status = this._status;
    VirtualDOM.render(this._render(), this.node);
  }

  private _set(change: Partial<IRosterState>, debounce = false): void {
    this._state = { ...this._state, ...change };
    if (debounce) {
      void this._refetch.invoke();
    } else {
      void this.refresh();
    }
  }

  private _render(): VirtualElement[] {
    const trans = this._trans;
    const page = this._page;
    const rows = page?.rows ?? [];
    const predictors = scoredPredictors(rows);
    const predictor = this._state.predictor || predictors[0] || '';
    const opted_out = page?.opted_out.length
      ? h.p(
          {
            className: 'themisto-ClassView-opted_out',
            dataset: { 'themisto-opted-out': page.opted_out.join(',') }
          },
          trans.__(
            'Opted out (nothing recorded or shown): %1',
            page.opted_out.join(', ')
          )
        )
      : null;
    return [
      h.h2({ className: 'themisto-ClassView-title' }, trans.__('Class')),
      this._filters(rows, predictors, predictor),
      this._summary(page, rows),
      opted_out,
      this._table(rows, predictor),
      this._pager(page)
    ].filter((e): e is VirtualElement => e !== null);
  }

  /**
   * The filters (notebook, dates, whose scores), Refresh and Export.
   */
  private _filters(
    rows: NotebookRow[],
    predictors: string[],
    predictor: string
  ): VirtualElement {
    const trans = this._trans;
    const state = this._state;
    const input = (
      name: string,
      type: string,
      value: string,
      label: string,
      change: (value: string) => void
    ): VirtualElement =>
      h.label(
        { className: 'themisto-ClassView-filter' },
        label,
        h.input({
          ...attrs({ type, value, 'data-themisto-class-filter': name }),
          oninput: (event: Event) =>
            change((event.target as HTMLInputElement).value)
        })
      );
    return h.div(
      { className: 'themisto-ClassView-filters' },
      input('notebook', 'search', state.notebook, trans.__('Notebook'), v =>
        this._set({ notebook: v, offset: 0 }, true)
      ),
      input('from', 'date', state.from, trans.__('Active from'), v =>
        this._set({ from: v, offset: 0 })
      ),
      input('to', 'date', state.to, trans.__('to'), v =>
        this._set({ to: v, offset: 0 })
      ),
      predictors.length > 1
        ? h.label(
            { className: 'themisto-ClassView-filter' },
            trans.__('Scores of'),
            h.select(
              {
                dataset: { 'themisto-class-filter': 'predictor' },
                onchange: (event: Event) =>
                  this._set({
                    predictor: (event.target as HTMLSelectElement).value
                  })
              },
              ...predictors.map(p =>
                h.option(
                  { ...attrs({ value: p, selected: p === predictor }) },
                  p
                )
              )
            )
          )
        : null,
      button(trans.__('Refresh'), () => void this.refresh()),
      button(
        trans.__('Export selected (%1)', this._selected.size),
        () => void this._export(rows),
        {
          className: 'themisto-ClassView-export',
          disabled: this._selected.size === 0 || this._exporting
        }
      )
    );
  }

  /**
   * How many users and notebooks, the rows shown, or why there are none.
   */
  private _summary(
    page: ClassPage | null,
    rows: NotebookRow[]
  ): VirtualElement {
    const trans = this._trans;
    const state = this._state;
    return h.p(
      { className: 'themisto-ClassView-summary' },
      this._status === 'error'
        ? trans.__('The class could not be read: %1', this._error)
        : page
          ? trans.__(
              '%1 users, %2 notebooks; rows %3–%4',
              page.users,
              page.total,
              page.total ? state.offset + 1 : 0,
              state.offset + rows.length
            )
          : trans.__('Reading the class…'),
      this._notice ? ` ${this._notice}` : ''
    );
  }

  private _table(rows: NotebookRow[], predictor: string): VirtualElement {
    const trans = this._trans;
    const state = this._state;
    const head = (column: RosterColumn, label: string): VirtualElement =>
      h.th(
        {
          dataset: {
            sort: column,
            ...(state.sort === column ? { order: state.order } : {})
          },
          title: trans.__('Sort by %1', label),
          onclick: () => {
            this._state = sortBy(this._state, column);
            void this.refresh();
          }
        },
        label
      );
    return h.table(
      { className: 'themisto-ClassView-table' },
      h.thead(
        h.tr(
          h.th(''),
          head('user', trans.__('User')),
          head('notebook_path', trans.__('Notebook')),
          head('cells', trans.__('Cells run')),
          head('errors', trans.__('Errors')),
          head('active_seconds', trans.__('Time active')),
          head('last_at', trans.__('Last activity')),
          head(
            'chrf',
            predictor
              ? trans.__('Output chrF (%1)', predictor)
              : trans.__('Output chrF')
          )
        )
      ),
      h.tbody(...rows.map(row => this._row(row, predictor)))
    );
  }

  /**
   * Replay a notebook in the prediction panel, saying so while it opens.
   */
  private _open(row: NotebookRow): void {
    const trans = this._trans;
    this._notice = trans.__(
      'Opening %1’s %2…',
      row.user,
      row.notebook_path ?? ''
    );
    this.update();
    this._actions.open(row).then(
      () => {
        this._notice = '';
        this.update();
      },
      (error: unknown) => {
        this._notice = trans.__('Could not open it: %1', String(error));
        this.update();
      }
    );
  }

  private _row(row: NotebookRow, predictor: string): VirtualElement {
    const trans = this._trans;
    const key = rowKey(row);
    const score = outputScore(row, predictor);
    const open = (): void => this._open(row);
    return h.tr(
      {
        className: 'themisto-ClassView-row',
        dataset: { user: row.user, notebook: row.notebook_path ?? '' },
        title: trans.__('Replay in the prediction panel'),
        ondblclick: open
      },
      h.td(
        h.input({
          ...attrs({
            type: 'checkbox',
            checked: this._selected.has(key),
            'aria-label': trans.__('Select for export')
          }),
          onchange: (event: Event) => {
            if ((event.target as HTMLInputElement).checked) {
              this._selected.set(key, row);
            } else {
              this._selected.delete(key);
            }
            this.update();
          }
        })
      ),
      h.td(row.user),
      h.td(
        h.a(
          {
            className: 'themisto-ClassView-open',
            href: '#',
            onclick: (event: Event) => {
              event.preventDefault();
              open();
            }
          },
          row.notebook_path ?? trans.__('(no notebook)')
        )
      ),
      h.td({ dataset: { cells: String(row.cells) } }, String(row.cells)),
      h.td(String(row.errors)),
      h.td(duration(row.active_seconds)),
      h.td(
        { title: row.last_at },
        row.last_at ? new Date(row.last_at).toLocaleString() : ''
      ),
      h.td(
        score
          ? {
              title: trans.__(
                'mean chrF of %1 scored output predictions of %2 (1 = the output exactly)',
                score.n,
                score.predictor
              )
            }
          : {},
        score ? `${score.chrf.toFixed(2)} (n=${score.n})` : '—'
      )
    );
  }

  private _pager(page: ClassPage | null): VirtualElement | null {
    if (!page || page.total <= PAGE_ROWS) {
      return null;
    }
    const offset = this._state.offset;
    return h.div(
      { className: 'themisto-ClassView-pager' },
      button(
        this._trans.__('Previous'),
        () => this._set({ offset: Math.max(0, offset - PAGE_ROWS) }),
        { disabled: offset === 0 }
      ),
      button(
        this._trans.__('Next'),
        () => this._set({ offset: offset + PAGE_ROWS }),
        { disabled: offset + PAGE_ROWS >= page.total }
      )
    );
  }

  private async _export(rows: NotebookRow[]): Promise<void> {
    this._exporting = true;
    this.update();
    try {
      const path = await this._actions.exportRows([...this._selected.values()]);
      this._notice = this._trans.__('Exported to %1.', path);
    } catch (error) {
      this._notice = this._trans.__('Export failed: %1', String(error));
    } finally {
      this._exporting = false;
      this.update();
    }
  }

  private _state: IRosterState = { ...INITIAL_STATE };
  private _page: ClassPage | null = null;
  private _status: 'loading' | 'ready' | 'error' = 'loading';
  private _error = '';
  private _notice = '';
  private _asked = 0;
  private _exporting = false;
  private _selected = new Map<string, NotebookRow>();
  private _refetch: Debouncer;
}
