/**
 * The notebook commands (palette and the Themisto main menu of
 * schema/commands.json): export, predict now, toggle recording.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { type ICommandPalette, Notification } from '@jupyterlab/apputils';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { TranslationBundle } from '@jupyterlab/translation';

import { exportFilename } from './api/client';
import { freePath, saveStream } from './notebook/export';
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
  export const showStep = 'themisto:show-step';
  export const reviewPrevious = 'themisto:review-previous-step';
  export const reviewNext = 'themisto:review-next-step';
  export const reviewLive = 'themisto:review-live';
  export const reviewActiveCell = 'themisto:review-active-cell';
}

export const PALETTE_CATEGORY = 'Themisto';

/**
 * The commands act on the active notebook and take no arguments.
 */
export const NO_ARGS = { args: { type: 'object' as const, properties: {} } };

/**
 * What a notebook's export holds: the trajectories of its kernel (every
 * restart included) when it has one, as the server records the kernel's
 * own path for a notebook; else those recorded under its path.
 */
async function exportSelection(
  client: IThemistoClient,
  panel: NotebookPanel
): Promise<{ trajectories: string[] } | { notebook: string }> {
  const kernel = panel.sessionContext.session?.kernel?.id;
  if (kernel) {
    const trajectories = await client.listTrajectories({ kernel });
    if (trajectories.length > 0) {
      return { trajectories: trajectories.map(t => t.id) };
    }
  }
  return { notebook: panel.context.path };
}

/**
 * Export a notebook's trajectory next to it and show it in the file
 * browser; returns the file's path.
 */
async function exportBeside(
  app: JupyterFrontEnd,
  client: IThemistoClient,
  panel: NotebookPanel
): Promise<string> {
  const contents = app.serviceManager.contents;
  const filename = exportFilename(panel.context.path);
  const response = await client.openExport(
    await exportSelection(client, panel),
    filename
  );
  const path = await freePath(contents, panel.context.path, filename);
  await saveStream(contents, path, response);
  if (app.commands.hasCommand('filebrowser:go-to-path')) {
    await app.commands.execute('filebrowser:go-to-path', { path });
  }
  return path;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Say that a command failed (for a while: the user may be typing).
 */
function failed(message: string): void {
  Notification.error(message, { autoClose: 5000 });
}

/**
 * Export the active notebook's trajectories beside it.
 */
function addExportCommand(
  app: JupyterFrontEnd,
  client: IThemistoClient,
  current: () => NotebookPanel | null,
  hasNotebook: () => boolean,
  trans: TranslationBundle
): void {
  app.commands.addCommand(CommandIDs.exportTrajectory, {
    label: trans.__("Export This Notebook's Trajectory"),
    caption: trans.__(
      "Save the notebook's recorded trajectories as JSONL next to it"
    ),
    describedBy: NO_ARGS,
    isEnabled: hasNotebook,
    execute: async () => {
      const panel = current();
      if (!panel) {
        return;
      }
      try {
        const path = await exportBeside(app, client, panel);
        Notification.success(
          trans.__("Themisto exported this notebook's trajectory to %1", path),
          { autoClose: 5000 }
        );
      } catch (error) {
        failed(
          trans.__(
            'Themisto could not export the trajectory: %1',
            errorText(error)
          )
        );
      }
    }
  });
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

  addExportCommand(app, client, current, hasNotebook, trans);

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
        failed(
          trans.__(
            'Themisto could not ask for a prediction: %1',
            errorText(error)
          )
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
        failed(
          trans.__('Themisto could not switch recording: %1', errorText(error))
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
