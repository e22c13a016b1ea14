/**
 * The live data service: one store per open notebook, each following its
 * kernel's live events (feed.ts: the page's one event bus connection), with
 * the history read from the REST API when the notebook opens and when events
 * were missed (loader.ts); the active notebook's store is `current`.
 */
import {
  type INotebookTracker,
  NotebookActions,
  type NotebookPanel
} from '@jupyterlab/notebook';
import type { Event } from '@jupyterlab/services';
import { Debouncer } from '@lumino/polling';
import { type ISignal, Signal } from '@lumino/signaling';

import { ThemistoApiError } from '../api/errors';
import type {
  KernelRecording,
  LiveEvent,
  PredictionTask,
  PredictorsInfo,
  Trajectory
} from '../api/records';
import type {
  ILiveEventArgs,
  INotebookLive,
  IThemistoClient,
  IThemistoLive
} from '../tokens';
import { LiveEventFeed } from './feed';
import { HistoryLoader } from './loader';
import { isModelProcessError } from './reasons';
import { NotebookLive } from './store';
import type { ConnectionState, IStepDetail } from './types';

/**
 * The live data service: follows the active notebook.
 */
export class ThemistoLive implements IThemistoLive {
  constructor(options: ThemistoLive.IOptions) {
    this._client = options.client;
    this._loader = new HistoryLoader(options.client);
    this._tracker = options.tracker;
    this._feed = new LiveEventFeed(options.events);
    this._feed.received.connect(this._onEvent, this);
    this._feed.missed.connect(this._onMissed, this);
    this._feed.stateChanged.connect(this._onFeedState, this);
    this._tracker.currentChanged.connect(this._onCurrentChanged, this);
    this._client.recordingChanged.connect(this._onRecordingChanged, this);
    NotebookActions.executed.connect(this._onExecuted, this);
    // Every notebook's history is read as soon as it opens, before it has a
    // kernel or the focus: its cells show their badges at once; and every
    // notebook follows its kernel, active or not.
    this._tracker.widgetAdded.connect(this._onAdded, this);
    this._tracker.forEach(panel => this._watch(panel));
    this._onCurrentChanged(this._tracker, this._tracker.currentWidget);
    void this.refreshPredictors();
  }

  get current(): NotebookLive | null {
    return this._current;
  }

  get currentChanged(): ISignal<IThemistoLive, INotebookLive | null> {
    return this._currentChanged;
  }

  get storeAdded(): ISignal<IThemistoLive, INotebookLive> {
    return this._storeAdded;
  }

  get eventReceived(): ISignal<IThemistoLive, ILiveEventArgs> {
    return this._eventReceived;
  }

  get predictors(): PredictorsInfo | null {
    return this._predictors;
  }

  get predictorsError(): string | null {
    return this._predictorsError;
  }

  get predictorsChanged(): ISignal<IThemistoLive, void> {
    return this._predictorsChanged;
  }

  async replay(trajectory: Trajectory): Promise<NotebookLive> {
    // Its own key: never an open notebook's path, so no notebook's events or
    // badges reach it.
    const key = `themisto-replay:${trajectory.id}`;
    let store = this._stores.get(key);
    if (!store) {
      store = new NotebookLive(key);
      store.replayOf = {
        user: trajectory.user ?? '',
        notebookPath: trajectory.notebook_path ?? null
      };
      this._stores.set(key, store);
      store.adopt(trajectory.id, trajectory.kernel_id);
      store.noteStepCount(trajectory.id, trajectory.steps);
      await this._loader.catchUp(store, trajectory);
    }
    this._panel = null;
    this._setCurrent(store);
    return store;
  }

  store(path: string): NotebookLive | null {
    return this._stores.get(path) ?? null;
  }

  async refreshPredictors(): Promise<void> {
    try {
      this._predictors = await this._client.getPredictors();
      this._predictorsError = null;
    } catch (error) {
      this._predictorsError = message(error);
    }
    this._predictorsChanged.emit();
  }

  async refreshKernel(): Promise<void> {
    if (this._current) {
      await this._readKernel(this._current);
    }
  }

  async requestPrediction(
    task: PredictionTask,
    options: { code?: string; store?: INotebookLive } = {}
  ): Promise<void> {
    const store = options.store
      ? (this._stores.get(options.store.path) ?? null)
      : this._current;
    const kernelId = store?.kernelId;
    if (!store || !kernelId) {
      throw new ThemistoApiError(0, 'The notebook has no running kernel.');
    }
    // Marked before asking: the stream may bring the prediction before the
    // reply; the reply then corrects the guess if the server chose another.
    store.markRequested(task);
    const target = await this._client.requestPrediction({
      kernel_id: kernelId,
      task,
      ...(options.code !== undefined ? { code: options.code } : {})
    });
    if (target !== null) {
      store.markRequested(task, target);
    }
  }

