import { Signal } from '@lumino/signaling';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import type {
  ClassPage,
  KernelRecording,
  Me,
  Trajectory
} from '../api/records';
import type { ITrajectoryFilter } from '../api/model';
import { LIVE_EVENT_SCHEMA_ID, type Prediction } from '../api/records';
import type { Event } from '@jupyterlab/services';
import { ThemistoLive } from '../live/live';
import { FIRST_PAGE, HISTORY_PAGE, WHOLE_STEPS } from '../live/loader';
import type { IThemistoClient } from '../tokens';
import { prediction, predictorsInfo, step, trajectory } from './fixtures';

/**
 * The page's event bus: `send` emits a live event as jupyter_server's
 * WebSocket brings it (numbered, as its JSON text under the schema id).
 */
class FakeEvents {
  stream = new Signal<unknown, Event.Emission>(this);
  seq = 0;
  send(event: Record<string, unknown>, seq = this.seq + 1): void {
    this.seq = seq;
    this.stream.emit({
      schema_id: LIVE_EVENT_SCHEMA_ID,
      type: String(event.type),
      event: JSON.stringify({ ...event, seq })
    });
  }
  heartbeat(): void {
    this.send({ type: 'heartbeat', every: 10 });
  }
  get manager(): Event.IManager {
    return this as unknown as Event.IManager;
  }
}

/**
 * An in-memory IThemistoClient: a trajectory of `trajectory.steps` steps.
 */
class FakeClient implements IThemistoClient {
  posts: unknown[] = [];
  kernelReads: string[] = [];
  trajectory: Trajectory = trajectory();
  /** Earlier trajectories of the notebook (by kernel or path). */
  past: Trajectory[] = [];
  recording = true;
  latestReads = 0;
  recordingChanged: Signal<IThemistoClient, KernelRecording> = new Signal<
    IThemistoClient,
    KernelRecording
  >(this);

  async getKernel(kernelId: string): Promise<KernelRecording> {
    this.kernelReads.push(kernelId);
    return this._model(kernelId);
  }
  async setRecording(kernelId: string, recording: boolean) {
    this.recording = recording;
    const model = this._model(kernelId);
    this.recordingChanged.emit(model);
    return model;
  }
  async latestTrajectory(filter: ITrajectoryFilter) {
    this.latestReads++;
    return { ...this.trajectory, kernel_id: filter.kernel ?? 'k1' };
  }
  async listTrajectories() {
    return [this.trajectory, ...this.past];
  }
  async getSteps(id: string, since: number, limit = 1000) {
    const steps = [];
    for (
      let n = since + 1;
      n <= this.trajectory.steps && n <= since + limit;
      n++
    ) {
      steps.push(step(n));
    }
    return { trajectory_id: id, steps, next_since_step: null };
  }
  async getHistory(id: string, since: number, limit: number) {
    const total =
      id === this.trajectory.id
        ? this.trajectory.steps
        : (this.past.find(t => t.id === id)?.steps ?? 0);
    const steps = [];
    for (let n = since + 1; n <= total && n <= since + limit; n++) {
      steps.push({
        step: n,
        cell_id: `${id}-cell-${n}`,
        code_hash: '00000000',
        execution_time: 0.01,
        memory_bytes: 1000,
        error: null,
        predictions:
          n === 3
            ? [
                {
                  id:
                    id === this.trajectory.id
                      ? 'output-3-baseline-none'
                      : `${id}-p3`,
                  task: 'output' as const,
                  predictor: 'baseline',
                  model: 'baseline',
                  context: 'none' as const,
                  scores: { exact_match: 1, rouge_l: 1, chrf: 1 },
                  error: null,
                  abstained: false
                }
              ]
            : []
      });
    }
    const last = steps[steps.length - 1];
    return {
      trajectory_id: id,
      steps,
      next_since_step: steps.length === limit && last ? last.step : null
    };
  }
  async getPredictions() {
    return [
      prediction('output', 3, {
        scores: { exact_match: 1, rouge_l: 1, chrf: 1 }
      })
    ];
  }
  async getPrediction(): Promise<Prediction> {
    throw new Error('not used');
  }
  predictorReads = 0;
  async getPredictors() {
    this.predictorReads++;
    return predictorsInfo();
  }
  async requestPrediction(body: unknown) {
    this.posts.push(body);
    return 4;
  }
  async speculate(body: unknown) {
    this.posts.push(body);
    return {
      accepted: true,
      reason: null,
      trajectory_id: this.trajectory.id,
      target_step: 4
    };
  }
  async completeCell(body: unknown) {
    this.posts.push(body);
    return {
      completion: null,
      predictor: null,
      reason: 'not used',
      trajectory_id: this.trajectory.id,
      after_step: this.trajectory.steps
    };
  }
  async openExport(): Promise<Response> {
    throw new Error('not used');
  }
  async getMe(): Promise<Me> {
    return { user: 'u', consent: true, capture_level: 'code', read_all: false };
  }
  async setConsent(consent: boolean): Promise<Me> {
    return { user: 'u', consent, capture_level: 'code', read_all: false };
  }
  async deleteMyData() {
    return { user: 'u', deleted_trajectories: 0, deleted_journals: 0 };
  }
  async getClass(): Promise<ClassPage> {
    return {
      rows: [],
      total: 0,
      users: 0,
      opted_out: [],
      limit: 100,
      offset: 0
    };
  }

