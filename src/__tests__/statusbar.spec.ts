import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { ThemistoApiError } from '../errors';
import { IKernelRecording } from '../model';
import { STATUS_ITEM_CLASS, ThemistoStatusItem } from '../statusbar';
import { IThemistoClient } from '../tokens';

/**
 * An in-memory IThemistoClient.
 */
class FakeClient implements IThemistoClient {
  kernels = new Map<string, IKernelRecording>();
  gets: string[] = [];
  puts: Array<[string, boolean]> = [];
  recordingChanged: Signal<IThemistoClient, IKernelRecording> = new Signal<
    IThemistoClient,
    IKernelRecording
  >(this);

  async getKernel(kernelId: string): Promise<IKernelRecording> {
    this.gets.push(kernelId);
    const model = this.kernels.get(kernelId);
    if (!model) {
      throw new ThemistoApiError(404, `Unknown kernel ${kernelId}`);
    }
    return { ...model };
  }

  async setRecording(
    kernelId: string,
    recording: boolean
  ): Promise<IKernelRecording> {
    this.puts.push([kernelId, recording]);
    const model = await this.getKernel(kernelId);
    const next = { ...model, recording };
    this.kernels.set(kernelId, next);
    this.recordingChanged.emit({ ...next });
    return { ...next };
  }
}

/**
 * The parts of a NotebookPanel that the status item uses.
 */
class FakePanel {
  constructor(kernelId: string | null) {
    this.sessionContext.session = kernelId
      ? { kernel: { id: kernelId } }
      : null;
  }
  content = {};
  sessionContext = {
    session: null as { kernel: { id: string } | null } | null,
    kernelChanged: new Signal<unknown, unknown>(this),
    statusChanged: new Signal<unknown, string>(this)
  };
}

class FakeTracker {
  currentWidget: FakePanel | null = null;
  currentChanged = new Signal<FakeTracker, FakePanel | null>(this);

  activate(panel: FakePanel | null): void {
    this.currentWidget = panel;
    this.currentChanged.emit(panel);
  }
}

const executed = NotebookActions.executed as Signal<
  unknown,
  { notebook: object; cell: object; success: boolean }
>;

/**
 * Let pending promise callbacks run.
 */
async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
  }
}

describe('ThemistoStatusItem', () => {
  let client: FakeClient;
  let tracker: FakeTracker;
  let item: ThemistoStatusItem;

  beforeEach(() => {
    jest.useFakeTimers();
    client = new FakeClient();
    client.kernels.set('k1', {
      kernel_id: 'k1',
      recording: true,
      trajectory_id: 't1',
      steps: 0
    });
    tracker = new FakeTracker();
    item = new ThemistoStatusItem({
      client,
      tracker: tracker as unknown as INotebookTracker,
      refreshDelay: 400
    });
    Widget.attach(item, document.body);
  });

  afterEach(() => {
    item.dispose();
    jest.useRealTimers();
  });

  it('shows no kernel without a notebook', () => {
    expect(item.hasClass(STATUS_ITEM_CLASS)).toBe(true);
    expect(item.node.textContent).toBe('Themisto: no kernel');
    expect(item.node.dataset.recording).toBe('false');
    expect(item.node.dataset.steps).toBe('0');
  });

  it('loads the state of the active notebook kernel', async () => {
    tracker.activate(new FakePanel('k1'));
    await flush();
    expect(client.gets).toEqual(['k1']);
    expect(item.node.textContent).toBe('Themisto: recording · 0 steps');
    expect(item.node.dataset.recording).toBe('true');
  });

  it('refreshes now and again after a cell execution', async () => {
    const panel = new FakePanel('k1');
    tracker.activate(panel);
    await flush();
    client.gets = [];

    client.kernels.get('k1')!.steps = 1;
    executed.emit({ notebook: panel.content, cell: {}, success: true });
    await flush();
    expect(client.gets).toEqual(['k1']);
    expect(item.node.dataset.steps).toBe('1');

    client.kernels.get('k1')!.steps = 2;
    jest.advanceTimersByTime(400);
    await flush();
    expect(client.gets).toEqual(['k1', 'k1']);
    expect(item.node.dataset.steps).toBe('2');
    expect(item.node.textContent).toBe('Themisto: recording · 2 steps');
  });

  it('ignores executions in other notebooks', async () => {
    tracker.activate(new FakePanel('k1'));
    await flush();
    client.gets = [];
    executed.emit({ notebook: {}, cell: {}, success: true });
    jest.advanceTimersByTime(1000);
    await flush();
    expect(client.gets).toEqual([]);
  });

  it('toggles recording on click', async () => {
    tracker.activate(new FakePanel('k1'));
    await flush();
    item.node.click();
    await flush();
    expect(client.puts).toEqual([['k1', false]]);
    expect(item.node.dataset.recording).toBe('false');
    expect(item.node.textContent).toBe('Themisto: off');
  });

  it('follows recording switched elsewhere, for its own kernel only', async () => {
    client.kernels.set('k2', { ...client.kernels.get('k1')!, kernel_id: 'k2' });
    tracker.activate(new FakePanel('k1'));
    await flush();
    await client.setRecording('k2', false);
    expect(item.node.dataset.recording).toBe('true');
    await client.setRecording('k1', false);
    expect(item.node.dataset.recording).toBe('false');
  });

  it('refreshes when the kernel changes', async () => {
    const panel = new FakePanel(null);
    tracker.activate(panel);
    await flush();
    expect(item.node.textContent).toBe('Themisto: no kernel');
    panel.sessionContext.session = { kernel: { id: 'k1' } };
    panel.sessionContext.kernelChanged.emit({});
    await flush();
    expect(item.node.dataset.recording).toBe('true');
  });

  it('refreshes once a restarted kernel is idle', async () => {
    const panel = new FakePanel('k1');
    tracker.activate(panel);
    await flush();
    client.gets = [];
    panel.sessionContext.statusChanged.emit('busy');
    panel.sessionContext.statusChanged.emit('idle');
    expect(client.gets).toEqual([]);
    panel.sessionContext.statusChanged.emit('restarting');
    panel.sessionContext.statusChanged.emit('idle');
    await flush();
    expect(client.gets).toEqual(['k1']);
  });

  it('shows server errors', async () => {
    tracker.activate(new FakePanel('unknown'));
    await flush();
    expect(item.node.dataset.state).toBe('error');
    expect(item.node.textContent).toBe('Themisto: unavailable');
    expect(item.node.title).toBe('Themisto: Unknown kernel unknown');
  });
});
