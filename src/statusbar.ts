import {
  INotebookTracker,
  NotebookActions,
  NotebookPanel
} from '@jupyterlab/notebook';
import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel } from '@jupyterlab/services';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import {
  formatStatusLabel,
  formatStatusTitle,
  statusDataset,
  StatusView
} from './format';
import { rememberRecording } from './notebookswitch';
import { IKernelRecording } from './model';
import { IThemistoClient } from './tokens';

/**
 * The class name of the status bar item.
 */
export const STATUS_ITEM_CLASS = 'themisto-StatusItem';

/**
 * Default delay (ms) of the second refresh after a cell execution: the server
 * ingests execution events asynchronously.
 */
export const DEFAULT_REFRESH_DELAY = 400;

/**
 * Kernel statuses after which the kernel state is refreshed once it is idle.
 */
const RESTART_STATUSES: ReadonlySet<Kernel.Status> = new Set<Kernel.Status>([
  'restarting',
  'autorestarting',
  'starting'
]);

/**
 * Status bar item showing the Themisto recording state of the active
 * notebook's kernel. Clicking it toggles recording.
 */
export class ThemistoStatusItem extends Widget {
  constructor(options: ThemistoStatusItem.IOptions) {
    super();
    this._client = options.client;
    this._tracker = options.tracker;
    this.refreshDelay = options.refreshDelay ?? DEFAULT_REFRESH_DELAY;

    this.addClass(STATUS_ITEM_CLASS);
    this.node.setAttribute('role', 'button');
    this.node.tabIndex = 0;
    this._render();

    this._tracker.currentChanged.connect(this._onCurrentChanged, this);
    NotebookActions.executed.connect(this._onExecuted, this);
    this._client.recordingChanged.connect(this._onRecordingChanged, this);
    this._onCurrentChanged(this._tracker, this._tracker.currentWidget);
  }

  /**
   * Delay (ms) of the second refresh after a cell execution.
   */
  refreshDelay: number;

  /**
   * What the item currently shows.
   */
  get view(): StatusView {
    return this._view;
  }

  /**
   * Fetch the state of the active notebook's kernel now.
   */
  async refresh(): Promise<void> {
    const kernelId = this._kernelId();
    const request = ++this._requestId;
    if (kernelId === null) {
      this._setView({ kind: 'no-kernel' });
      return;
    }
    if (
      this._view.kind !== 'ready' ||
      this._view.model.kernel_id !== kernelId
    ) {
      this._setView({ kind: 'loading', kernelId });
    }
    let view: StatusView;
    try {
      view = { kind: 'ready', model: await this._client.getKernel(kernelId) };
    } catch (error) {
      view = { kind: 'error', kernelId, message: Private.message(error) };
    }
    // Drop replies to requests superseded by a newer one.
    if (request === this._requestId) {
      this._setView(view);
    }
  }

  /**
   * Refresh now and once more after {@link refreshDelay}.
   */
  scheduleRefresh(): void {
    void this.refresh();
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
    this._timer = setTimeout(() => {
      this._timer = null;
      void this.refresh();
    }, this.refreshDelay);
  }

  /**
   * Toggle recording of the active notebook's kernel.
   */
  async toggle(): Promise<void> {
    const view = this._view;
    if (view.kind !== 'ready') {
      // Nothing known to toggle yet: try to load the state instead.
      return this.refresh();
    }
    const kernelId = view.model.kernel_id;
    const request = ++this._requestId;
    let next: StatusView;
    try {
      next = {
        kind: 'ready',
        model: await this._client.setRecording(kernelId, !view.model.recording)
      };
      // The choice is the notebook's: it holds for the kernels it uses later.
      rememberRecording(this._panel?.model ?? null, next.model.recording);
    } catch (error) {
      next = { kind: 'error', kernelId, message: Private.message(error) };
    }
    if (request === this._requestId) {
      this._setView(next);
    }
  }

