/**
 * Reading a notebook's history from the REST API into its store: the newest
 * page of steps in brief first (every recent cell gets its badge and footer
 * at once), then only the few latest steps and predictions whole (what the
 * live view shows), then older pages in the background; a step under review
 * is read whole on demand.
 *
 * A 2,000-step notebook so opens with two small requests more than a
 * 20-step one (benchmarks/history_open.py).
 */
import type { Trajectory } from '../api/records';
import type { ITrajectoryFilter } from '../api/model';
import type { IThemistoClient } from '../tokens';
import type { NotebookLive } from './store';
import type { IStepDetail } from './types';

/**
 * Steps in brief per request (~200 bytes each with two predictions).
 */
export const HISTORY_PAGE = 500;

/**
 * The first page is smaller: the newest 200 steps usually hold every cell
 * of a notebook, and they come sooner (the server reads 500 in 38 ms, 200 in
 * 11 ms, with 4 predictions a step; benchmarks/history_open.py).
 */
export const FIRST_PAGE = 200;

/**
 * The latest steps read whole: the live view shows the latest step's output
 * and runtime, and the output of the running cell.
 */
export const WHOLE_STEPS = 5;

/**
 * Targets whose predictions are read whole (without prompts) for the live
 * view: the latest steps and the cell after them.
 */
export const LIVE_TARGETS = 5;

/**
 * Steps in brief read in the background at most; review reads further back
 * page by page.
 */
export const MAX_BACKFILL = 20000;

/**
 * Earlier trajectories of a notebook read in brief, and steps of each (the
 * latest): enough for the badges of cells not run since a kernel restart.
 */
export const PAST_TRAJECTORIES = 5;
export const PAST_STEPS = 2000;

/**
 * Step details kept once read (review goes back and forth).
 */
const DETAILS_KEPT = 16;

export class HistoryLoader {
  constructor(private readonly _client: IThemistoClient) {}

  /**
   * Bring a store up to date with its trajectory: what it lacks, newest
   * first; older history follows in the background.
   */
  async catchUp(store: NotebookLive, trajectory: Trajectory): Promise<void> {
    const id = trajectory.id;
    const fresh = store.lastStep === 0;
    const total = trajectory.steps;
    const since = fresh ? Math.max(0, total - FIRST_PAGE) : store.lastStep;
    const wholeSince = Math.max(
      store.latestStep?.step ?? 0,
      total - WHOLE_STEPS
    );
    const predictionsSince = Math.max(
      0,
      fresh ? total - LIVE_TARGETS : store.lastStep - 1
    );
    await this._forward(store, id, since);
    if (store.trajectoryId !== id) {
      return;
    }
    const [whole, predictions] = await Promise.all([
      this._client.getSteps(id, wholeSince, WHOLE_STEPS + 1),
      this._client.getPredictions(id, predictionsSince)
    ]);
    if (store.trajectoryId === id) {
      store.addSteps(whole.steps);
      store.addPredictions(predictions);
      void this.backfill(store, MAX_BACKFILL);
    }
  }

  /**
   * Read the latest page of the notebook's earlier trajectories (before a
   * restart of its kernel, or of other kernels it had), newest first.
   */
  async loadPast(
    store: NotebookLive,
    filters: ITrajectoryFilter[]
  ): Promise<void> {
    // One walk at a time per store: the notebook's path is read when it
    // opens, its kernel's trajectories when the kernel answers.
    const previous = this._past.get(store) ?? Promise.resolve();
    const next = previous.then(() => this._loadPast(store, filters));
    this._past.set(
      store,
      next.catch(() => undefined)
    );
    return next;
  }

  private async _loadPast(
    store: NotebookLive,
    filters: ITrajectoryFilter[]
  ): Promise<void> {
    const seen = new Map<string, Trajectory>();
    for (const filter of filters) {
      for (const trajectory of await this._client.listTrajectories(filter)) {
        seen.set(trajectory.id, trajectory);
      }
    }
    const past = [...seen.values()]
      .filter(t => t.id !== store.trajectoryId && t.steps > 0)
      .sort((a, b) => b.started_at.localeCompare(a.started_at))
      .slice(0, PAST_TRAJECTORIES);
    for (const trajectory of past) {
      // Newest page first, back to PAST_STEPS steps.
      let until = trajectory.steps;
      let size = FIRST_PAGE;
      while (until > 0 && trajectory.steps - until < PAST_STEPS) {
        const held = store.historyOf(trajectory.id);
        if (held && held.first > 0 && held.first <= until) {
          until = held.first - 1;
          continue;
        }
        const since = Math.max(0, until - size);
        size = HISTORY_PAGE;
        const page = await this._client.getHistory(
          trajectory.id,
          since,
          until - since
        );
        if (page.steps.length === 0) {
          break;
        }
        store.addPastSummaries(trajectory.id, page.steps);
        until = since;
      }
    }
  }

