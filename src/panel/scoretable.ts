/**
 * One predictor × context: its running means; a click reviews `step`, the
 * latest it scored, when there is one.
 */
function scoreRow(
  row: IScoreRow,
  step: number | null,
  onRow: (step: number) => void,
  trans: TranslationBundle
): VirtualElement {
  const mean = row.means.mean();
  const label = comboLabel(row);
  const clickable = step !== null;
  return h.tr(
    {
      ...attrs({
        'data-step': step ?? undefined,
        class: clickable ? 'themisto-mod-clickable' : undefined,
        title: clickable
          ? trans.__(
              'Click to review step %1, the latest this row scored',
              step
            )
          : undefined
      }),
      dataset: {
        task: row.task,
        predictor: row.predictor,
        context: row.context
      },
      onclick: step !== null ? () => onRow(step) : undefined
    },
    h.th({ scope: 'row', title: label }, label),
    h.td({ className: 'themisto-Num' }, String(row.means.count)),
    SCORE_LABELS.map(({ name }) =>
      h.td({ className: 'themisto-Num' }, formatScore(mean?.[name]))
    )
  );
}

/**
 * The session scoreboard's table: running means per predictor × context and
 * task. A row shows the latest step it scored when clicked. (The scores over
 * steps are plotsection.ts, drawn by svgplot.ts; the means themselves are
 * kept by live/trajectoryscores.ts.)
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { h, type VirtualElement } from '@lumino/virtualdom';

import {
  comboLabel,
  formatScore,
  SCORE_LABELS,
  scoreTitle,
  SHORT_SCORE
} from '../live/scoreformat';
import type { IScoreRow } from '../live/types';
import { attrs } from '../dom';

/**
 * The session scoreboard: running means per predictor × context, grouped
 * by task (one column of labels keeps it readable in a narrow side bar).
 */
export function scoreboard(
  rows: IScoreRow[],
  trans: TranslationBundle,
  latestStep: (row: IScoreRow) => number | null = () => null,
  onRow: (step: number) => void = () => undefined
): VirtualElement {
  if (rows.length === 0) {
    return h.p(
      { className: 'themisto-Muted' },
      trans.__(
        'No scored prediction yet: scores appear when a predicted cell finishes.'
      )
    );
  }
  const head = h.tr(
    h.th({ scope: 'col' }, trans.__('Predictor · context')),
    h.th(
      {
        scope: 'col',
        className: 'themisto-Num themisto-Col-n',
        title: trans.__('Scored predictions')
      },
      'n'
    ),
    SCORE_LABELS.map(({ name }) =>
      h.th(
        {
          scope: 'col',
          className: 'themisto-Num themisto-Col-score',
          title: scoreTitle(name, trans)
        },
        SHORT_SCORE[name]
      )
    )
  );
  const body: VirtualElement[] = [];
  for (const task of ['output', 'next-cell'] as const) {
    const group = rows.filter(row => row.task === task);
    if (group.length === 0) {
      continue;
    }
    body.push(
      h.tr(
        { className: 'themisto-Group' },
        h.th(
          { scope: 'rowgroup', colspan: '5' },
          task === 'output' ? trans.__('Output') : trans.__('Next cell')
        )
      )
    );
    for (const row of group) {
      body.push(scoreRow(row, latestStep(row), onRow, trans));
    }
  }
  return h.table(
    { className: 'themisto-Table themisto-Scoreboard' },
    h.thead(head),
    h.tbody(body)
  );
}