  private _model(kernelId: string): KernelRecording {
    return {
      kernel_id: kernelId,
      recording: this.recording,
      reason: null,
      trajectory_id: this.trajectory.id,
      steps: this.trajectory.steps
    };
  }
}

function panel(path: string, kernelId: string | null) {
  return {
    context: { path, pathChanged: new Signal<unknown, string>({}) },
    sessionContext: {
      session: kernelId ? { kernel: { id: kernelId } } : null,
      kernelChanged: new Signal<unknown, unknown>({})
    },
    disposed: new Signal<unknown, void>({})
  } as unknown as NotebookPanel;
}

function tracker() {
  const t = {
    currentWidget: null as NotebookPanel | null,
    currentChanged: new Signal<INotebookTracker, NotebookPanel | null>(
      {} as INotebookTracker
    ),
    widgetAdded: new Signal<INotebookTracker, NotebookPanel>(
      {} as INotebookTracker
    ),
    forEach: () => undefined
  };
  const show = (p: NotebookPanel | null) => {
    t.currentWidget = p;
    t.currentChanged.emit(p);
  };
  return { tracker: t as unknown as INotebookTracker, show };
}

const flush = () => new Promise(resolve => setTimeout(resolve, 20));

describe('ThemistoLive', () => {
  it('follows the active notebook: events by kernel, history, recording', async () => {
    const api = new FakeClient();
    const events = new FakeEvents();
    const client = api;
    const { tracker: t, show } = tracker();
    const live = new ThemistoLive({
      client,
      tracker: t,
      events: events.manager
    });
    const seen: Array<string | null> = [];
    live.currentChanged.connect((_, store) => seen.push(store?.path ?? null));
    show(panel('a.ipynb', 'k1'));
    await flush();
    const store = live.current!;
    expect(seen).toEqual(['a.ipynb']);
    expect(store.connection).toBe('connecting');
    events.heartbeat();
    expect(store.connection).toBe('open');
    expect(store.trajectoryId).toBe('t1');
    expect(store.lastStep).toBe(3);
    expect(store.scoreRows).toHaveLength(1);
    expect(store.recording).toBe(true);
    expect(live.predictors?.predictors).toEqual(['baseline']);

    await client.setRecording('k1', false);
    expect(store.recording).toBe(false);

    await live.requestPrediction('next-cell');
    expect(api.posts).toEqual([{ kernel_id: 'k1', task: 'next-cell' }]);
    expect(store.isRequested('next-cell', 4)).toBe(true);
    live.dispose();
  });

  it('applies live events and announces them', async () => {
    const api = new FakeClient();
    const events = new FakeEvents();
    api.trajectory = { ...api.trajectory, steps: 0 };
    const { tracker: t, show } = tracker();
    const live = new ThemistoLive({
      client: api,
      tracker: t,
      events: events.manager
    });
    const types: string[] = [];
    live.eventReceived.connect((_, { event }) => types.push(event.type));
    show(panel('a.ipynb', 'k1'));
    await flush();
    events.heartbeat();
    events.send({
      type: 'step',
      trajectory_id: 't1',
      kernel_id: 'k1',
      notebook_path: null,
      step: step(1)
    });
    events.send({
      type: 'step',
      trajectory_id: 't9',
      kernel_id: 'k9',
      notebook_path: null,
      step: step(2)
    });
    await flush();
    expect(types).toEqual(['step']); // heartbeats and other kernels' events are not

    expect(live.current?.getStep(1)?.code).toBe('x1 = 1');
    live.dispose();
  });

  it("reads the predictors again when the embedded model's process fails a prediction", async () => {
    const api = new FakeClient();
    const events = new FakeEvents();
    const failed = (type: string) => ({
      type: 'prediction',
      trajectory_id: 't1',
      kernel_id: 'k1',
      notebook_path: 'a.ipynb',
      prediction: prediction('output', 3, {
        error: { type, message: 'signal 11 (SIGSEGV): the process died' }
      })
    });
    const { tracker: t, show } = tracker();
    const live = new ThemistoLive({
      client: api,
      tracker: t,
      events: events.manager
    });
    await flush();
    const before = api.predictorReads;
    show(panel('a.ipynb', 'k1'));
    await flush();
    events.send(failed('ModelProcessDied'));
    events.send(failed('ModelProcessDied'));
    await new Promise(resolve => setTimeout(resolve, 700));
    expect(api.predictorReads).toBe(before + 1); // both events, one read
    live.dispose();
  });

  it('reads the kernel state once per active kernel, then follows the stream', async () => {
    const api = new FakeClient();
    const events = new FakeEvents();
    api.trajectory = { ...api.trajectory, steps: 2 };
    const { tracker: t, show } = tracker();
    const live = new ThemistoLive({
      client: api,
      tracker: t,
      events: events.manager
    });
    const a = panel('a.ipynb', 'k1');
    show(a);
    await flush();
    events.heartbeat();
    await flush();
    events.send({
      type: 'step',
      trajectory_id: 't1',
      kernel_id: 'k1',
      notebook_path: null,
      step: step(3)
    });
    events.send({
      type: 'recording',
      trajectory_id: 't1',
      kernel_id: 'k1',
      notebook_path: 'a.ipynb',
      recording: false,
      reason: null
    });
    await flush();
    const store = live.current!;
    expect(api.kernelReads).toEqual(['k1']);
    expect(store.stepCount).toBe(3);
    expect(store.recording).toBe(false);

    // Another notebook, then back: one read each time the kernel changes.
    show(panel('b.ipynb', 'k2'));
    await flush();
    show(a);
    await flush();
    expect(api.kernelReads).toEqual(['k1', 'k2', 'k1']);
    // A switch made here: the reply is the state, nothing is read.
    await api.setRecording('k1', true);
    expect(store.recording).toBe(true);
    expect(api.kernelReads).toEqual(['k1', 'k2', 'k1']);
    // A new kernel for the notebook is read at once.
    (a.sessionContext as unknown as { session: unknown }).session = {
      kernel: { id: 'k3' }
    };
    (a.sessionContext.kernelChanged as Signal<unknown, unknown>).emit({});
    await flush();
    expect(api.kernelReads).toEqual(['k1', 'k2', 'k1', 'k3']);
    events.send({
      type: 'recording',
      trajectory_id: 't3',
      kernel_id: 'k3',
      notebook_path: 'a.ipynb',
      recording: false,
      reason: null
    });
    expect(store.recording).toBe(false); // the new kernel's events reach it
    live.dispose();
  });

  it('keeps a switch heard of while the kernel state was being read', async () => {
    const api = new FakeClient();
    const events = new FakeEvents();
    let answer: (model: KernelRecording) => void = () => undefined;
    jest
      .spyOn(api, 'getKernel')
      .mockImplementationOnce(() => new Promise(resolve => (answer = resolve)));
    const { tracker: t, show } = tracker();
    const live = new ThemistoLive({
      client: api,
      tracker: t,
      events: events.manager
    });
    show(panel('a.ipynb', 'k1'));
    await api.setRecording('k1', false);
    // The read was sent before the switch, and answers after it.
    answer({
      kernel_id: 'k1',
      recording: true,
      reason: null,
      trajectory_id: 't1',
      steps: 7
    });
    await flush();
    expect(live.current?.recording).toBe(false);
    expect(live.current?.stepCount).toBe(7);
    live.dispose();
  });

  it('keeps the reason a kernel state could not be read, and reads it again on demand', async () => {
    const api = new FakeClient();
    const events = new FakeEvents();
    const failing = jest
      .spyOn(api, 'getKernel')
      .mockRejectedValueOnce(new Error('Unknown kernel k1'));
    const { tracker: t, show } = tracker();
    const live = new ThemistoLive({
      client: api,
      tracker: t,
      events: events.manager
    });
    show(panel('a.ipynb', 'k1'));
    await flush();
    expect(live.current?.recordingError).toBe('Unknown kernel k1');
    expect(live.current?.recording).toBeNull();
    await live.refreshKernel();
    expect(failing).toHaveBeenCalledTimes(2);
    expect(live.current?.recordingError).toBeNull();
    expect(live.current?.recording).toBe(true);
    live.dispose();
  });

  it("gives every open notebook its kernel's events, however many are open", async () => {
    const api = new FakeClient();
    const events = new FakeEvents();
    const { tracker: t, show } = tracker();
    const live = new ThemistoLive({
      client: api,
      tracker: t,
      events: events.manager
    });
    const panels = [0, 1, 2, 3, 4, 5, 6].map(i =>
      panel(`n${i}.ipynb`, `k${i}`)
    );
    for (const p of panels) {
      (t.widgetAdded as Signal<INotebookTracker, NotebookPanel>).emit(p);
    }
    show(panels[6]);
    await flush();
    events.heartbeat();
    await flush();
    for (const [i, p] of panels.entries()) {
      events.send({
        type: 'recording',
        trajectory_id: 't1',
        kernel_id: `k${i}`,
        notebook_path: p.context.path,
        recording: i % 2 === 0,
        reason: null
      });
    }
    for (const [i] of panels.entries()) {
      const store = live.store(`n${i}.ipynb`)!;
      expect(store.connection).toBe('open');
      expect(store.recording).toBe(i % 2 === 0); // its own kernel's, no other's
    }
    live.dispose();
  });

  it('reads what every notebook missed when the events skip a number', async () => {
    const api = new FakeClient();
    const events = new FakeEvents();
    const { tracker: t, show } = tracker();
    const live = new ThemistoLive({
      client: api,
      tracker: t,
      events: events.manager
    });
    const [a, b] = [panel('a.ipynb', 'k1'), panel('b.ipynb', 'k2')];
    (t.widgetAdded as Signal<INotebookTracker, NotebookPanel>).emit(a);
    show(b);
    await flush();
    const opened = api.latestReads; // each notebook read its kernel's latest
    expect(opened).toBe(2);
    events.heartbeat(); // the first event seen: what came before it is unknown
    await flush();
    expect(api.latestReads).toBe(opened + 2);
    events.heartbeat();
    events.heartbeat();
    await flush();
    expect(api.latestReads).toBe(opened + 2); // nothing missed
    events.send({ type: 'heartbeat', every: 10 }, events.seq + 3); // two missed
    await flush();
    expect(api.latestReads).toBe(opened + 4);
    events.send({ type: 'heartbeat', every: 10 }, 1); // the server restarted
    await flush();
    expect(api.latestReads).toBe(opened + 6);
    live.dispose();
  });

  it('says the connection is down when the heartbeats stop', async () => {
    jest.useFakeTimers();
    try {
      const api = new FakeClient();
      const events = new FakeEvents();
      const { tracker: t, show } = tracker();
      const live = new ThemistoLive({
        client: api,
        tracker: t,
        events: events.manager
      });
      show(panel('a.ipynb', 'k1'));
      events.heartbeat();
      expect(live.current?.connection).toBe('open');
      await jest.advanceTimersByTimeAsync(20000);
      expect(live.current?.connection).toBe('open');
      await jest.advanceTimersByTimeAsync(6000); // 2.5 heartbeats of 10 s without one
      expect(live.current?.connection).toBe('retrying');
      events.heartbeat();
      expect(live.current?.connection).toBe('open');
      live.dispose();
    } finally {
      jest.useRealTimers();
    }
  });

  it('waits for a kernel before following events, and refuses requests without one', async () => {
    const api = new FakeClient();
    const events = new FakeEvents();
    const { tracker: t, show } = tracker();
    const live = new ThemistoLive({
      client: api,
      tracker: t,
      events: events.manager
    });
    show(panel('a.ipynb', null));
    await flush();
    events.heartbeat();
    expect(live.current?.connection).toBe('closed');
    expect(api.latestReads).toBe(0);
    await expect(live.requestPrediction('next-cell')).rejects.toThrow(
      'no running kernel'
    );
    show(null);
    expect(live.current).toBeNull();
    live.dispose();
  });

  it('reads a long history newest first: one page in brief, a few steps whole, then older pages', async () => {
    const api = new FakeClient();
    const events = new FakeEvents();
    api.trajectory = { ...api.trajectory, steps: 2000 };
    const { tracker: t, show } = tracker();
    const live = new ThemistoLive({
      client: api,
      tracker: t,
      events: events.manager
    });
    const getSteps = jest.spyOn(api, 'getSteps');
    const getHistory = jest.spyOn(api, 'getHistory');
    show(panel('a.ipynb', 'k1'));
    await flush();
    expect(getHistory.mock.calls[0]).toEqual([
      't1',
      2000 - FIRST_PAGE,
      HISTORY_PAGE
    ]);
    expect(getSteps).toHaveBeenCalledTimes(1);
    expect(getSteps).toHaveBeenCalledWith(
      't1',
      2000 - WHOLE_STEPS,
      WHOLE_STEPS + 1
    );
    const store = live.current!;
    expect(store.lastStep).toBe(2000);
    expect(store.latestStep?.step).toBe(2000);
    expect(store.getStep(1000)).toBeNull();
    // Every step is known in brief, read back page by page.
    await flush();
    expect(store.history.first).toBe(1);
    expect(store.history.get(3)?.predictions).toHaveLength(1);
    expect(store.scoreRows[0].means.count).toBe(1);
    expect(store.cellStep('t1-cell-1999')?.summary.step).toBe(1999);
    live.dispose();
  });

  it('shows cells not run since the kernel restarted from the earlier trajectory', async () => {
    const api = new FakeClient();
    const events = new FakeEvents();
    api.trajectory = { ...api.trajectory, id: 't2', steps: 1 };
    api.past = [
      trajectory({ id: 't1', steps: 4, started_at: '2026-01-01T00:00:00Z' })
    ];
    const { tracker: t, show } = tracker();
    const live = new ThemistoLive({
      client: api,
      tracker: t,
      events: events.manager
    });
    show(panel('a.ipynb', 'k1'));
    await flush();
    const store = live.current!;
    expect(store.trajectoryId).toBe('t2');
    expect(store.cellStep('t2-cell-1')).toMatchObject({
      trajectoryId: 't2',
      current: true
    });
    expect(store.cellStep('t1-cell-3')).toMatchObject({
      trajectoryId: 't1',
      current: false,
      summary: { step: 3 }
    });
    expect(store.historyOf('t1')?.last).toBe(4);
    live.dispose();
  });

  it("reads a notebook's history by path before its kernel answers, then follows it", async () => {
    const api = new FakeClient();
    const events = new FakeEvents();
    api.trajectory = { ...api.trajectory, steps: 4 };
    const listed = jest.spyOn(api, 'listTrajectories');
    const { tracker: t, show } = tracker();
    const live = new ThemistoLive({
      client: api,
      tracker: t,
      events: events.manager
    });
    const a = panel('a.ipynb', null);
    show(a);
    await flush();
    const store = live.current!;
    expect(listed).toHaveBeenCalledWith({ notebook: 'a.ipynb' });
    expect(api.latestReads).toBe(0);
    expect(store.cellStep('t1-cell-3')).toMatchObject({
      trajectoryId: 't1',
      current: false
    });
    // The kernel answers: its trajectory is the one read, now followed.
    (a.sessionContext as unknown as { session: unknown }).session = {
      kernel: { id: 'k1' }
    };
    (a.sessionContext.kernelChanged as Signal<unknown, unknown>).emit({});
    await flush();
    expect(store.trajectoryId).toBe('t1');
    expect(store.cellStep('t1-cell-3')).toMatchObject({ current: true });
    expect(store.lastStep).toBe(4);
    expect(store.scoreRows[0].means.count).toBe(1);
    live.dispose();
  });
});
