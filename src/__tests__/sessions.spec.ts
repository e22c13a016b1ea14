import { nullTranslator } from '@jupyterlab/translation';

import type { Trajectory } from '../api/records';
import { sessionChoices } from '../class/sessions';

const trans = nullTranslator.load('themisto');
const session = (id: string, started_at: string, steps: number) =>
  ({ id, kernel_id: `k-${id}`, started_at, steps }) as Trajectory;

describe("a student's sessions of one notebook", () => {
  it('are offered latest first, numbered in order of start, empty ones left out', () => {
    const choices = sessionChoices(
      [
        session('b', '2026-03-02T09:00:00+00:00', 3),
        session('empty', '2026-03-03T09:00:00+00:00', 0),
        session('a', '2026-03-01T09:00:00+00:00', 2)
      ],
      trans,
      'en-GB'
    );
    expect(choices.map(c => c.trajectory.id)).toEqual(['b', 'a']);
    expect(choices[0].label).toMatch(/^Session 2 of 2: .*2026.*, 3 cells$/);
    expect(choices[1].label).toMatch(/^Session 1 of 2: .*, 2 cells$/);
    expect(new Set(choices.map(c => c.label)).size).toBe(2);
  });

  it('are none when nothing was recorded', () => {
    expect(
      sessionChoices([session('e', '2026-03-01T09:00:00+00:00', 0)], trans)
    ).toEqual([]);
  });
});
