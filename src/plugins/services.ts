/**
 * The shared services: the REST client, the prediction settings and the
 * live data.
 */
import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IFormRendererRegistry } from '@jupyterlab/ui-components';

import type { PredictorsInfo } from '../api/records';

// These small modules are the services themselves, needed at activation.
/* eslint-disable jupyter/prefer-lazy-imports */
import { ThemistoClient } from '../api/client';
import { ThemistoLive } from '../live/live';
import { PredictionSettings } from '../settings';
import { ChoiceListField } from '../settingfields';
import { withServerChoices } from '../settingschema';
/* eslint-enable jupyter/prefer-lazy-imports */
import { IPredictionSettings, IThemistoClient, IThemistoLive } from '../tokens';

/**
 * Provides the client of the Themisto server REST API.
 */
export const clientPlugin: JupyterFrontEndPlugin<IThemistoClient> = {
  id: 'themisto-ext:client',
  description: 'Provides a client of the Themisto server REST API.',
  autoStart: true,
  provides: IThemistoClient,
  activate: (app: JupyterFrontEnd): IThemistoClient =>
    new ThemistoClient(app.serviceManager.serverSettings)
};

/**
 * Provides the prediction settings (schema/predictions.json).
 */
export const predictionSettingsPlugin: JupyterFrontEndPlugin<IPredictionSettings> =
  {
    id: 'themisto-ext:predictions',
    description: 'Provides the settings of the Themisto prediction features.',
    autoStart: true,
    provides: IPredictionSettings,
    requires: [IThemistoClient],
    optional: [ISettingRegistry, IFormRendererRegistry],
    activate: (
      app: JupyterFrontEnd,
      client: IThemistoClient,
      registry: ISettingRegistry | null,
      forms: IFormRendererRegistry | null
    ): IPredictionSettings => {
      const settings = new PredictionSettings();
      for (const name of ['predictors', 'contexts']) {
        forms?.addRenderer(`${predictionSettingsPlugin.id}.${name}`, {
          fieldRenderer: ChoiceListField
        });
      }
      if (registry) {
        // The settings editor offers the server's predictors and contexts
        // (settingschema.ts): the schema as written until the server has
        // answered, then again with its lists.
        let info: PredictorsInfo | null = null;
        void registry.transform(predictionSettingsPlugin.id, {
          fetch: plugin =>
            info
              ? {
                  ...plugin,
                  schema: withServerChoices(
                    plugin.schema,
                    info,
                    plugin.data?.user ?? {}
                  ) as typeof plugin.schema
                }
              : plugin
        });
        void client
          .getPredictors()
          .then(found => {
            info = found;
            return registry.load(predictionSettingsPlugin.id, true);
          })
          .catch(reason =>
            console.warn('themisto: the server predictors not read', reason)
          );
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
 * Provides the live data of the notebooks (live events and stores).
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
    new ThemistoLive({ client, tracker, events: app.serviceManager.events })
};
