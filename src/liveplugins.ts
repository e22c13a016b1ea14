import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

// These small modules set up signal handlers, commands and the live stream
// at activation, so they are needed at once.
/* eslint-disable jupyter/prefer-lazy-imports */
import { startAutoPredict } from './autopredict';
import { addCommands } from './commands';
import { ThemistoLive } from './live';
import { LiveApi } from './liveapi';
import { PredictionSettings } from './settings';
/* eslint-enable jupyter/prefer-lazy-imports */
import { IPredictionSettings, IThemistoClient, IThemistoLive } from './tokens';

/**
 * Provides the prediction settings (schema/predictions.json).
 */
export const predictionSettingsPlugin: JupyterFrontEndPlugin<PredictionSettings> =
  {
    id: 'themisto-ext:predictions',
    description: 'Provides the settings of the Themisto prediction features.',
    autoStart: true,
    provides: IPredictionSettings,
    optional: [ISettingRegistry],
    activate: (
      app: JupyterFrontEnd,
      registry: ISettingRegistry | null
    ): PredictionSettings => {
      const settings = new PredictionSettings();
      if (registry) {
        registry
          .load(predictionSettingsPlugin.id)
          .then(loaded => {
            settings.update(loaded.composite);
            loaded.changed.connect(() => settings.update(loaded.composite));
          })
          .catch(reason => {
            console.error(
              'Failed to load settings for themisto-ext:predictions.',
              reason
            );
          });
      }
      return settings;
    }
  };

/**
 * Provides the live data of the notebooks (event streams and stores).
 */
export const livePlugin: JupyterFrontEndPlugin<IThemistoLive> = {
  id: 'themisto-ext:live',
  description:
    'Provides live steps, predictions and scores of the active notebook.',
  autoStart: true,
  provides: IThemistoLive,
  requires: [IThemistoClient, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    client: IThemistoClient,
    tracker: INotebookTracker
  ): IThemistoLive =>
    new ThemistoLive({
      api: new LiveApi(app.serviceManager.serverSettings),
      client,
      tracker
    })
};

/**
 * Asks for predictions as cells run when the server does not.
 */
export const autoPredictPlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:auto-predict',
  description:
    'Asks for predictions as cells run when the server does not predict by itself.',
  autoStart: true,
  requires: [IThemistoLive, IPredictionSettings, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    live: IThemistoLive,
    settings: PredictionSettings,
    tracker: INotebookTracker
  ): void => startAutoPredict(live, settings, tracker)
};

/**
 * Notebook commands: export, predict now, toggle recording (palette and
 * the Themisto main menu of schema/commands.json).
 */
export const commandsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:commands',
  description: "Adds Themisto's notebook commands to the palette and menu.",
  autoStart: true,
  requires: [INotebookTracker, IThemistoClient, IThemistoLive],
  optional: [ICommandPalette, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    client: IThemistoClient,
    live: IThemistoLive,
    palette: ICommandPalette | null,
    translator: ITranslator | null
  ): void =>
    addCommands(
      app,
      tracker,
      client,
      live,
      palette,
      (translator ?? nullTranslator).load('themisto_ext')
    )
};
