/**
 * The status bar item (settings: schema/status.json).
 */
import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { ITranslator } from '@jupyterlab/translation';
import { Signal } from '@lumino/signaling';

// The status item is registered synchronously at activation, so it is needed at once.
/* eslint-disable jupyter/prefer-lazy-imports */
import { focusNotebook } from '../notebook/focus';
import { toggleNotebookRecording } from '../notebook/recording';
import { ThemistoStatusItem } from '../statusbar/item';
/* eslint-enable jupyter/prefer-lazy-imports */
import { IThemistoClient, IThemistoLive } from '../tokens';

/**
 * Status bar item showing and toggling the recording state of the active
 * notebook's kernel, from the live data of that notebook.
 */
export const statusPlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:status',
  description:
    "Shows Themisto's recording state of the active notebook kernel.",
  autoStart: true,
  requires: [IStatusBar, INotebookTracker, IThemistoClient, IThemistoLive],
  optional: [ISettingRegistry, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    statusBar: IStatusBar,
    tracker: INotebookTracker,
    client: IThemistoClient,
    live: IThemistoLive,
    settingRegistry: ISettingRegistry | null,
    translator: ITranslator | null
  ): void => {
    const item = new ThemistoStatusItem({
      live,
      toggle: async () => {
        const notebook = tracker.currentWidget;
        if (notebook) {
          await toggleNotebookRecording(notebook, client, live);
        }
      },
      // The item never keeps the focus: Shift+Enter still runs the cell.
      done: () => focusNotebook(app.shell, tracker),
      translator: translator ?? undefined
    });
    const activeStateChanged = new Signal<ThemistoStatusItem, void>(item);
    let showStatusItem = true;

    statusBar.registerStatusItem(statusPlugin.id, {
      item,
      align: 'left',
      rank: 100,
      isActive: () => showStatusItem,
      activeStateChanged
    });

    if (settingRegistry) {
      const apply = (settings: ISettingRegistry.ISettings): void => {
        showStatusItem = settings.get('showStatusItem').composite !== false;
        activeStateChanged.emit();
      };
      settingRegistry
        .load(statusPlugin.id)
        .then(settings => {
          apply(settings);
          settings.changed.connect(apply);
        })
        .catch(reason => {
          console.error(
            'Failed to load settings for themisto-ext:status.',
            reason
          );
        });
    }
  }
};