  loadStep(
    store: INotebookLive,
    step: number,
    trajectoryId: string | null = store.trajectoryId
  ): Promise<IStepDetail> {
    const own = this._stores.get(store.path);
    return own
      ? this._loader.loadStep(own, step, trajectoryId)
      : Promise.resolve({
          trajectoryId,
          step,
          whole: null,
          next: null,
          predictions: []
        });
  }

  async loadHistoryBefore(store: INotebookLive, step: number): Promise<void> {
    const own = this._stores.get(store.path);
    if (own) {
      await this._loader.loadBefore(own, step);
    }
  }

  /**
   * Stop following the event bus and the notebooks.
   */
  dispose(): void {
    this._feed.dispose();
    for (const panel of this._watched) {
      this._unwatch(panel);
    }
    this._tracker.currentChanged.disconnect(this._onCurrentChanged, this);
    this._client.recordingChanged.disconnect(this._onRecordingChanged, this);
    NotebookActions.executed.disconnect(this._onExecuted, this);
    this._tracker.widgetAdded.disconnect(this._onAdded, this);
    Signal.clearData(this);
  }

  private _onCurrentChanged(
    tracker: INotebookTracker,
    panel: NotebookPanel | null
  ): void {
    this._panel = panel;
    if (!panel) {
      this._setCurrent(null);
      return;
    }
    this._watch(panel); // (tracked already, unless it was never announced)
    this._follow(panel);
  }

  private _onAdded(tracker: INotebookTracker, panel: NotebookPanel): void {
    this._watch(panel);
  }

  /**
   * Follow a notebook's kernel and path for as long as it is open.
   */
  private _watch(panel: NotebookPanel): void {
    if (this._watched.has(panel)) {
      return;
    }
    this._watched.add(panel);
    panel.sessionContext.kernelChanged.connect(this._onPanelChanged, this);
    panel.context.pathChanged.connect(this._onPanelChanged, this);
    panel.disposed.connect(this._unwatch, this);
    this._follow(panel);
  }

  private _unwatch(panel: NotebookPanel): void {
    this._watched.delete(panel);
    panel.sessionContext.kernelChanged.disconnect(this._onPanelChanged, this);
    panel.context.pathChanged.disconnect(this._onPanelChanged, this);
    panel.disposed.disconnect(this._unwatch, this);
  }

  private _onPanelChanged(): void {
    for (const panel of this._watched) {
      this._follow(panel);
    }
  }

  /**
   * The store of a notebook, made on first sight: its history is read by
   * its path at once, without waiting for a kernel (a new one has recorded
   * nothing yet).
   */
  private _storeOf(path: string): NotebookLive {
    let store = this._stores.get(path);
    if (!store) {
      store = new NotebookLive(path);
      this._stores.set(path, store);
      this._loader
        .loadPast(store, [{ notebook: path }])
        .catch(error => console.warn('themisto: no notebook history', error));
      this._storeAdded.emit(store);
    }
    return store;
  }

  private _onExecuted(
    _: unknown,
    args: {
      notebook: NotebookPanel['content'];
      cell: { model: { id: string; type: string } };
    }
  ): void {
    if (args.cell.model.type !== 'code') {
      return;
    }
    const panel = this._tracker.find(p => p.content === args.notebook);
    if (panel) {
      this._stores.get(panel.context.path)?.noteRun(args.cell.model.id);
    }
  }

  /**
   * Point a notebook's store at the notebook's kernel (the live events of
   * that kernel go to it), and make it current if the notebook is active.
   * The active kernel's state is read once when it changes; its events keep
   * it (and the step count) up to date from then on.
   */
  private _follow(panel: NotebookPanel): void {
    const store = this._storeOf(panel.context.path);
    const kernelId = panel.sessionContext.session?.kernel?.id ?? null;
    const kernelChanged = kernelId !== store.kernelId;
    const active = panel === this._panel;
    const activeChanged = kernelChanged || (active && store !== this._current);
    store.kernelId = kernelId;
    store.connection = kernelId ? this._feed.state : 'closed';
    if (kernelChanged) {
      // Another kernel: what the store knew of the previous one is void.
      store.recording = null;
      store.recordingError = null;
      store.recordingReason = null;
      if (kernelId) {
        void this._sync(store, kernelId); // what it did before this page listened
      }
    }
    if (active) {
      this._setCurrent(store);
      if (activeChanged) {
        void this._readKernel(store);
      }
    }
  }

  private _setCurrent(store: NotebookLive | null): void {
    if (store !== this._current) {
      this._current = store;
      this._currentChanged.emit(store);
    }
  }

