/**
 * Edits of the active notebook asked for from the panel.
 */
import type { Cell } from '@jupyterlab/cells';
import {
  type Notebook,
  NotebookActions,
  type NotebookPanel
} from '@jupyterlab/notebook';

/**
 * Insert a code cell with `source` below the active cell and select it.
 */
export function insertCellBelow(panel: NotebookPanel, source: string): void {
  const notebook = panel.content;
  NotebookActions.insertBelow(notebook);
  if (notebook.activeCell?.model.type !== 'code') {
    NotebookActions.changeCellType(notebook, 'code');
  }
  notebook.activeCell?.model.sharedModel.setSource(source);
}

/**
 * Replace the active cell's source.
 */
export function replaceActiveCell(panel: NotebookPanel, source: string): void {
  panel.content.activeCell?.model.sharedModel.setSource(source);
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
