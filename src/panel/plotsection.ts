/**
 * The "scores over steps" section of the panel: task and score pickers, the
 * plot (drawn by svgplot.ts) and its legend.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type { ScoreName } from '../api/model';
import type { PredictionTask } from '../api/records';
import { SCORE_LABELS, scoreTitle } from '../live/scoreformat';
import { h } from './dom';
import { type IPlotSeries, scorePlot } from './svgplot';

/**
 * What the plot shows and how to change it.
 */
export interface IPlotChoice {
  task: PredictionTask;
  score: ScoreName;
  /**
   * The step under review, marked on the plot.
   */
  shown: number | null;
  onTask(task: PredictionTask): void;
  onScore(score: ScoreName): void;
  /**
   * A point was clicked: review its step.
   */
  onStep(step: number): void;
}

/**
 * The section's content for the series with points.
 */
export function plotView(
  series: IPlotSeries[],
  choice: IPlotChoice,
  trans: TranslationBundle
): Element[] {
  const controls = h(
    'div',
    { class: 'themisto-Plot-controls' },
    select(
      trans.__('Task'),
      [
        ['output', trans.__('Output')],
        ['next-cell', trans.__('Next cell')]
      ],
      choice.task,
      value => choice.onTask(value === 'next-cell' ? 'next-cell' : 'output')
    ),
    select(
      trans.__('Score'),
      SCORE_LABELS.map(s => [s.name, s.short]),
      choice.score,
      value => {
        const picked = SCORE_LABELS.find(s => s.name === value);
        if (picked) {
          choice.onScore(picked.name);
        }
      }
    )
  );
  const shown = series.filter(s => s.points.length > 0);
  if (shown.length === 0) {
    return [
      controls,
      h('p', { class: 'themisto-Muted' }, trans.__('No scores to plot yet.'))
    ];
  }
  const legend = h('ul', { class: 'themisto-Legend' });
  shown.forEach((s, i) =>
    legend.append(
      h(
        'li',
        {},
        h('span', { class: `themisto-Swatch themisto-Series-${i % 6}` }),
        s.label
      )
    )
  );
  const long = scoreTitle(choice.score, trans);
  return [
    controls,
    scorePlot(
      shown,
      choice.score,
      trans.__('%1 of %2 predictions over steps', long, choice.task),
      {
        shown: choice.shown,
        onStep: choice.onStep,
        stepLabel: step => trans.__('step %1', step)
      }
    ),
    legend
  ];
}

function select(
  label: string,
  options: Array<[string, string]>,
  value: string,
  onChange: (value: string) => void
): HTMLElement {
  const node = h('select', { class: 'jp-mod-styled', 'aria-label': label });
  for (const [optionValue, text] of options) {
    const option = h('option', { value: optionValue }, text);
    option.selected = optionValue === value;
    node.append(option);
  }
  node.addEventListener('change', () => onChange(node.value));
  return h('label', { class: 'themisto-Select' }, `${label} `, node);
}
