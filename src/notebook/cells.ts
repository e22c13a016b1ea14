/**
 * Edits of a notebook asked for from the panel, and where they go: the
 * predicted next cell belongs right after the last code cell run (after
 * Shift+Enter the active cell is often the one below it, or a markdown cell).
 */
import type { Cell } from '@jupyterlab/cells';
import {
  type Notebook,
  NotebookActions,
  type NotebookPanel
} from '@jupyterlab/notebook';

import type { ICellSource } from '../live/cellmatch';

/**
 * The index of the last code cell run, when the notebook still has it.
 */
export function lastRunIndex(
  notebook: Pick<Notebook, 'widgets'>,
  cellId: string | null
): number | null {
  if (cellId === null) {
    return null;
  }
  const index = notebook.widgets.findIndex(cell => cell.model.id === cellId);
  return index >= 0 && notebook.widgets[index].model.type === 'code'
    ? index
    : null;
}

function isEmptyCode(cell: Cell | undefined): boolean {
  return (
    !!cell &&
    cell.model.type === 'code' &&
    cell.model.sharedModel.getSource().trim() === ''
  );
}

/**
 * The cell that may show the next-cell prediction as ghost text: the empty
 * code cell right below the last cell run; `null` when there is none.
 */
export function ghostCellIndex(
  notebook: Pick<Notebook, 'widgets'>,
  lastRunCellId: string | null
): number | null {
  const last = lastRunIndex(notebook, lastRunCellId);
  if (last === null || !isEmptyCode(notebook.widgets[last + 1])) {
    return null;
  }
  return last + 1;
}

/**
 * Put `source` in a code cell right after the last cell run (the empty code
 * cell already there, else a new one; after the active cell when no cell
 * ran) and make it the active cell.
 */
export function insertAfterLastRun(
  panel: NotebookPanel,
  source: string,
  lastRunCellId: string | null
): void {
  const notebook = panel.content;
  const last = lastRunIndex(notebook, lastRunCellId);
  if (last !== null) {
    notebook.activeCellIndex = last;
  }
  const below = notebook.widgets[notebook.activeCellIndex + 1];
  if (last !== null && isEmptyCode(below)) {
    notebook.activeCellIndex = last + 1;
  } else {
    NotebookActions.insertBelow(notebook);
    if (notebook.activeCell?.model.type !== 'code') {
      NotebookActions.changeCellType(notebook, 'code');
    }
  }
  notebook.deselectAll();
  notebook.activeCell?.model.sharedModel.setSource(source);
  notebook.mode = 'command';
}

/**
 * Replace the active cell's source.
 */
export function replaceActiveCell(panel: NotebookPanel, source: string): void {
  panel.content.activeCell?.model.sharedModel.setSource(source);
}

/**
 * The notebook's code cells, their ids and sources (for
 * `INotebookLive.recognize`).
 */
export function codeCells(notebook: Pick<Notebook, 'widgets'>): ICellSource[] {
  return notebook.widgets
    .filter(cell => cell.model.type === 'code')
    .map(cell => ({
      id: cell.model.id,
      source: cell.model.sharedModel.getSource()
    }));
}

/**
 * Whether a notebook's frontier is right after a cell: no code cell below
 * it, or the first code cell below it is empty. There the next cell is new
 * code worth predicting; elsewhere it is written already, and running the
 * cells in order (Run All, Shift+Enter down the notebook) needs no guess of
 * it. Unknown cells (none run yet, or gone) count as the frontier.
 */
export function isFrontier(
  notebook: Pick<Notebook, 'widgets'>,
  cellId: string | null
): boolean {
  const cells = notebook.widgets;
  const at = cellId === null ? -1 : cells.findIndex(c => c.model.id === cellId);
  if (at < 0) {
    return true;
  }
  const next = cells.slice(at + 1).find(c => c.model.type === 'code');
  return !next || next.model.sharedModel.getSource().trim() === '';
}

/**
 * The cell widget with a given model id, if the notebook has it.
 */
export function findCell(notebook: Notebook, cellId: string): Cell | null {
  return notebook.widgets.find(cell => cell.model.id === cellId) ?? null;
}

/**
 * The source of the cell with a given id.
 */
export function cellSource(
  panel: NotebookPanel,
  cellId: string
): string | null {
  return findCell(panel.content, cellId)?.model.sharedModel.getSource() ?? null;
}
