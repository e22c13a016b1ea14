/**
 * The user's own choices and the class: consent to being recorded (menu,
 * palette and a status bar item while opted out), deleting everything one
 * recorded (with a confirmation), and the class view for those who may read
 * everyone's (Themisto menu, schema/commands.json).
 */
import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  Dialog,
  ICommandPalette,
  MainAreaWidget,
  Notification,
  showDialog
} from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import {
  ITranslator,
  nullTranslator,
  type TranslationBundle
} from '@jupyterlab/translation';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import type { IMe } from '../api/model';
import type { NotebookRow } from '../api/records';
// The commands are added at activation, so these small modules are needed at once.
/* eslint-disable jupyter/prefer-lazy-imports */
import { NO_ARGS, PALETTE_CATEGORY } from '../commands';
import { themistoIcon } from '../icon';
/* eslint-enable jupyter/prefer-lazy-imports */
import { IThemistoClient, IThemistoLive } from '../tokens';

export namespace PeopleCommandIDs {
  export const openClassView = 'themisto:open-class-view';
  export const toggleConsent = 'themisto:toggle-consent';
  export const deleteMyData = 'themisto:delete-my-data';
}

export const peoplePlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:people',
  description:
    'Consent to being recorded, delete your data, and the class view for readers of every user.',
  autoStart: true,
  requires: [IThemistoClient, IThemistoLive],
  optional: [ICommandPalette, IStatusBar, ISettingRegistry, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    client: IThemistoClient,
    live: IThemistoLive,
    palette: ICommandPalette | null,
    statusBar: IStatusBar | null,
    settingRegistry: ISettingRegistry | null,
    translator: ITranslator | null
  ): void => {
    const trans = (translator ?? nullTranslator).load('themisto_ext');
    let me: IMe | null = null;
    const optedOut = new Widget();
    optedOut.addClass('themisto-OptedOut');
    // The status bar shows the item only while opted out: told of each change.
    const shownChanged = new Signal<Widget, void>(optedOut);
    const learned = (value: IMe): void => {
      me = value;
      optedOut.node.textContent = value.consent
        ? ''
        : trans.__('Themisto: not recording you');
      optedOut.node.title = trans.__(
        'You opted out: nothing is recorded. Click to let Themisto record your work again.'
      );
      optedOut.node.dataset.consent = String(value.consent);
      shownChanged.emit();
      app.commands.notifyCommandChanged();
    };
    // The settings editor's "Record my work" follows the server's choice (the
    // one source of truth, shared by every browser) and changes it.
    let settings: ISettingRegistry.ISettings | null = null;
    const mirror = (): void => {
      if (settings && me && settings.get('recordMe').composite !== me.consent) {
        void settings.set('recordMe', me.consent);
      }
    };
    const learnedAll = (value: IMe): void => {
      learned(value);
      mirror();
    };
    settingRegistry
      ?.load(peoplePlugin.id)
      .then(loaded => {
        settings = loaded;
        mirror();
        loaded.changed.connect(() => {
          const wanted = loaded.get('recordMe').composite !== false;
          if (me && wanted !== me.consent) {
            client
              .setConsent(wanted)
              .then(learnedAll, (error: unknown) =>
                Notification.error(
                  trans.__('Could not change it: %1', String(error))
                )
              );
          }
        });
      })
      .catch(() => undefined);
    client.getMe().then(learnedAll, () => undefined);
    optedOut.node.onclick = () =>
      void app.commands.execute(PeopleCommandIDs.toggleConsent);
    statusBar?.registerStatusItem(peoplePlugin.id, {
      item: optedOut,
      align: 'left',
      rank: 101,
      isActive: () => me?.consent === false,
      activeStateChanged: shownChanged
    });

    app.commands.addCommand(PeopleCommandIDs.toggleConsent, {
      label: trans.__('Record My Work'),
      describedBy: NO_ARGS,
      caption: trans.__(
        'Whether Themisto records your notebooks (off: nothing is recorded)'
      ),
      isToggled: () => me?.consent !== false,
      execute: async () => {
        const on = me?.consent === false;
        if (
          !on &&
          !(await confirmed(
            trans.__('Stop recording your work?'),
            trans.__(
              'From now on nothing of yours is recorded or predicted, in any notebook, until you switch this on again. What was recorded stays until you delete it.'
            ),
            trans.__('Stop recording')
          ))
        ) {
          return;
        }
        try {
          learnedAll(await client.setConsent(on));
          await live.refreshKernel();
        } catch (error) {
          Notification.error(
            trans.__('Could not change it: %1', String(error))
          );
        }
      }
    });
    app.commands.addCommand(PeopleCommandIDs.deleteMyData, {
      label: trans.__('Delete My Recorded Data…'),
      describedBy: NO_ARGS,
      caption: trans.__(
        'Delete every trajectory and prediction Themisto recorded of you'
      ),
      execute: async () => {
        if (
          !(await confirmed(
            trans.__('Delete everything Themisto recorded of you?'),
            trans.__(
              'All your trajectories, their steps, outputs, runtime state and predictions are deleted from the store and from the journals. This cannot be undone. Nobody else’s data is touched.'
            ),
            trans.__('Delete my data')
          ))
        ) {
          return;
        }
        try {
          const done = await client.deleteMyData();
          Notification.success(
            trans.__('Deleted %1 trajectories of yours.', done.trajectories),
            { autoClose: 5000 }
          );
        } catch (error) {
          Notification.error(trans.__('Could not delete: %1', String(error)));
        }
      }
    });
    addClassView(app, client, live, trans, () => me?.readAll === true);
    for (const command of Object.values(PeopleCommandIDs)) {
      palette?.addItem({ command, category: PALETTE_CATEGORY });
    }
  }
};

