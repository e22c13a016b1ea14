/**
 * A notebook's own recording choice: kept in its metadata, applied to every
 * kernel it uses, switched from the status bar, the panel and the menu.
 */
import type { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';

import type { KernelRecording } from '../api/records';
import type { IThemistoClient, IThemistoLive } from '../tokens';

/**
 * The notebook metadata key holding Themisto's per-notebook settings.
 */
export const METADATA_KEY = 'themisto';

/**
 * The recording choice stored in a notebook's metadata, if any.
 */
export function notebookRecording(
  model: Pick<INotebookModel, 'getMetadata'> | null
): boolean | null {
  const value: unknown = model?.getMetadata(METADATA_KEY);
  if (typeof value === 'object' && value !== null && 'recording' in value) {
    const recording = (value as { recording: unknown }).recording;
    return typeof recording === 'boolean' ? recording : null;
  }
  return null;
}

/**
 * Remember a recording choice in the notebook's metadata, so it holds for
 * every kernel the notebook is opened with later. Only the non-default
 * `"themisto": {"recording": false}` is written: switching recording on
 * removes it, and leaves a notebook that never turned it off untouched.
 */
export function rememberRecording(
  model: Pick<
    INotebookModel,
    'getMetadata' | 'setMetadata' | 'deleteMetadata'
  > | null,
  recording: boolean
): void {
  if (!model) {
    return;
  }
  const current: unknown = model.getMetadata(METADATA_KEY);
  const base: Record<string, unknown> =
    typeof current === 'object' && current !== null
      ? { ...(current as Record<string, unknown>) }
      : {};
  if (recording) {
    if (!('recording' in base)) {
      return;
    }
    delete base.recording;
  } else {
    base.recording = false;
  }
  if (Object.keys(base).length === 0) {
    model.deleteMetadata(METADATA_KEY);
  } else {
    model.setMetadata(METADATA_KEY, base);
  }
}

/**
 * Applies a notebook's stored recording choice to each kernel it connects to
 * (the server records every kernel by default).
 */
export function applyNotebookRecording(
  panel: NotebookPanel,
  client: IThemistoClient
): void {
  const apply = (): void => {
    const kernelId = panel.sessionContext.session?.kernel?.id;
    const wanted = notebookRecording(panel.context.model);
    if (kernelId && wanted !== null) {
      client.setRecording(kernelId, wanted).catch(reason => {
        console.warn('themisto: could not apply the notebook setting', reason);
      });
    }
  };
  panel.sessionContext.kernelChanged.connect(apply);
  void panel.context.ready.then(apply);
}

/**
 * Switch recording of a notebook's kernel and remember the choice in the
 * notebook. The current state is the live store's when it knows it (else it
 * is read). Returns the new state.
 */
export async function toggleNotebookRecording(
  panel: Pick<NotebookPanel, 'context' | 'sessionContext'>,
  client: IThemistoClient,
  live: Pick<IThemistoLive, 'store'>
): Promise<boolean> {
  const kernelId = panel.sessionContext.session?.kernel?.id;
  if (!kernelId) {
    throw new Error('The notebook has no running kernel.');
  }
  const store = live.store(panel.context.path);
  // The switch is on while the kernel records, and also while recording fails
  // (not recorded, with a reason): a click then switches it off.
  const known =
    store?.kernelId === kernelId && store.recording !== null
      ? store.recording || store.recordingReason !== null
      : null;
  const on = known ?? switchedOn(await client.getKernel(kernelId));
  const next = await client.setRecording(kernelId, !on);
  rememberRecording(panel.context.model, switchedOn(next));
  return next.recording;
}

/**
 * Whether a kernel's recording switch is on: it records, or it should and
 * cannot (the server says why).
 */
function switchedOn(model: KernelRecording): boolean {
  return model.recording || model.reason !== null;
}
