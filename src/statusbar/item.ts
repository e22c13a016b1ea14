/**
 * The status bar item: the recording state and step count of the active
 * notebook's kernel, read from its live store (no request of its own).
 */
import {
  type ITranslator,
  nullTranslator,
  type TranslationBundle
} from '@jupyterlab/translation';
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { localModelDown } from '../live/reasons';
import type { LiveChange } from '../live/types';
import type { INotebookLive, IThemistoLive } from '../tokens';
import {
  formatStatusLabel,
  formatStatusTitle,
  statusDataset,
  type StatusView
} from './format';

/**
 * The class name of the status bar item.
 */
export const STATUS_ITEM_CLASS = 'themisto-StatusItem';

/**
 * The store changes the item shows.
 */
const SHOWN: ReadonlySet<LiveChange> = new Set<LiveChange>([
  'recording',
  'steps',
  'trajectory'
]);

/**
 * Status bar item showing the Themisto recording state of the active
 * notebook's kernel. Clicking it toggles recording.
 */
export class ThemistoStatusItem extends Widget {
  constructor(options: ThemistoStatusItem.IOptions) {
    super();
    this._live = options.live;
    this._toggle = options.toggle;
    this._done = options.done ?? (() => undefined);
    this._trans = (options.translator ?? nullTranslator).load('themisto_ext');

    this.addClass(STATUS_ITEM_CLASS);
    this.node.setAttribute('role', 'button');
    this.node.tabIndex = 0;

    this._live.currentChanged.connect(this._onCurrentChanged, this);
    this._live.predictorsChanged.connect(this._render, this);
    this._onCurrentChanged(this._live, this._live.current);
  }

  /**
   * What the item currently shows.
   */
  get view(): StatusView {
    return this._view;
  }

  /**
   * Toggle recording of the active notebook's kernel; when its state is not
   * known (yet), read it instead.
   */
  async toggle(): Promise<void> {
    const view = this._view;
    if (view.kind === 'no-kernel' || view.kind === 'loading') {
      return;
    }
    const store = this._store;
    this._error = null;
    try {
      if (view.kind === 'error') {
        await this._live.refreshKernel();
      } else {
        await this._toggle();
      }
    } catch (error) {
      if (store === this._store) {
        this._error = error instanceof Error ? error.message : String(error);
      }
    }
    this._render();
  }

  /**
   * Handle the DOM events of the item.
   */
  handleEvent(event: Event): void {
    if (event.type === 'mousedown') {
      // A click must not take the focus from the notebook.
      event.preventDefault();
    } else if (event.type === 'click') {
      void this.toggle().then(this._done);
    } else if (event.type === 'keydown') {
      const key = (event as KeyboardEvent).key;
      if (key === 'Enter' || key === ' ') {
        event.preventDefault();
        void this.toggle().then(this._done);
      }
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._store?.changed.disconnect(this._onStoreChanged, this);
    this._live.currentChanged.disconnect(this._onCurrentChanged, this);
    this._live.predictorsChanged.disconnect(this._render, this);
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this.node.addEventListener('mousedown', this);
    this.node.addEventListener('click', this);
    this.node.addEventListener('keydown', this);
  }

  protected onBeforeDetach(msg: Message): void {
    this.node.removeEventListener('mousedown', this);
    this.node.removeEventListener('click', this);
    this.node.removeEventListener('keydown', this);
    super.onBeforeDetach(msg);
  }

  private _onCurrentChanged(
    live: IThemistoLive,
    store: INotebookLive | null
  ): void {
    this._store?.changed.disconnect(this._onStoreChanged, this);
    this._store = store;
    this._error = null;
    store?.changed.connect(this._onStoreChanged, this);
    this._render();
  }

  private _onStoreChanged(store: INotebookLive, change: LiveChange): void {
    if (SHOWN.has(change)) {
      if (change === 'recording') {
        this._error = null;
      }
      this._render();
    }
  }

  /**
   * The view of the store's state.
   */
  private _current(): StatusView {
    const store = this._store;
    const kernelId = store?.kernelId;
    if (!store || !kernelId) {
      return { kind: 'no-kernel' };
    }
    const error = this._error ?? store.recordingError;
    if (error !== null) {
      return { kind: 'error', kernelId, message: error };
    }
    if (store.recording === null) {
      return { kind: 'loading', kernelId };
    }
    return {
      kind: 'ready',
      model: {
        kernel_id: kernelId,
        recording: store.recording,
        reason: store.recordingReason,
        trajectory_id: store.trajectoryId,
        steps: store.stepCount
      },
      modelDown: localModelDown(this._live.predictors)
    };
  }

  private _render(): void {
    const view = this._current();
    this._view = view;
    const data = statusDataset(view);
    this.node.textContent = formatStatusLabel(view, this._trans);
    this.node.title = formatStatusTitle(view, this._trans);
    this.node.dataset.state = data.state;
    this.node.dataset.recording = data.recording;
    this.node.dataset.steps = data.steps;
    this.node.dataset.warning = data.warning;
    this.node.dataset.model = data.model;
  }

  private _live: IThemistoLive;
  private _toggle: () => Promise<unknown>;
  private _done: () => void;
  private _trans: TranslationBundle;
  private _store: INotebookLive | null = null;
  private _error: string | null = null;
  private _view: StatusView = { kind: 'no-kernel' };
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
     * The live data, whose current store is shown.
     */
    live: IThemistoLive;
    /**
     * Switch recording of the active notebook's kernel (and remember the
     * choice in the notebook); the store then follows.
     */
    toggle: () => Promise<unknown>;
    /**
     * Called after each click or key press was handled (the plugin gives
     * the focus back to the notebook).
     */
    done?: () => void;
    translator?: ITranslator;
  }
}