  /**
   * A live event goes to the stores of its kernel. Stores follow kernels
   * rather than paths: the server records the path the kernel was started
   * with (absolute, and stale after a rename), while a kernel id is the same
   * on both sides, and it keeps across kernel restarts.
   */
  private _onEvent(feed: LiveEventFeed, event: LiveEvent): void {
    if (event.type === 'heartbeat') {
      return;
    }
    if (event.type === 'recording') {
      this._recordingNews(event.kernel_id);
    }
    if (
      event.type === 'prediction' &&
      isModelProcessError(event.prediction.error)
    ) {
      // the embedded model's process died, hung or was switched off
      void this._modelNews.invoke();
    }
    for (const store of this._stores.values()) {
      if (event.kernel_id !== null && store.kernelId === event.kernel_id) {
        store.apply(event);
        this._eventReceived.emit({ store, event });
      }
    }
  }

  /**
   * Events were missed (the connection dropped, the server restarted): every
   * notebook with a kernel reads what it lacks.
   */
  private _onMissed(): void {
    for (const store of this._stores.values()) {
      if (store.kernelId) {
        void this._sync(store, store.kernelId);
      }
    }
  }

  private _onFeedState(feed: LiveEventFeed, state: ConnectionState): void {
    for (const store of this._stores.values()) {
      if (store.kernelId) {
        store.connection = state;
      }
    }
  }

  /**
   * Read the history of a notebook's latest trajectory that the store lacks.
   */
  private async _sync(store: NotebookLive, kernelId: string): Promise<void> {
    try {
      const trajectory = await this._client.latestTrajectory({
        kernel: kernelId
      });
      if (store.kernelId !== kernelId) {
        return; // the notebook changed kernels meanwhile
      }
      if (trajectory) {
        if (!store.adopt(trajectory.id, trajectory.kernel_id)) {
          return;
        }
        store.noteStepCount(trajectory.id, trajectory.steps);
        await this._loader.catchUp(store, trajectory);
      }
      // Cells not run since the kernel (re)started show their earlier steps.
      await this._loader.loadPast(store, [
        { kernel: kernelId },
        { notebook: store.path }
      ]);
    } catch (error) {
      console.warn('themisto: could not read the notebook history', error);
    }
  }

  /**
   * Read the kernel's recording state and step count (one request).
   */
  private async _readKernel(store: NotebookLive): Promise<void> {
    const kernelId = store.kernelId;
    if (!kernelId) {
      return;
    }
    const news = this._recordingNews(kernelId, 0);
    try {
      const model = await this._client.getKernel(kernelId);
      if (store.kernelId !== kernelId) {
        return;
      }
      if (this._recordingNews(kernelId, 0) === news) {
        store.applyKernel(model);
      } else if (model.trajectory_id !== null) {
        // A switch landed while the request was out: its state is newer
        // than this reply's; only the step count is still news.
        store.noteStepCount(model.trajectory_id, model.steps);
      }
    } catch (error) {
      if (store.kernelId === kernelId) {
        store.recordingError = message(error);
      }
    }
  }

  /**
   * A switch made from this page: the server's reply is the kernel's state.
   */
  private _onRecordingChanged(
    client: IThemistoClient,
    model: KernelRecording
  ): void {
    this._recordingNews(model.kernel_id);
    for (const store of this._stores.values()) {
      if (store.kernelId === model.kernel_id) {
        store.applyKernel(model);
      }
    }
  }

  /**
   * Count (by `step`, default 1) the recording switches heard of for a
   * kernel, from the stream or from this page; returns the count. A kernel
   * state read while the count moved is older than what was heard.
   */
  private _recordingNews(kernelId: string, step = 1): number {
    const count = (this._news.get(kernelId) ?? 0) + step;
    this._news.set(kernelId, count);
    return count;
  }

  private _client: IThemistoClient;
  private _loader: HistoryLoader;
  private _news = new Map<string, number>();
  private _tracker: INotebookTracker;
  private _panel: NotebookPanel | null = null;
  private _current: NotebookLive | null = null;
  private _stores = new Map<string, NotebookLive>();
  private _watched = new Set<NotebookPanel>();
  private _feed: LiveEventFeed;
  private _predictors: PredictorsInfo | null = null;
  private _predictorsError: string | null = null;
  private _modelNews = new Debouncer(() => this.refreshPredictors(), 500);
  private _currentChanged = new Signal<IThemistoLive, INotebookLive | null>(
    this
  );
  private _eventReceived = new Signal<IThemistoLive, ILiveEventArgs>(this);
  private _storeAdded = new Signal<IThemistoLive, INotebookLive>(this);
  private _predictorsChanged = new Signal<IThemistoLive, void>(this);
}

export namespace ThemistoLive {
  export interface IOptions {
    client: IThemistoClient;
    tracker: INotebookTracker;
    /**
     * The page's event bus (`app.serviceManager.events`).
     */
    events: Event.IManager;
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