  /**
   * Handle the DOM events of the item.
   */
  handleEvent(event: Event): void {
    if (event.type === 'click') {
      void this.toggle();
    } else if (event.type === 'keydown') {
      const key = (event as KeyboardEvent).key;
      if (key === 'Enter' || key === ' ') {
        event.preventDefault();
        void this.toggle();
      }
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    this._tracker.currentChanged.disconnect(this._onCurrentChanged, this);
    NotebookActions.executed.disconnect(this._onExecuted, this);
    this._client.recordingChanged.disconnect(this._onRecordingChanged, this);
    this._watchSession(null);
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this.node.addEventListener('click', this);
    this.node.addEventListener('keydown', this);
  }

  protected onBeforeDetach(msg: Message): void {
    this.node.removeEventListener('click', this);
    this.node.removeEventListener('keydown', this);
    super.onBeforeDetach(msg);
  }

  private _kernelId(): string | null {
    return this._panel?.sessionContext.session?.kernel?.id ?? null;
  }

  private _setView(view: StatusView): void {
    this._view = view;
    this._render();
  }

  private _render(): void {
    const data = statusDataset(this._view);
    this.node.textContent = formatStatusLabel(this._view);
    this.node.title = formatStatusTitle(this._view);
    this.node.dataset.state = data.state;
    this.node.dataset.recording = data.recording;
    this.node.dataset.steps = data.steps;
  }

  private _onCurrentChanged(
    tracker: INotebookTracker,
    panel: NotebookPanel | null
  ): void {
    this._panel = panel;
    this._watchSession(panel?.sessionContext ?? null);
    void this.refresh();
  }

  private _watchSession(context: ISessionContext | null): void {
    if (this._session) {
      this._session.kernelChanged.disconnect(this._onKernelChanged, this);
      this._session.statusChanged.disconnect(this._onStatusChanged, this);
    }
    this._session = context;
    this._restarting = false;
    if (context) {
      context.kernelChanged.connect(this._onKernelChanged, this);
      context.statusChanged.connect(this._onStatusChanged, this);
    }
  }

  private _onKernelChanged(): void {
    this._restarting = false;
    void this.refresh();
  }

  private _onStatusChanged(
    context: ISessionContext,
    status: Kernel.Status
  ): void {
    if (RESTART_STATUSES.has(status)) {
      this._restarting = true;
    } else if (status === 'idle' && this._restarting) {
      this._restarting = false;
      this.scheduleRefresh();
    }
  }

  private _onRecordingChanged(
    client: IThemistoClient,
    model: IKernelRecording
  ): void {
    if (model.kernel_id === this._kernelId()) {
      this._setView({ kind: 'ready', model });
    }
  }

  private _onExecuted(
    sender: unknown,
    args: { notebook: NotebookPanel['content'] }
  ): void {
    if (this._panel !== null && args.notebook === this._panel.content) {
      this.scheduleRefresh();
    }
  }

  private _client: IThemistoClient;
  private _tracker: INotebookTracker;
  private _panel: NotebookPanel | null = null;
  private _session: ISessionContext | null = null;
  private _restarting = false;
  private _view: StatusView = { kind: 'no-kernel' };
  private _requestId = 0;
  private _timer: ReturnType<typeof setTimeout> | null = null;
}

/**
 * A namespace for {@link ThemistoStatusItem} statics.
 */
export namespace ThemistoStatusItem {
  /**
   * Options of the status bar item.
   */
  export interface IOptions {
    /**
     * The Themisto REST client.
     */
    client: IThemistoClient;
    /**
     * The notebook tracker, whose current widget is followed.
     */
    tracker: INotebookTracker;
    /**
     * Delay (ms) of the second refresh after a cell execution.
     */
    refreshDelay?: number;
  }
}

namespace Private {
  /**
   * The message of an unknown error.
   */
  export function message(error: unknown): string {
    return error instanceof Error ? error.message : String(error);
  }
}
