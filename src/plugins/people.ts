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

import type { Me, NotebookRow } from '../api/records';
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
    const consent = new Consent(app, client, trans);
    if (settingRegistry) {
      consent.follow(settingRegistry);
    }
    client.getMe().then(
      me => consent.learned(me),
      () => undefined
    );
    statusBar?.registerStatusItem(peoplePlugin.id, {
      item: consent.opted_out,
      align: 'left',
      rank: 101,
      isActive: () => consent.me?.consent === false,
      activeStateChanged: consent.shownChanged
    });
    addConsentCommand(app, client, live, consent, trans);
    addDeleteCommand(app, client, trans);
    addClassView(app, client, live, trans, () => consent.me?.read_all === true);
    for (const command of Object.values(PeopleCommandIDs)) {
      palette?.addItem({ command, category: PALETTE_CATEGORY });
    }
  }
};

/**
 * The user's consent as the server holds it (the one source of truth, shared
 * by every browser): mirrored into the settings editor's "Record my work",
 * which changes it, and shown in the status bar while opted out.
 */
class Consent {
  constructor(
    private readonly _app: JupyterFrontEnd,
    private readonly _client: IThemistoClient,
    private readonly _trans: TranslationBundle
  ) {
    this.opted_out.addClass('themisto-OptedOut');
    this.opted_out.node.onclick = () =>
      void _app.commands.execute(PeopleCommandIDs.toggleConsent);
  }

  /**
   * What the server said of the user last (null: not asked yet).
   */
  me: Me | null = null;

  /**
   * The status bar item, shown only while opted out.
   */
  readonly opted_out = new Widget();

  /**
   * Told of each change of whether the status bar item is shown.
   */
  readonly shownChanged = new Signal<Widget, void>(this.opted_out);

  /**
   * The server's answer about the user, shown everywhere it is.
   */
  learned(me: Me): void {
    const trans = this._trans;
    this.me = me;
    const node = this.opted_out.node;
    node.textContent = me.consent
      ? ''
      : trans.__('Themisto: not recording you');
    node.title = trans.__(
      'You opted out: nothing is recorded. Click to let Themisto record your work again.'
    );
    node.dataset.consent = String(me.consent);
    this.shownChanged.emit();
    this._app.commands.notifyCommandChanged();
    this._mirror();
  }

  /**
   * Keep the settings editor's "Record my work" and the server's consent
   * the same, whichever changes.
   */
  follow(registry: ISettingRegistry): void {
    registry
      .load(peoplePlugin.id)
      .then(loaded => {
        this._settings = loaded;
        this._mirror();
        loaded.changed.connect(() => {
          const wanted = loaded.get('recordMe').composite !== false;
          if (this.me && wanted !== this.me.consent) {
            this._client.setConsent(wanted).then(
              me => this.learned(me),
              (error: unknown) =>
                Notification.error(
                  this._trans.__('Could not change it: %1', String(error))
                )
            );
          }
        });
      })
      .catch(() => undefined);
  }

  private _mirror(): void {
    const { _settings: settings, me } = this;
    if (settings && me && settings.get('recordMe').composite !== me.consent) {
      void settings.set('recordMe', me.consent);
    }
  }

  private _settings: ISettingRegistry.ISettings | null = null;
}

/**
 * "Record My Work": switching it off asks first.
 */
function addConsentCommand(
  app: JupyterFrontEnd,
  client: IThemistoClient,
  live: IThemistoLive,
  consent: Consent,
  trans: TranslationBundle
): void {
  app.commands.addCommand(PeopleCommandIDs.toggleConsent, {
    label: trans.__('Record My Work'),
    describedBy: NO_ARGS,
    caption: trans.__(
      'Whether Themisto records your notebooks (off: nothing is recorded)'
    ),
    isToggled: () => consent.me?.consent !== false,
    execute: async () => {
      const on = consent.me?.consent === false;
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
        consent.learned(await client.setConsent(on));
        await live.refreshKernel();
      } catch (error) {
        Notification.error(trans.__('Could not change it: %1', String(error)));
      }
    }
  });
}

/**
 * "Delete My Recorded Data…", after a confirmation.
 */
function addDeleteCommand(
  app: JupyterFrontEnd,
  client: IThemistoClient,
  trans: TranslationBundle
): void {
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
          trans.__(
            'Deleted %1 trajectories of yours.',
            done.deleted_trajectories
          ),
          { autoClose: 5000 }
        );
      } catch (error) {
        Notification.error(trans.__('Could not delete: %1', String(error)));
      }
    }
  });
}

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