/**
 * Whether the user confirmed a warning dialog with its `action` button.
 */
async function confirmed(
  title: string,
  body: string,
  action: string
): Promise<boolean> {
  const answer = await showDialog({
    title,
    body,
    buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: action })]
  });
  return answer.button.accept;
}

function addClassView(
  app: JupyterFrontEnd,
  client: IThemistoClient,
  live: IThemistoLive,
  trans: TranslationBundle,
  readsAll: () => boolean
): void {
  let widget: MainAreaWidget | null = null;
  const trajectoriesOf = async (row: NotebookRow) =>
    (
      await client.listTrajectories({
        user: row.user,
        ...(row.notebook_path ? { notebook: row.notebook_path } : {})
      })
    ).filter(t => !row.notebook_path || t.notebook_path === row.notebook_path);
  app.commands.addCommand(PeopleCommandIDs.openClassView, {
    label: trans.__('Open Class View'),
    describedBy: NO_ARGS,
    caption: trans.__("Every user's notebooks: cells, errors, time, scores"),
    isVisible: readsAll,
    execute: async () => {
      if (!widget || widget.isDisposed) {
        // Loaded on first use: most users never open it.
        const { ClassView } = await import('../class/view');
        const view = new ClassView(
          client,
          {
            open: async row => {
              const { chooseSession } = await import('../class/sessions');
              const chosen = await chooseSession(
                await trajectoriesOf(row),
                row,
                trans
              );
              if (!chosen) {
                return;
              }
              await live.replay(chosen);
              const { PANEL_ID } = await import('./panel');
              app.shell.activateById(PANEL_ID);
            },
            exportRows: async rows => {
              const { exportFilename } = await import('../api/client');
              const { freePath, saveStream } =
                await import('../notebook/export');
              const contents = app.serviceManager.contents;
              const ids: string[] = [];
              for (const found of await Promise.all(rows.map(trajectoriesOf))) {
                ids.push(...found.map(t => t.id));
              }
              const filename = exportFilename('themisto-class.jsonl');
              const path = await freePath(contents, '', filename);
              await saveStream(
                contents,
                path,
                await client.openExport({ trajectories: ids }, filename)
              );
              return path;
            }
          },
          trans
        );
        widget = new MainAreaWidget({ content: view });
        widget.id = 'themisto-class-view';
        widget.title.label = trans.__('Class');
        widget.title.icon = themistoIcon;
        widget.title.closable = true;
        void view.refresh();
      }
      if (!widget.isAttached) {
        app.shell.add(widget, 'main');
      }
      app.shell.activateById(widget.id);
    }
  });
}
