/**
 * The notebook commands (palette and the Themisto main menu of
 * schema/commands.json): export, predict now, toggle recording.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { type ICommandPalette, Notification } from '@jupyterlab/apputils';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { TranslationBundle } from '@jupyterlab/translation';

import { exportFilename } from './api/client';
import { toggleNotebookRecording } from './notebook/recording';
import type { IThemistoClient, IThemistoLive } from './tokens';

/**
 * Command ids (also used by the main menu entries in schema/commands.json).
 */
export namespace CommandIDs {
  export const exportTrajectory = 'themisto:export-trajectory';
  export const predictNextCell = 'themisto:predict-next-cell';
  export const toggleRecording = 'themisto:toggle-recording';
  export const openPanel = 'themisto:open-prediction-panel';
}

export const PALETTE_CATEGORY = 'Themisto';

/**
 * The commands act on the active notebook and take no arguments.
 */
export const NO_ARGS = { args: { type: 'object' as const, properties: {} } };

/**
 * Start a browser download of a URL (the browser streams it to disk).
 */
export function download(url: string, filename: string): void {
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  link.rel = 'noopener';
  link.style.display = 'none';
  document.body.appendChild(link);
  link.click();
  link.remove();
}

/**
 * The export URL of a notebook's trajectories: those of its kernel (every
 * restart included) when it has one, as the server records the kernel's
 * own path for a notebook; else those recorded under its path.
 */
async function exportUrl(
  client: IThemistoClient,
  panel: NotebookPanel
): Promise<string> {
  const kernel = panel.sessionContext.session?.kernel?.id;
  const filename = exportFilename(panel.context.path);
  if (kernel) {
    const trajectories = await client.listTrajectories({ kernel });
    if (trajectories.length > 0) {
      return client.exportUrl(
        { trajectories: trajectories.map(t => t.id) },
        filename
      );
    }
  }
  return client.exportUrl({ notebook: panel.context.path }, filename);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Register the notebook commands: export, predict now, toggle recording.
 */
export function addCommands(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  client: IThemistoClient,
  live: IThemistoLive,
  palette: ICommandPalette | null,
  trans: TranslationBundle
): void {
  const current = (): NotebookPanel | null => tracker.currentWidget;
  const hasNotebook = (): boolean => current() !== null;
  const hasKernel = (): boolean => !!current()?.sessionContext.session?.kernel;

  app.commands.addCommand(CommandIDs.exportTrajectory, {
    label: trans.__("Export This Notebook's Trajectory"),
    caption: trans.__("Download the notebook's recorded trajectories as JSONL"),
    describedBy: NO_ARGS,
    isEnabled: hasNotebook,
    execute: async () => {
      const panel = current();
      if (!panel) {
        return;
      }
      const filename = exportFilename(panel.context.path);
      try {
        download(await exportUrl(client, panel), filename);
      } catch (error) {
        Notification.error(
          trans.__(
            'Themisto could not export the trajectory: %1',
            errorText(error)
          ),
          { autoClose: 5000 }
        );
      }
    }
  });

  app.commands.addCommand(CommandIDs.predictNextCell, {
    label: trans.__('Predict Next Cell Now'),
    caption: trans.__(
      "Ask Themisto's predictors for the next cell of this notebook"
    ),
    describedBy: NO_ARGS,
    isEnabled: hasKernel,
    execute: async () => {
      const panel = current();
      const store = panel ? live.store(panel.context.path) : null;
      try {
        await live.requestPrediction('next-cell', store ? { store } : {});
      } catch (error) {
        Notification.error(
          trans.__(
            'Themisto could not ask for a prediction: %1',
            errorText(error)
          ),
          { autoClose: 5000 }
        );
      }
    }
  });

  app.commands.addCommand(CommandIDs.toggleRecording, {
    label: trans.__('Toggle Recording'),
    caption: trans.__("Switch Themisto's recording of this notebook's kernel"),
    describedBy: NO_ARGS,
    isEnabled: hasKernel,
    execute: async () => {
      const panel = current();
      if (!panel) {
        return;
      }
      try {
        const recording = await toggleNotebookRecording(panel, client, live);
        Notification.info(
          recording
            ? trans.__('Themisto recording on for %1', panel.title.label)
            : trans.__('Themisto recording off for %1', panel.title.label),
          { autoClose: 3000 }
        );
      } catch (error) {
        Notification.error(
          trans.__('Themisto could not switch recording: %1', errorText(error)),
          { autoClose: 5000 }
        );
      }
    }
  });

  for (const command of [
    CommandIDs.exportTrajectory,
    CommandIDs.predictNextCell,
    CommandIDs.toggleRecording
  ]) {
    palette?.addItem({ command, category: PALETTE_CATEGORY });
  }
}
