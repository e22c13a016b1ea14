/**
 * Which of a student's sessions of one notebook the class view replays. A
 * notebook run in several kernels (a restart, another day) has a trajectory
 * each; the teacher picks one, the latest first.
 */
import { InputDialog } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';

import type { NotebookRow, Trajectory } from '../api/records';

/**
 * The sessions worth replaying (one cell run at least), latest first, each
 * with a label that tells it apart: its number in order of start (1 the
 * first), when it started, how many cells it ran.
 */
export function sessionChoices(
  found: readonly Trajectory[],
  trans: TranslationBundle,
  locale?: string
): { trajectory: Trajectory; label: string }[] {
  const ordered = found
    .filter(t => t.steps > 0)
    .sort((a, b) => a.started_at.localeCompare(b.started_at));
  return ordered
    .map((trajectory, i) => ({
      trajectory,
      label: trans.__(
        'Session %1 of %2: %3, %4 cells',
        i + 1,
        ordered.length,
        new Date(trajectory.started_at).toLocaleString(locale),
        trajectory.steps
      )
    }))
    .reverse();
}

/**
 * The session to replay: the only one without asking, else the one the user
 * picks (the latest preselected); null when cancelled.
 */
export async function chooseSession(
  found: readonly Trajectory[],
  row: NotebookRow,
  trans: TranslationBundle
): Promise<Trajectory | null> {
  const choices = sessionChoices(found, trans);
  if (choices.length === 0) {
    throw new Error(trans.__('nothing recorded'));
  }
  if (choices.length === 1) {
    return choices[0].trajectory;
  }
  const labels = choices.map(c => c.label);
  const result = await InputDialog.getItem({
    title: trans.__(
      "Replay which of %1's sessions of %2?",
      row.user,
      row.notebook_path ?? trans.__('kernel without a notebook')
    ),
    items: labels,
    current: 0,
    okLabel: trans.__('Replay')
  });
  if (!result.button.accept || result.value === null) {
    return null;
  }
  return choices[labels.indexOf(result.value)]?.trajectory ?? null;
}