  /**
   * Read older pages until `until` steps are held or the first step is
   * (one walk per store at a time).
   */
  async backfill(store: NotebookLive, until: number): Promise<void> {
    const id = store.trajectoryId;
    if (!id || this._walking.has(store)) {
      return;
    }
    const walk = this._walk(store, id, until);
    this._walking.set(store, walk);
    try {
      await walk;
    } finally {
      this._walking.delete(store);
    }
  }

  private async _walk(
    store: NotebookLive,
    id: string,
    until: number
  ): Promise<void> {
    while (store.trajectoryId === id) {
      const first = store.history.first;
      const held = store.history.last - first + 1;
      if (first <= 1 || held >= until) {
        break;
      }
      const since = Math.max(0, first - 1 - HISTORY_PAGE);
      const page = await this._client.getHistory(id, since, first - 1 - since);
      if (store.trajectoryId !== id || page.steps.length === 0) {
        break;
      }
      store.addSummaries(page.steps);
      // Let the page paint and the user act between pages.
      await new Promise(resolve => setTimeout(resolve, 0));
    }
  }

  /**
   * Read the history back to `step` (review going past what was read).
   */
  async loadBefore(store: NotebookLive, step: number): Promise<void> {
    const first = store.history.first;
    if (first === 0 || first <= step) {
      return;
    }
    // A walk under way is waited for (not polled for): its pages count.
    for (
      let walk = this._walking.get(store);
      walk;
      walk = this._walking.get(store)
    ) {
      await walk.catch(() => undefined);
    }
    await this.backfill(
      store,
      store.history.last - Math.max(1, step - HISTORY_PAGE) + 1
    );
  }

  /**
   * One step whole for review: kept by the store, else read (two steps and
   * their predictions: two requests).
   */
  async loadStep(
    store: NotebookLive,
    step: number,
    trajectoryId: string | null = store.trajectoryId
  ): Promise<IStepDetail> {
    const id = trajectoryId;
    if (!id) {
      return {
        trajectoryId: id,
        step,
        whole: null,
        next: null,
        predictions: []
      };
    }
    const key = `${id}:${step}`;
    const cached = this._details.get(key);
    if (cached) {
      return cached;
    }
    const current = id === store.trajectoryId;
    let whole = current ? store.getStep(step) : null;
    let next = current ? store.getStep(step + 1) : null;
    const [page, predictions] = await Promise.all([
      whole && (next || step >= store.lastStep)
        ? null
        : this._client.getSteps(id, step - 1, 2),
      this._client.getPredictions(id, step - 1, step + 1)
    ]);
    whole ??= page?.steps.find(s => s.step === step) ?? null;
    next ??= page?.steps.find(s => s.step === step + 1) ?? null;
    const detail: IStepDetail = {
      trajectoryId: id,
      step,
      whole,
      next,
      predictions
    };
    // The latest step's successor may still come: keep only settled ones.
    if (next) {
      this._details.set(key, detail);
      if (this._details.size > DETAILS_KEPT) {
        const oldest = this._details.keys().next();
        if (!oldest.done) {
          this._details.delete(oldest.value);
        }
      }
    }
    return detail;
  }

  private async _forward(
    store: NotebookLive,
    id: string,
    since: number
  ): Promise<void> {
    for (let page = 0; page < 100; page++) {
      const result = await this._client.getHistory(id, since, HISTORY_PAGE);
      if (store.trajectoryId !== id) {
        return;
      }
      store.addSummaries(result.steps);
      if (result.next_since_step === null || result.steps.length === 0) {
        return;
      }
      since = result.next_since_step;
    }
  }

  /**
   * The walk of each store reading older pages (`backfill`), while it runs.
   */
  private _walking = new WeakMap<NotebookLive, Promise<void>>();
  private _past = new WeakMap<NotebookLive, Promise<void>>();
  private _details = new Map<string, IStepDetail>();
}
