import { notebookRecording, rememberRecording } from '../notebookswitch';

class FakeModel {
  metadata: Record<string, unknown> = {};
  getMetadata(key: string): unknown {
    return this.metadata[key];
  }
  setMetadata(key: string, value: unknown): void {
    this.metadata[key] = value;
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
    expect(notebookRecording(model)).toBe(true);
  });
});
