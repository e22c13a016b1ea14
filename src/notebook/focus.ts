/**
 * The keyboard focus belongs to the notebook: after any action taken from
 * the panel or the status bar, it goes back there (else Enter would press
 * the panel's button again, Shift+Enter would toggle recording).
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { INotebookTracker } from '@jupyterlab/notebook';

/**
 * Focus the active notebook (its active cell's editor in edit mode).
 */
export function focusNotebook(
  shell: JupyterFrontEnd.IShell,
  tracker: INotebookTracker
): void {
  const panel = tracker.currentWidget;
  if (panel && !panel.isDisposed) {
    shell.activateById(panel.id);
    panel.content.activate();
  }
}
