import type { NotebookPanel } from '@jupyterlab/notebook';

import type { KernelRecording } from '../api/records';
import { NotebookLive } from '../live/store';
import {
  notebookRecording,
  rememberRecording,
  toggleNotebookRecording
} from '../notebook/recording';
import type { IThemistoClient } from '../tokens';

class FakeModel {
  metadata: Record<string, unknown> = {};
  getMetadata(key: string): unknown {
    return this.metadata[key];
  }
  setMetadata(key: string, value: unknown): void {
    this.metadata[key] = value;
  }
  deleteMetadata(key: string): void {
    delete this.metadata[key];
  }
}

describe('notebook recording metadata', () => {
  it('reads a stored choice and ignores anything else', () => {
    const model = new FakeModel();
    expect(notebookRecording(model)).toBeNull();
    model.metadata.themisto = { recording: false };
    expect(notebookRecording(model)).toBe(false);
    model.metadata.themisto = { recording: 'no' };
    expect(notebookRecording(model)).toBeNull();
    model.metadata.themisto = 'off';
    expect(notebookRecording(model)).toBeNull();
    expect(notebookRecording(null)).toBeNull();
  });

  it('remembers a choice without losing other keys', () => {
    const model = new FakeModel();
    model.metadata.themisto = { other: 1 };
    rememberRecording(model, false);
    expect(model.metadata.themisto).toEqual({ other: 1, recording: false });
    rememberRecording(model, true);
    expect(model.metadata.themisto).toEqual({ other: 1 });
    expect(notebookRecording(model)).toBeNull();
  });

  it('writes nothing into the notebook when recording is turned on', () => {
    const model = new FakeModel();
    rememberRecording(model, true);
    expect(model.metadata).toEqual({});
    rememberRecording(model, false);
    expect(model.metadata).toEqual({ themisto: { recording: false } });
    rememberRecording(model, true);
    expect(model.metadata).toEqual({});
  });
});

describe('toggleNotebookRecording', () => {
  const model = (recording: boolean): KernelRecording => ({
    kernel_id: 'k1',
    recording,
    reason: null,
    trajectory_id: 't1',
    steps: 1
  });

  function setup(known: boolean | null) {
    const calls: string[] = [];
    const client = {
      getKernel: async () => {
        calls.push('get');
        return model(true);
      },
      setRecording: async (kernelId: string, recording: boolean) => {
        calls.push(`put ${recording}`);
        return model(recording);
      }
    } as unknown as IThemistoClient;
    const store = new NotebookLive('a.ipynb');
    store.kernelId = 'k1';
    store.recording = known;
    const notebookModel = new FakeModel();
    const panel = {
      context: { path: 'a.ipynb', model: notebookModel },
      sessionContext: { session: { kernel: { id: 'k1' } } }
    } as unknown as NotebookPanel;
    const live = { store: () => store };
    return { calls, client, panel, live, notebookModel };
  }

  it('switches from the state the store knows and remembers the choice', async () => {
    const { calls, client, panel, live, notebookModel } = setup(true);
    await expect(toggleNotebookRecording(panel, client, live)).resolves.toBe(
      false
    );
    expect(calls).toEqual(['put false']);
    expect(notebookRecording(notebookModel)).toBe(false);
  });

  it('switches off a kernel that should record and cannot', async () => {
    const { calls, client, panel, live, notebookModel } = setup(false);
    live.store().recordingReason = 'the store cannot be written';
    await toggleNotebookRecording(panel, client, live);
    expect(calls).toEqual(['put false']);
    expect(notebookRecording(notebookModel)).toBe(false);
  });

  it('reads the state when the store does not know it', async () => {
    const { calls, client, panel, live } = setup(null);
    await toggleNotebookRecording(panel, client, live);
    expect(calls).toEqual(['get', 'put false']);
  });
});
